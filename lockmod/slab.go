package lockmod

import "fmt"

// slabChunk is how many requests one chunk of the slab holds (~88 KB).
const slabChunk = 1024

// slab is where every request lives: in chunks that never move, so a
// *request stays valid for as long as the request is remembered, and a
// 32-bit ref (its place in the slab) can stand for it in the tables and the
// event heap — 4 bytes instead of an 8-byte pointer, nothing there for the
// collector to scan, and no allocation per request. A request that is
// forgotten is zeroed and its place reused; chunks are kept for the next
// requests, as a Go map keeps its buckets.
//
// Nothing may keep a *request past its forget: Ticket drops its own at
// finish, and the order repoints or drops an entry whose request goes (see
// Manager.forget).
type slab struct {
	chunks []*[slabChunk]request
	free   uint32 // ref of the first free request, 0 if none; each free one's at holds the next
	used   int
}

// get is the request at ref. Ref 0 is never handed out: tables use 0 for
// an empty slot.
func (s *slab) get(ref uint32) *request { return &s.chunks[ref/slabChunk][ref%slabChunk] }

// alloc returns a zeroed request, with its ref set and no event scheduled.
func (s *slab) alloc() *request {
	if s.free == 0 {
		s.grow()
	}
	r := s.get(s.free)
	s.free = uint32(r.at)
	r.at = 0
	s.used++
	return r
}

// release zeroes r and makes its place free.
func (s *slab) release(r *request) {
	*r = request{ref: r.ref, index: -1, at: instant(s.free)}
	s.free = r.ref
	s.used--
}

func (s *slab) grow() {
	if len(s.chunks) >= (1<<32)/slabChunk {
		panic(fmt.Sprintf("lockmod: more than %d requests", uint32(1<<32-1)))
	}
	base := uint32(len(s.chunks)) * slabChunk
	c := new([slabChunk]request)
	s.chunks = append(s.chunks, c)
	for i := slabChunk - 1; i >= 0; i-- { // the lowest ref first
		ref := base + uint32(i)
		if ref == 0 {
			continue
		}
		c[i] = request{ref: ref, index: -1, at: instant(s.free)}
		s.free = ref
	}
}
