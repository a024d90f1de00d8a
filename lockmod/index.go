package lockmod

import "hash/maphash"

// index finds requests by a string — a reqid, or a key's name — through a
// map keyed by a seeded 64-bit hash of it. A slot of map[uint64]*request is
// 16 bytes where one of map[string]*request is 24; at a million leases that
// is ~20 bytes a lease for each index (the budget is ~300 bytes a lease).
// A hit is confirmed against the string kept in the request. Two strings that
// share a hash (by chance only: the seed is random, so clients cannot aim for
// it) put the later one in spill, a plain map that is almost always empty.
type index struct {
	byName bool // keyed by request.name; else by request.reqid
	seed   maphash.Seed
	hash   func(string) uint64 // tests swap it to force collisions
	byHash map[uint64]*request
	spill  map[string]*request // each one's hash is in byHash too
}

func newIndex(byName bool) *index {
	x := &index{
		byName: byName,
		seed:   maphash.MakeSeed(),
		byHash: make(map[uint64]*request),
		spill:  make(map[string]*request),
	}
	x.hash = func(s string) uint64 { return maphash.String(x.seed, s) }
	return x
}

func (x *index) keyOf(r *request) string {
	if x.byName {
		return r.name
	}
	return r.reqid
}

func (x *index) get(s string) *request {
	if r := x.byHash[x.hash(s)]; r != nil {
		if x.keyOf(r) == s {
			return r
		}
		return x.spill[s]
	}
	return nil
}

// put adds r; nothing may be indexed under its string yet.
func (x *index) put(r *request) {
	s := x.keyOf(r)
	h := x.hash(s)
	if x.byHash[h] == nil {
		x.byHash[h] = r
		return
	}
	x.spill[s] = r
}

// del removes r if it is indexed.
func (x *index) del(r *request) {
	s := x.keyOf(r)
	h := x.hash(s)
	if x.byHash[h] != r {
		if x.spill[s] == r {
			delete(x.spill, s)
		}
		return
	}
	delete(x.byHash, h)
	for t, o := range x.spill {
		if x.hash(t) == h {
			x.byHash[h] = o
			delete(x.spill, t)
			return
		}
	}
}

func (x *index) len() int { return len(x.byHash) + len(x.spill) }

func (x *index) clear() {
	clear(x.byHash)
	clear(x.spill)
}

// each calls f for every indexed request.
func (x *index) each(f func(*request)) {
	for _, r := range x.byHash {
		f(r)
	}
	for _, r := range x.spill {
		f(r)
	}
}
