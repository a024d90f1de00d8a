package dump

import (
	"encoding/binary"
	"math"
)

// Encode writes v as a payload in RDB's plain encodings (a string as its
// bytes, a list, set or hash as a count and strings, a sorted set as
// RDB_TYPE_ZSET_2) and the footer of RDB version 8, which Redis 4.0 and
// every Redis since reads. A Redis reading it keeps the small ones in its
// compact encodings, as it would its own.
func Encode(v Value) []byte {
	size := 16 + len(v.Str)
	for _, e := range v.Elems {
		size += 9 + len(e)
	}
	size += 8 * len(v.Scores)
	b := make([]byte, 0, size)
	switch v.Kind {
	case String:
		b = append(b, typeString)
		b = appendStr(b, v.Str)
	case List, Set:
		t := byte(typeList)
		if v.Kind == Set {
			t = typeSet
		}
		b = append(b, t)
		b = appendLength(b, uint64(len(v.Elems)))
		for _, e := range v.Elems {
			b = appendStr(b, e)
		}
	case Hash:
		b = append(b, typeHash)
		b = appendLength(b, uint64(len(v.Elems)/2))
		for _, e := range v.Elems {
			b = appendStr(b, e)
		}
	case ZSet:
		b = append(b, typeZSet2)
		b = appendLength(b, uint64(len(v.Elems)))
		for i, m := range v.Elems {
			b = appendStr(b, m)
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v.Scores[i]))
		}
	}
	b = binary.LittleEndian.AppendUint16(b, encodeVersion)
	return binary.LittleEndian.AppendUint64(b, checksum(b))
}

// appendLength writes n as RDB writes a length: in 6 bits, 14 bits, or
// after a marker byte in 32 or 64 bits, big endian.
func appendLength(b []byte, n uint64) []byte {
	switch {
	case n < 1<<6:
		return append(b, byte(n))
	case n < 1<<14:
		return append(b, byte(n>>8)|len14<<6, byte(n))
	case n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(b, len32), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, len64), n)
}

func appendStr(b, s []byte) []byte {
	return append(appendLength(b, uint64(len(s))), s...)
}
