package dump

import (
	"encoding/binary"
	"strconv"
)

// The compact encodings Redis keeps small collections in, inside a
// payload's string: ziplists (to Redis 6.2), listpacks (since 7.0) and
// intsets. Every length and offset is checked against the bytes there are.

// ziplist appends a ziplist's entries to elems (Redis's ziplist.c): a
// header of its size, the offset of its last entry and its count (65535:
// not counted), then entries, each the length of the one before it, an
// encoding and the data, then 0xff.
func ziplist(b []byte, elems [][]byte, bud *budget) ([][]byte, error) {
	const header = 10
	if len(b) < header+1 || binary.LittleEndian.Uint32(b) != uint32(len(b)) || b[len(b)-1] != 0xff {
		return nil, errBad
	}
	tail, want := binary.LittleEndian.Uint32(b[4:]), binary.LittleEndian.Uint16(b[8:])
	end := len(b) - 1
	p, prev, last, n := header, 0, header, 0
	for p < end {
		start := p
		var prevlen int
		if b[p] < 254 {
			prevlen = int(b[p])
			p++
		} else if b[p] == 254 && p+5 <= end {
			prevlen = int(binary.LittleEndian.Uint32(b[p+1:]))
			p += 5
		} else {
			return nil, errBad
		}
		if prevlen != prev || p >= end {
			return nil, errBad
		}
		enc := b[p]
		var size int  // the string's bytes
		var num int64 // or the integer's value
		isNum := false
		switch enc >> 6 {
		case 0:
			size, p = int(enc&0x3f), p+1
		case 1:
			if p+2 > end {
				return nil, errBad
			}
			size, p = int(enc&0x3f)<<8|int(b[p+1]), p+2
		case 2:
			if p+5 > end {
				return nil, errBad
			}
			size, p = int(binary.BigEndian.Uint32(b[p+1:])), p+5
		default:
			isNum = true
			var width int
			switch {
			case enc == 0xc0:
				width = 2
			case enc == 0xd0:
				width = 4
			case enc == 0xe0:
				width = 8
			case enc == 0xf0:
				width = 3
			case enc == 0xfe:
				width = 1
			case enc >= 0xf1 && enc <= 0xfd:
				num = int64(enc&0x0f) - 1
			default:
				return nil, errBad
			}
			p++
			if p+width > end {
				return nil, errBad
			}
			if width > 0 {
				num = littleSigned(b[p : p+width])
			}
			p += width
		}
		var err error
		if elems, p, err = appendEntry(elems, b[:end], p, size, isNum, num, bud); err != nil {
			return nil, err
		}
		prev, last, n = p-start, start, n+1
	}
	if p != end || (n > 0 && int(tail) != last) || (n == 0 && tail != header) || (want != 0xffff && int(want) != n) {
		return nil, errBad
	}
	return elems, nil
}

// appendEntry appends a ziplist's or listpack's entry whose data starts
// at p: the integer num as text, or the size bytes at p, which must lie
// within b. It returns where the entry's data ends.
func appendEntry(elems [][]byte, b []byte, p, size int, isNum bool, num int64, bud *budget) ([][]byte, int, error) {
	if isNum {
		if err := bud.spend(elemCost + 20); err != nil {
			return nil, p, err
		}
		return append(elems, strconv.AppendInt(nil, num, 10)), p, nil
	}
	if size < 0 || size > len(b)-p {
		return nil, p, errBad
	}
	if err := bud.spend(elemCost); err != nil {
		return nil, p, err
	}
	return append(elems, b[p:p+size]), p + size, nil
}

// littleSigned is q, 1 to 8 bytes, as a little-endian two's complement
// integer.
func littleSigned(q []byte) int64 {
	var u uint64
	for i := len(q) - 1; i >= 0; i-- {
		u = u<<8 | uint64(q[i])
	}
	shift := 64 - 8*uint(len(q))
	return int64(u<<shift) >> shift
}

