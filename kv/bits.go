package kv

import "math/bits"

// Bit operations: SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP. A string is a
// bit array whose bit 0 is the most significant bit of its first byte, as
// in Redis; bits past the end read as 0.

// SetBit is SETBIT: it sets the bit at offset to on, growing the string
// with zero bytes as needed, and returns the bit's old value. The caller
// has checked offset against MaxValueLen (Redis's "bit offset is not an
// integer or out of range"); a byte past MaxValueLen is ErrTooLarge here
// too, so that no caller can make the store allocate more. The TTL and
// fence stay.
func (s *Store) SetBit(key []byte, offset uint64, on bool) (old int, err error) {
	byteAt := offset >> 3
	if byteAt >= uint64(s.MaxValueLen()) {
		return 0, ErrTooLarge
	}
	mask := byte(0x80) >> (offset & 7)
	err = s.update(key, true, func(c *change, it *item) error {
		if err := it.cur.is(TypeString); err != nil {
			return err
		}
		r := it.cur.rec
		if !it.cur.live {
			r = record{}
		}
		if byteAt >= uint64(len(r.value)) {
			grown := make([]byte, byteAt+1)
			copy(grown, r.value)
			r.value = grown
		}
		if r.value[byteAt]&mask != 0 {
			old = 1
		}
		if on {
			r.value[byteAt] |= mask
		} else {
			r.value[byteAt] &^= mask
		}
		if it.cur.live && it.cur.rec.raw && old == b2i(on) && len(r.value) == len(it.cur.rec.value) {
			return nil // nothing changed: nothing to write
		}
		r.raw = true // even when the bit was already so, as Redis unshares the string
		c.put(it, r)
		return nil
	})
	if err != nil {
		return 0, wrap("setbit", err)
	}
	return old, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// GetBit is GETBIT: the bit at offset, 0 past the end or for a missing key.
func (s *Store) GetBit(key []byte, offset uint64) (int, error) {
	var bit int
	_, err := s.view(key, TypeString, func(rec record) {
		if i := offset >> 3; i < uint64(len(rec.value)) && rec.value[i]&(0x80>>(offset&7)) != 0 {
			bit = 1
		}
	})
	if err != nil {
		return 0, wrap("getbit", err)
	}
	return bit, nil
}

// BitRange is the optional [start [end [BYTE|BIT]]] of BITCOUNT and BITPOS:
// indexes in bytes (or bits with Bit), negative ones counting from the end.
type BitRange struct {
	Start, End       int64
	HasStart, HasEnd bool
	Bit              bool
}

// span turns r into an inclusive range of bits of a string of n bytes,
// with Redis's rules: negative indexes count from the end, then both are
// clamped to the string. ok is false for an empty range.
func (r BitRange) span(n int64) (first, last int64, ok bool) {
	if !r.HasStart {
		return 0, n*8 - 1, n > 0
	}
	total := n
	if r.Bit {
		total = n * 8
	}
	start, end := r.Start, total-1
	if r.HasEnd {
		end = r.End
	}
	if start < 0 {
		start += total
	}
	if end < 0 {
		end += total
	}
	start, end = max(start, 0), max(end, 0)
	end = min(end, total-1)
	if start > end {
		return 0, 0, false
	}
	if r.Bit {
		return start, end, true
	}
	return start * 8, end*8 + 7, true
}

// BitCount is BITCOUNT: the number of set bits of key's string within r;
// 0 for a missing key. As in Redis 7.0, two negative indexes with start
// after end count nothing, before the units are considered.
func (s *Store) BitCount(key []byte, r BitRange) (int64, error) {
	var n int64
	_, err := s.view(key, TypeString, func(rec record) {
		if r.HasEnd && r.Start < 0 && r.End < 0 && r.Start > r.End {
			return
		}
		first, last, ok := r.span(int64(len(rec.value)))
		if ok {
			n = countBits(rec.value, first, last)
		}
	})
	if err != nil {
		return 0, wrap("bitcount", err)
	}
	return n, nil
}

// countBits counts the set bits from bit first to bit last, inclusive.
func countBits(v []byte, first, last int64) int64 {
	fb, lb := first>>3, last>>3
	if fb == lb {
		return int64(bits.OnesCount8(v[fb] & edgeMask(first, last)))
	}
	n := bits.OnesCount8(v[fb]&edgeMask(first, fb*8+7)) + bits.OnesCount8(v[lb]&edgeMask(lb*8, last))
	mid := v[fb+1 : lb]
	for len(mid) >= 8 {
		n += bits.OnesCount64(uint64(mid[0]) | uint64(mid[1])<<8 | uint64(mid[2])<<16 | uint64(mid[3])<<24 |
			uint64(mid[4])<<32 | uint64(mid[5])<<40 | uint64(mid[6])<<48 | uint64(mid[7])<<56)
		mid = mid[8:]
	}
	for _, b := range mid {
		n += bits.OnesCount8(b)
	}
	return int64(n)
}

// edgeMask selects bits first..last of the one byte they both lie in.
func edgeMask(first, last int64) byte {
	return byte(0xff>>(first&7)) & byte(0xff<<(7-last&7))
}

// BitPos is BITPOS: the position of the first bit equal to bit within r.
// Not found: -1 when looking for a 1 or within an explicit end; when
// looking for a 0 with no end given, the string counts as padded with
// zeros on the right, so the first bit past its end. A missing key is an
// empty string that is all zeros: 0 for a 0, -1 for a 1.
func (s *Store) BitPos(key []byte, bit int, r BitRange) (int64, error) {
	pos := int64(-1)
	found, err := s.view(key, TypeString, func(rec record) {
		first, last, ok := r.span(int64(len(rec.value)))
		if !ok {
			return
		}
		if p := findBit(rec.value, bit, first, last); p >= 0 {
			pos = p
		} else if bit == 0 && !r.HasEnd {
			pos = last + 1
		}
	})
	if err != nil {
		return 0, wrap("bitpos", err)
	}
	if !found && bit == 0 {
		return 0, nil
	}
	return pos, nil
}

// findBit is the position of the first bit equal to bit from bit first to
// bit last, inclusive, or -1.
func findBit(v []byte, bit int, first, last int64) int64 {
	var flip byte // looking for a 0 is looking for a 1 in the complement
	if bit == 0 {
		flip = 0xff
	}
	for i := first >> 3; i <= last>>3; i++ {
		lo, hi := max(first, i*8), min(last, i*8+7)
		if b := (v[i] ^ flip) & edgeMask(lo, hi); b != 0 {
			return i*8 + int64(bits.LeadingZeros8(b))
		}
	}
	return -1
}

// BitOp names BITOP's operation.
type BitOp int

const (
	BitAnd BitOp = iota
	BitOr
	BitXor
	BitNot // of a single source
)

// BitOp is BITOP: it stores op over the sources' strings in dst and
// returns its length, that of the longest source; shorter sources and
// missing keys count as zero bytes. When every source is missing or empty,
// dst is deleted. dst takes a new value as SET would: no TTL, its fence
// kept. The sources and dst are read and written at one instant.
func (s *Store) BitOp(op BitOp, dst []byte, srcs [][]byte) (int64, error) {
	keys := append([][]byte{dst}, srcs...)
	var n int64
	err := s.updateMany(keys, true, func(c *change, items []item, idx []int) error {
		var longest int
		for _, j := range idx[1:] {
			if err := items[j].cur.is(TypeString); err != nil {
				return err // a source of another type; dst, whatever it holds, is overwritten
			}
			if items[j].cur.live {
				longest = max(longest, len(items[j].cur.rec.value))
			}
		}
		if int64(longest) > s.MaxValueLen() {
			return ErrTooLarge
		}
		out := make([]byte, longest)
		for k, j := range idx[1:] {
			var v []byte
			if items[j].cur.live {
				v = items[j].cur.rec.value
			}
			switch {
			case op == BitNot:
				for i := range out {
					out[i] = ^v[i]
				}
			case k == 0:
				copy(out, v)
			default:
				combine(op, out, v)
			}
		}
		to := &items[idx[0]]
		n = int64(len(out))
		if n == 0 {
			if to.cur.live {
				c.del(to)
			}
			return nil
		}
		c.put(to, record{value: out, fence: to.cur.rec.fence, raw: true})
		return nil
	})
	if err != nil {
		return 0, wrap("bitop", err)
	}
	return n, nil
}

// combine applies op to out and v byte by byte, v counting as zeros past
// its end.
func combine(op BitOp, out, v []byte) {
	switch op {
	case BitAnd:
		for i := range out {
			if i < len(v) {
				out[i] &= v[i]
			} else {
				out[i] = 0
			}
		}
	case BitOr:
		for i := range min(len(out), len(v)) {
			out[i] |= v[i]
		}
	case BitXor:
		for i := range min(len(out), len(v)) {
			out[i] ^= v[i]
		}
	}
}
