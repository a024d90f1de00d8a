package lockmod

import (
	"hash/maphash"
	"slices"
	"strings"
)

// order keeps the name of every key that is held or has a line, sorted by a
// position that stays put while the key is listed: a seeded 32-bit hash of
// its lock, then a seeded 32-bit hash of its key. So one lock's keys are one
// run of positions, and LOCK.LIST walks that run like SCAN walks kv: the
// cursor is the next key hash, and a key listed for the whole walk is met
// once, whatever is added or removed around it.
//
// Why this shape: a walk step must cost O(count + log n), and a live lease
// may cost ~300 bytes in all. An entry is 16 bytes, the position and a
// request of the key (its holder, else one in its line: only its name is
// read), kept in sorted blocks of orderBlockCap entries, about 80% full, so
// ~20 bytes a key. Nothing is kept per lock, so a store that uses a lock per
// key pays no more. An update costs a binary search and a move within one
// block; a block split or merge moves the slice of block pointers, one
// pointer per ~90 keys.
//
// The entry's request is set again at each grant, so that it is the holder
// while the key is held, and request.listed marks it. Requests live in the
// slab, whose places are reused: when the entry's request is forgotten while
// the key is still listed (an ended lease, or a place that lingered, in front
// of a line), Manager.forget hands the entry to the head of the key's line.
//
// Two names at one position (by chance: the seed is random) are ordered by
// name, and a walk step returns such a group whole, so the cursor never
// falls inside one. Two locks whose hashes collide share a run; the walk
// skips the other lock's keys.
type order struct {
	seed   maphash.Seed
	hash   func(string) uint32 // tests swap it to force collisions
	blocks []*orderBlock
	// lasts[i] is the position of blocks[i]'s last entry: seek's search
	// over the blocks reads this one flat array, not a block (a cache miss
	// each) at every step.
	lasts []uint64
	n     int
	// spare is the last block emptied, kept so that a store that grants
	// and releases one key at a time does not allocate a block each time.
	spare *orderBlock
}

// orderBlockCap is the most entries a block holds. A full block passes
// entries to a neighbour with room, else splits in halves; a block under a
// quarter full merges with a neighbour when both fit in half a block.
const orderBlockCap = 128

type orderEntry struct {
	pos uint64 // lock hash << 32 | key hash
	r   *request
}

type orderBlock struct {
	n int
	e [orderBlockCap]orderEntry
}

func newOrder() *order {
	o := &order{seed: maphash.MakeSeed()}
	o.hash = func(s string) uint32 { return uint32(maphash.String(o.seed, s)) }
	return o
}

// splitName undoes keyName, without copying.
func splitName(name string) (lock, key string) {
	var n, shift uint
	i := 0
	for i < len(name) {
		c := name[i]
		i++
		n |= uint(c&0x7f) << shift
		if c < 0x80 {
			break
		}
		shift += 7
	}
	return name[i : i+int(n)], name[i+int(n):]
}

func (o *order) lockPos(lock string) uint64 { return uint64(o.hash(lock)) << 32 }

func (o *order) posOf(name string) uint64 {
	lock, key := splitName(name)
	return o.lockPos(lock) | uint64(o.hash(key))
}

func compareEntry(a orderEntry, pos uint64, name string) int {
	switch {
	case a.pos < pos:
		return -1
	case a.pos > pos:
		return 1
	}
	return strings.Compare(a.r.name(), name)
}