// listpack appends a listpack's entries to elems (Redis's listpack.c): a
// header of its size and count (65535: not counted), then entries, each an
// encoding, the data and the entry's length written backwards, then 0xff.
func listpack(b []byte, elems [][]byte, bud *budget) ([][]byte, error) {
	const header = 6
	if len(b) < header+1 || binary.LittleEndian.Uint32(b) != uint32(len(b)) || b[len(b)-1] != 0xff {
		return nil, errBad
	}
	want := binary.LittleEndian.Uint16(b[4:])
	end := len(b) - 1
	p, n := header, 0
	for p < end {
		start, enc := p, b[p]
		var size, width int // a string's bytes, or an integer's
		var num int64
		isNum := true
		switch {
		case enc&0x80 == 0:
			num, p = int64(enc&0x7f), p+1
		case enc&0xc0 == 0x80:
			isNum, size, p = false, int(enc&0x3f), p+1
		case enc&0xe0 == 0xc0:
			if p+2 > end {
				return nil, errBad
			}
			num = int64(int(enc&0x1f)<<8 | int(b[p+1]))
			if num >= 1<<12 {
				num -= 1 << 13
			}
			p += 2
		case enc&0xf0 == 0xe0:
			if p+2 > end {
				return nil, errBad
			}
			isNum, size, p = false, int(enc&0x0f)<<8|int(b[p+1]), p+2
		case enc == 0xf0:
			if p+5 > end {
				return nil, errBad
			}
			isNum, size, p = false, int(binary.LittleEndian.Uint32(b[p+1:])), p+5
		case enc >= 0xf1 && enc <= 0xf4:
			width = [...]int{2, 3, 4, 8}[enc-0xf1]
			p++
			if p+width > end {
				return nil, errBad
			}
			num = littleSigned(b[p : p+width])
			p += width
		default:
			return nil, errBad
		}
		var err error
		if elems, p, err = appendEntry(elems, b[:end], p, size, isNum, num, bud); err != nil {
			return nil, err
		}
		var back [5]byte
		bl := backlen(back[:], uint64(p-start))
		if p+bl > end || string(b[p:p+bl]) != string(back[:bl]) {
			return nil, errBad
		}
		p += bl
		n++
	}
	if p != end || (want != 0xffff && int(want) != n) {
		return nil, errBad
	}
	return elems, nil
}

// backlen writes l as a listpack entry's trailing length (lpEncodeBacklen)
// into buf and returns how many bytes it took.
func backlen(buf []byte, l uint64) int {
	var n int
	switch {
	case l <= 127:
		n = 1
	case l < 16383:
		n = 2
	case l < 2097151:
		n = 3
	case l < 268435455:
		n = 4
	default:
		n = 5
	}
	for i := range n {
		buf[i] = byte(l>>(7*uint(n-1-i))) & 127
		if i > 0 {
			buf[i] |= 128
		}
	}
	return n
}

// intset is an intset's members as text (Redis's intset.c): the width of
// its integers (2, 4 or 8 bytes), their count, and the integers, little
// endian, strictly ascending.
func intset(b []byte, bud *budget) ([][]byte, error) {
	if len(b) < 8 {
		return nil, errBad
	}
	width, n := uint64(binary.LittleEndian.Uint32(b)), uint64(binary.LittleEndian.Uint32(b[4:]))
	if (width != 2 && width != 4 && width != 8) || uint64(len(b)-8) != n*width {
		return nil, errBad
	}
	elems := make([][]byte, 0, n)
	for i := uint64(0); i < n; i++ {
		v := littleSigned(b[8+i*width : 8+(i+1)*width])
		if i > 0 && v <= littleSigned(b[8+(i-1)*width:8+i*width]) {
			return nil, errBad
		}
		if err := bud.spend(elemCost + 20); err != nil {
			return nil, err
		}
		elems = append(elems, strconv.AppendInt(nil, v, 10))
	}
	return elems, nil
}
