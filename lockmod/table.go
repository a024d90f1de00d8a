package lockmod

// table finds requests by a 32-bit hash: an open-addressing hash table whose
// slots are 8 bytes, hash<<32 | ref (see slab), 0 when empty. A hit on the
// hash is confirmed by the caller against the request itself (its name, its
// reqid, its lease id), so two strings that share a hash — by chance: the
// seed is random, so clients cannot aim for it — just sit side by side.
//
// Why not a Go map: a slot of map[uint64]*request is 16 bytes and the map
// keeps ~1.5 slots an entry, where the budget of a live lease, in three
// tables and everything else, is ~300 bytes at a million leases. Here a
// table is ~10–13 bytes an entry, and holds no pointers.
//
// Linear probing, at most 4/5 full, deletion by backward shift (no
// tombstones). The table is cut into tableShards by the hash's top bits, each
// growing by half on its own, so that growing moves a few thousand entries,
// never all of them: no long pause under the Manager's lock.
type table struct {
	shards [tableShards]tableShard
	n      int
}

const (
	tableShardBits = 8
	tableShards    = 1 << tableShardBits
)

type tableShard struct {
	slots []uint64
	n     int
}

func (t *table) shard(h uint32) *tableShard { return &t.shards[h>>(32-tableShardBits)] }

// home is where h's probe starts: the hash bits below the shard's, scaled
// to the shard's size (so the size need not be a power of two).
func (s *tableShard) home(h uint32) int {
	return int(uint64(h<<tableShardBits) * uint64(len(s.slots)) >> 32)
}

func (s *tableShard) next(i int) int {
	if i++; i == len(s.slots) {
		return 0
	}
	return i
}

// probe walks the refs stored under one hash.
type probe struct {
	s *tableShard
	i int
	h uint32
}

// find starts a walk over the refs stored under h.
func (t *table) find(h uint32) probe {
	s := t.shard(h)
	p := probe{s: s, h: h, i: -1}
	if len(s.slots) > 0 {
		p.i = s.home(h)
	}
	return p
}

// next returns the next ref stored under the probe's hash, 0 when there
// are no more.
func (p *probe) next() uint32 {
	if p.i < 0 {
		return 0
	}
	for {
		e := p.s.slots[p.i]
		if e == 0 {
			p.i = -1
			return 0
		}
		p.i = p.s.next(p.i)
		if uint32(e>>32) == p.h {
			return uint32(e)
		}
	}
}

// put adds ref under h. The caller has checked it is not there yet.
func (t *table) put(h, ref uint32) {
	s := t.shard(h)
	if (s.n+1)*5 > len(s.slots)*4 {
		s.grow()
	}
	s.insert(uint64(h)<<32 | uint64(ref))
	s.n++
	t.n++
}

func (s *tableShard) insert(e uint64) {
	i := s.home(uint32(e >> 32))
	for s.slots[i] != 0 {
		i = s.next(i)
	}
	s.slots[i] = e
}

// grow makes the shard half as large again (at least 8 slots) and moves its
// entries over.
func (s *tableShard) grow() {
	old := s.slots
	s.slots = make([]uint64, max(8, len(old)+len(old)/2))
	for _, e := range old {
		if e != 0 {
			s.insert(e)
		}
	}
}

// del removes ref from under h and reports whether it was there.
func (t *table) del(h, ref uint32) bool {
	s := t.shard(h)
	if len(s.slots) == 0 {
		return false
	}
	e := uint64(h)<<32 | uint64(ref)
	i := s.home(h)
	for s.slots[i] != e {
		if s.slots[i] == 0 {
			return false
		}
		i = s.next(i)
	}
	// Backward shift: each later entry of the run moves into the hole
	// unless its home lies cyclically in (hole, its slot].
	for j := s.next(i); s.slots[j] != 0; j = s.next(j) {
		k := s.home(uint32(s.slots[j] >> 32))
		if i <= j && (k <= i || k > j) || i > j && k <= i && k > j {
			s.slots[i] = s.slots[j]
			i = j
		}
	}
	s.slots[i] = 0
	s.n--
	t.n--
	return true
}

func (t *table) len() int { return t.n }

func (t *table) clear() { *t = table{} }

// each calls f with every ref in the table.
func (t *table) each(f func(h, ref uint32)) {
	for i := range t.shards {
		for _, e := range t.shards[i].slots {
			if e != 0 {
				f(uint32(e>>32), uint32(e))
			}
		}
	}
}