// seek finds the first entry at or after (pos, name): block i, entry j.
// i == len(o.blocks) when there is none.
func (o *order) seek(pos uint64, name string) (i, j int) {
	// The first block whose last entry is at or after (pos, name); only a
	// block whose last position is pos itself is read for its name.
	lo, hi := 0, len(o.lasts)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if last := o.lasts[mid]; last < pos || last == pos && compareEntry(o.blocks[mid].e[o.blocks[mid].n-1], pos, name) < 0 {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if i = lo; i == len(o.blocks) {
		return i, 0
	}
	b := o.blocks[i]
	j, _ = slices.BinarySearchFunc(b.e[:b.n], 0, func(e orderEntry, _ int) int {
		if compareEntry(e, pos, name) < 0 {
			return -1
		}
		return 1
	})
	return i, j
}

// add lists r's key with r as its request; if the key is listed already,
// r becomes its request.
func (o *order) add(r *request) {
	name := r.name()
	pos := o.posOf(name)
	i, j := o.seek(pos, name)
	if i < len(o.blocks) && compareEntry(o.blocks[i].e[j], pos, name) == 0 {
		e := &o.blocks[i].e[j]
		e.r.listed = false
		e.r, r.listed = r, true
		return
	}
	if len(o.blocks) == 0 {
		o.blocks = append(o.blocks, o.newBlock())
		o.lasts = append(o.lasts, 0)
	}
	if i == len(o.blocks) { // after the last entry: append to the last block
		i--
		j = o.blocks[i].n
	}
	if o.blocks[i].n == orderBlockCap {
		i, j = o.makeRoom(i, j)
	}
	b := o.blocks[i]
	copy(b.e[j+1:b.n+1], b.e[j:b.n])
	b.e[j] = orderEntry{pos: pos, r: r}
	r.listed = true
	b.n++
	o.n++
	o.noteLast(i)
}

// noteLast files block i's last position in lasts.
func (o *order) noteLast(i int) {
	b := o.blocks[i]
	o.lasts[i] = b.e[b.n-1].pos
}

// makeRoom makes room in full block i for an entry at j, and returns where
// that entry goes now. It moves entries to a neighbour that has room
// (evening the two out), and only if neither has splits block i in halves:
// blocks end up ~80% full, not ~70% as with splits alone.
func (o *order) makeRoom(i, j int) (int, int) {
	b := o.blocks[i]
	if i+1 < len(o.blocks) && o.blocks[i+1].n < orderBlockCap-orderBlockCap/8 {
		nb := o.blocks[i+1]
		k := (b.n - nb.n + 1) / 2 // move b's last k entries to the front of nb
		copy(nb.e[k:nb.n+k], nb.e[:nb.n])
		copy(nb.e[:k], b.e[b.n-k:b.n])
		clear(b.e[b.n-k : b.n])
		b.n, nb.n = b.n-k, nb.n+k
		o.noteLast(i) // nb's last entry stays
		if j > b.n {
			return i + 1, j - b.n
		}
		return i, j
	}
	if i > 0 && o.blocks[i-1].n < orderBlockCap-orderBlockCap/8 {
		pb := o.blocks[i-1]
		k := (b.n - pb.n + 1) / 2 // move b's first k entries to the end of pb
		copy(pb.e[pb.n:pb.n+k], b.e[:k])
		copy(b.e[:b.n-k], b.e[k:b.n])
		clear(b.e[b.n-k : b.n])
		b.n, pb.n = b.n-k, pb.n+k
		o.noteLast(i - 1) // b's last entry stays
		if j < k {
			return i - 1, pb.n - k + j
		}
		return i, j - k
	}
	half := orderBlockCap / 2
	nb := o.newBlock()
	nb.n = orderBlockCap - half
	copy(nb.e[:], b.e[half:])
	clear(b.e[half:])
	b.n = half
	o.blocks = slices.Insert(o.blocks, i+1, nb)
	o.lasts = slices.Insert(o.lasts, i, b.e[half-1].pos) // nb's last is b's old one
	if j > half {
		return i + 1, j - half
	}
	return i, j
}

// remove unlists name, if it is listed.
func (o *order) remove(name string) {
	pos := o.posOf(name)
	i, j := o.seek(pos, name)
	if i == len(o.blocks) {
		return
	}
	b := o.blocks[i]
	if compareEntry(b.e[j], pos, name) != 0 {
		return
	}
	b.e[j].r.listed = false
	copy(b.e[j:b.n-1], b.e[j+1:b.n])
	b.n--
	b.e[b.n] = orderEntry{}
	o.n--
	if b.n == 0 {
		o.blocks = slices.Delete(o.blocks, i, i+1)
		o.lasts = slices.Delete(o.lasts, i, i+1)
		o.spare = b
		return
	}
	o.noteLast(i)
	if b.n < orderBlockCap/4 {
		// Merge with a neighbour when both fit in half a block, so blocks
		// stay at least a quarter full on average and a merged block has
		// room to grow before it splits again.
		if i+1 < len(o.blocks) && b.n+o.blocks[i+1].n <= orderBlockCap/2 {
			o.merge(i)
		} else if i > 0 && b.n+o.blocks[i-1].n <= orderBlockCap/2 {
			o.merge(i - 1)
		}
	}
}

// merge moves block i+1's entries to the end of block i.
func (o *order) merge(i int) {
	b, nb := o.blocks[i], o.blocks[i+1]
	copy(b.e[b.n:], nb.e[:nb.n])
	b.n += nb.n
	clear(nb.e[:nb.n])
	nb.n = 0
	o.blocks = slices.Delete(o.blocks, i+1, i+2)
	o.lasts = slices.Delete(o.lasts, i, i+1) // b's last is nb's old one
	o.spare = nb
}

// newBlock returns an empty block, the spare one if there is one.
func (o *order) newBlock() *orderBlock {
	if b := o.spare; b != nil {
		o.spare = nil
		return b
	}
	return &orderBlock{}
}

func (o *order) clear() {
	clear(o.blocks)
	o.blocks = o.blocks[:0]
	o.lasts = o.lasts[:0]
	o.n = 0
}

// walk calls f with each name of lock listed at a key hash of cursor or
// more, in order, until it has looked at count entries and the next one is
// at a new position. It returns that position's key hash, the cursor to go
// on from, or 0 when lock has no more keys.
func (o *order) walk(lock string, cursor uint64, count int, f func(name string)) uint64 {
	if cursor > 1<<32-1 {
		return 0
	}
	base := o.lockPos(lock)
	i, j := o.seek(base|cursor, "")
	seen, last := 0, uint64(0)
	for ; i < len(o.blocks); i, j = i+1, 0 {
		b := o.blocks[i]
		for ; j < b.n; j++ {
			e := b.e[j]
			if e.pos>>32 != base>>32 {
				return 0
			}
			if seen >= count && e.pos != last {
				return e.pos & (1<<32 - 1) // > last: never 0
			}
			seen, last = seen+1, e.pos
			if l, _ := splitName(e.r.name()); l == lock {
				f(e.r.name())
			}
		}
	}
	return 0
}
