// Package dump reads and writes the serialized value of Redis's DUMP and
// RESTORE: one value in RDB's object encoding, then the RDB version it was
// written in (two bytes, little endian) and a CRC-64 (Jones) of everything
// before it. resp's DUMP and RESTORE use it, so that a key moves between
// tenure and Redis both ways: MIGRATE or RESTORE from a Redis into tenure,
// and tenure's DUMP into a Redis's RESTORE.
//
// Decode reads what Redis 2.6 to 7.4 writes for the types tenure stores
// (strings, lists, sets, sorted sets, hashes) in every encoding they have
// had: ziplists, listpacks, intsets, quicklists, integer and
// LZF-compressed strings. It checks everything it reads, as Redis's
// sanitize-dump-payload yes does, since a payload is a client's bytes.
// Encode writes the plain encodings of RDB version 8, which every Redis
// since 4.0 reads.
//
// It is not an RDB file reader (no header, databases or aux fields), and
// it knows no streams or module values: Decode refuses them.
package dump

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc64"
	"math"
	"strconv"
)

// Kind is what a Value holds.
type Kind uint8

// The kinds, one for each type tenure stores.
const (
	String Kind = iota
	List
	Set
	ZSet
	Hash
)

// Value is one key's value, without its name or TTL (which RESTORE takes
// apart from the payload).
type Value struct {
	Kind Kind
	// Str is a String's bytes.
	Str []byte
	// Elems are a List's elements in order, a Set's or a ZSet's members,
	// or a Hash's fields and values, alternating (field, value, …).
	Elems [][]byte
	// Scores are a ZSet's, Scores[i] the score of Elems[i].
	Scores []float64
}

var (
	// ErrVersionOrChecksum is a payload whose footer is missing, names an
	// RDB version newer than MaxVersion, or whose CRC does not match: the
	// text is Redis's.
	ErrVersionOrChecksum = errors.New("DUMP payload version or checksum are wrong")
	// ErrBadFormat is a payload whose footer is right but whose value is
	// not one Decode can read: malformed, empty, or of a type tenure does
	// not store (then the error wrapping it says which). The text is
	// Redis's.
	ErrBadFormat = errors.New("Bad data format")
)

// MaxVersion is the newest RDB version Decode takes: Redis 7.4's.
const MaxVersion = 12

// encodeVersion is the RDB version Encode writes in the footer: the oldest
// that has every encoding it uses (RDB_TYPE_ZSET_2 came with 8).
const encodeVersion = 8

// RDB's object types (Redis's rdb.h).
const (
	typeString        = 0
	typeList          = 1
	typeSet           = 2
	typeZSet          = 3
	typeHash          = 4
	typeZSet2         = 5
	typeModule        = 6
	typeModule2       = 7
	typeHashZipmap    = 9
	typeListZiplist   = 10
	typeSetIntset     = 11
	typeZSetZiplist   = 12
	typeHashZiplist   = 13
	typeListQuicklist = 14
	typeStream        = 15
	typeHashListpack  = 16
	typeZSetListpack  = 17
	typeListQuick2    = 18
	typeStream2       = 19
	typeSetListpack   = 20
)

// jones is the CRC-64 Redis puts in a payload's footer (its crc64.c):
// polynomial 0xad93d23594c935a9, reflected, here in the reversed form that
// hash/crc64 takes.
var jones = crc64.MakeTable(0x95ac9329ac4bc9b5)

// checksum is Redis's crc64(0, p): hash/crc64 inverts the CRC before and
// after, and Redis's starts at 0 and is not inverted.
func checksum(p []byte) uint64 { return ^crc64.Update(^uint64(0), jones, p) }

// Decode reads a payload. The Value may share memory with p.
func Decode(p []byte) (Value, error) {
	if len(p) < 10 {
		return Value{}, ErrVersionOrChecksum
	}
	body, footer := p[:len(p)-10], p[len(p)-10:]
	if binary.LittleEndian.Uint16(footer) > MaxVersion {
		return Value{}, ErrVersionOrChecksum
	}
	if checksum(p[:len(p)-8]) != binary.LittleEndian.Uint64(footer[2:]) {
		return Value{}, ErrVersionOrChecksum
	}
	r := &reader{p: body, bud: budget{left: budgetBase + budgetPerByte*int64(len(p))}}
	v, err := r.value()
	if err == nil && len(r.p) != 0 {
		err = errBad
	}
	if err != nil {
		return Value{}, err
	}
	return v, nil
}

// errBad is a malformed payload.
var errBad = ErrBadFormat

// What a payload may cost to decode. A payload is a client's bytes, and
// small ones can stand for a great deal: an LZF string claims its length,
// and a compressed listpack of one-byte entries holds some 60 elements a
// byte, each a slice in a Value. So Decode spends from a budget of
// budgetBase and budgetPerByte for each byte of the payload: an element
// costs elemCost and the bytes it adds, an LZF string its length, before
// any of it is made. A plain payload is far within it (an empty list
// element is one byte of it, and 24 of a Value); a Redis value past it
// is refused, with ErrTooLarge.
const (
	budgetBase    = 64 << 20
	budgetPerByte = 32
	elemCost      = 24 // a slice header
)

// ErrTooLarge wraps ErrBadFormat for a payload past Decode's budget.
var ErrTooLarge = fmt.Errorf("%w: it decodes to more than 64 MiB and %d times its size", ErrBadFormat, budgetPerByte)

// budget is what is left of a Decode's.
type budget struct{ left int64 }

func (b *budget) spend(n int) error {
	b.left -= int64(n)
	if b.left < 0 {
		return ErrTooLarge
	}
	return nil
}

// reader is a payload's bytes not yet read, and what decoding them may
// still cost.
type reader struct {
	p   []byte
	bud budget
}

func (r *reader) byte() (byte, error) {
	if len(r.p) == 0 {
		return 0, errBad
	}
	b := r.p[0]
	r.p = r.p[1:]
	return b, nil
}

func (r *reader) take(n uint64) ([]byte, error) {
	if n > uint64(len(r.p)) {
		return nil, errBad
	}
	b := r.p[:n]
	r.p = r.p[n:]
	return b, nil
}

// The first byte of a length (Redis's RDB_6BITLEN …): its top two bits.
const (
	len6     = 0
	len14    = 1
	len32    = 0x80
	len64    = 0x81
	lenIsEnc = 3
	encInt8  = 0
	encInt16 = 1
	encInt32 = 2
	encLZF   = 3
)

// length reads a length; encoded reports a string's special encoding
// (RDB_ENCVAL), n being then which.
func (r *reader) length() (n uint64, encoded bool, err error) {
	b, err := r.byte()
	if err != nil {
		return 0, false, err
	}
	switch b >> 6 {
	case len6:
		return uint64(b & 0x3f), false, nil
	case len14:
		lo, err := r.byte()
		return uint64(b&0x3f)<<8 | uint64(lo), false, err
	case lenIsEnc:
		return uint64(b & 0x3f), true, nil
	}
	switch b {
	case len32:
		q, err := r.take(4)
		if err != nil {
			return 0, false, err
		}
		return uint64(binary.BigEndian.Uint32(q)), false, nil
	case len64:
		q, err := r.take(8)
		if err != nil {
			return 0, false, err
		}
		return binary.BigEndian.Uint64(q), false, nil
	}
	return 0, false, errBad
}

// count reads a length that counts what follows, each at least min bytes:
// one the payload cannot hold is refused before anything is sized by it.
func (r *reader) count(min uint64) (int, error) {
	n, enc, err := r.length()
	switch {
	case err != nil:
		return 0, err
	case enc || n > uint64(len(r.p))/min:
		return 0, errBad
	}
	return int(n), nil
}

// str reads a string: plain, an integer, or LZF-compressed.
func (r *reader) str() ([]byte, error) {
	n, enc, err := r.length()
	if err != nil {
		return nil, err
	}
	if !enc {
		return r.take(n)
	}
	switch n {
	case encInt8:
		q, err := r.take(1)
		if err != nil {
			return nil, err
		}
		return strconv.AppendInt(nil, int64(int8(q[0])), 10), nil
	case encInt16:
		q, err := r.take(2)
		if err != nil {
			return nil, err
		}
		return strconv.AppendInt(nil, int64(int16(binary.LittleEndian.Uint16(q))), 10), nil
	case encInt32:
		q, err := r.take(4)
		if err != nil {
			return nil, err
		}
		return strconv.AppendInt(nil, int64(int32(binary.LittleEndian.Uint32(q))), 10), nil
	case encLZF:
		clen, e1, err := r.length()
		if err != nil || e1 {
			return nil, errBad
		}
		ulen, e2, err := r.length()
		if err != nil || e2 {
			return nil, errBad
		}
		in, err := r.take(clen)
		if err != nil {
			return nil, err
		}
		if ulen > 1<<40 {
			return nil, errBad
		}
		if err := r.bud.spend(int(ulen)); err != nil {
			return nil, err
		}
		return lzfDecompress(in, ulen)
	}
	return nil, errBad
}

// lzfMaxRatio bounds what a compressed string may claim to expand to: an
// LZF back reference of two bytes yields at most 9 bytes, one of three at
// most 264.
const lzfMaxRatio = 132

// lzfDecompress is liblzf's lzf_decompress: in must expand to exactly n
// bytes.
func lzfDecompress(in []byte, n uint64) ([]byte, error) {
	if n == 0 || n > uint64(len(in))*lzfMaxRatio {
		return nil, errBad
	}
	// Grown as it fills, so that a false claim costs no more than what
	// the input really expands to.
	out := make([]byte, 0, min(n, uint64(len(in))*4+64))
	for i := 0; i < len(in); {
		ctrl := int(in[i])
		i++
		if ctrl < 32 { // a run of ctrl+1 literal bytes
			run := ctrl + 1
			if i+run > len(in) || uint64(len(out)+run) > n {
				return nil, errBad
			}
			out = append(out, in[i:i+run]...)
			i += run
			continue
		}
		length := ctrl >> 5 // a back reference
		if length == 7 {
			if i >= len(in) {
				return nil, errBad
			}
			length += int(in[i])
			i++
		}
		if i >= len(in) {
			return nil, errBad
		}
		ref := len(out) - (ctrl&0x1f)<<8 - int(in[i]) - 1
		i++
		length += 2
		if ref < 0 || uint64(len(out)+length) > n {
			return nil, errBad
		}
		for k := range length { // byte by byte: the source may overlap
			out = append(out, out[ref+k])
		}
	}
	if uint64(len(out)) != n {
		return nil, errBad
	}
	return out, nil
}

// value reads a typed value: its type byte, then the value.
func (r *reader) value() (Value, error) {
	t, err := r.byte()
	if err != nil {
		return Value{}, err
	}
	switch t {
	case typeString:
		s, err := r.str()
		return Value{Kind: String, Str: s}, err
	case typeList:
		elems, err := r.strs(1)
		return collection(List, elems, nil, err)
	case typeSet:
		elems, err := r.strs(1)
		return collection(Set, elems, nil, err)
	case typeHash:
		elems, err := r.strs(2)
		return collection(Hash, elems, nil, err)
	case typeZSet, typeZSet2:
		return r.zset(t == typeZSet2)
	case typeListZiplist:
		elems, err := r.packed(ziplist)
		return collection(List, elems, nil, err)
	case typeListQuicklist, typeListQuick2:
		return r.quicklist(t == typeListQuick2)
	case typeSetIntset:
		b, err := r.str()
		if err != nil {
			return Value{}, err
		}
		elems, err := intset(b, &r.bud)
		return collection(Set, elems, nil, err)
	case typeSetListpack:
		elems, err := r.packed(listpack)
		return collection(Set, elems, nil, err)
	case typeHashZiplist, typeHashListpack:
		elems, err := r.packed(packer(t == typeHashListpack))
		if err == nil && len(elems)%2 != 0 {
			err = errBad
		}
		return collection(Hash, elems, nil, err)
	case typeZSetZiplist, typeZSetListpack:
		return r.packedZSet(packer(t == typeZSetListpack))
	case typeModule, typeModule2:
		return Value{}, fmt.Errorf("%w: a module's value, which tenure does not store", ErrBadFormat)
	case typeStream, typeStream2:
		return Value{}, fmt.Errorf("%w: a stream, which tenure does not store", ErrBadFormat)
	case typeHashZipmap:
		return Value{}, fmt.Errorf("%w: a hash as Redis 2.4 wrote it (zipmap), which tenure does not read", ErrBadFormat)
	}
	return Value{}, fmt.Errorf("%w: RDB type %d, which tenure does not store", ErrBadFormat, t)
}

// strs reads a count of items of per strings each, and the strings.
func (r *reader) strs(per int) ([][]byte, error) {
	n, err := r.count(uint64(per))
	if err != nil {
		return nil, err
	}
	elems := make([][]byte, 0, n*per)
	for range n * per {
		s, err := r.str()
		if err != nil {
			return nil, err
		}
		if err := r.bud.spend(elemCost); err != nil {
			return nil, err
		}
		elems = append(elems, s)
	}
	return elems, nil
}

// zset reads RDB_TYPE_ZSET (scores as text) or RDB_TYPE_ZSET_2 (binary).
func (r *reader) zset(binaryScores bool) (Value, error) {
	n, err := r.count(2)
	if err != nil {
		return Value{}, err
	}
	elems, scores := make([][]byte, 0, n), make([]float64, 0, n)
	for range n {
		m, err := r.str()
		if err != nil {
			return Value{}, err
		}
		var score float64
		if binaryScores {
			q, err := r.take(8)
			if err != nil {
				return Value{}, err
			}
			score = math.Float64frombits(binary.LittleEndian.Uint64(q))
		} else if score, err = r.textScore(); err != nil {
			return Value{}, err
		}
		if err := r.bud.spend(elemCost + 8); err != nil {
			return Value{}, err
		}
		elems, scores = append(elems, m), append(scores, score)
	}
	return collection(ZSet, elems, scores, nil)
}

// textScore reads a score as RDB_TYPE_ZSET has it: a length byte, 253 to
// 255 standing for NaN, +inf and -inf, then that many bytes of text.
func (r *reader) textScore() (float64, error) {
	n, err := r.byte()
	if err != nil {
		return 0, err
	}
	switch n {
	case 253:
		return math.NaN(), nil
	case 254:
		return math.Inf(1), nil
	case 255:
		return math.Inf(-1), nil
	}
	q, err := r.take(uint64(n))
	if err != nil {
		return 0, err
	}
	return parseScore(q)
}

func parseScore(q []byte) (float64, error) {
	f, err := strconv.ParseFloat(string(q), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, errBad
	}
	return f, nil
}

// quicklist reads RDB_TYPE_LIST_QUICKLIST (nodes that are ziplists) or
// RDB_TYPE_LIST_QUICKLIST_2 (each node a listpack or, PLAIN, one element).
func (r *reader) quicklist(v2 bool) (Value, error) {
	nodes, err := r.count(1)
	if err != nil {
		return Value{}, err
	}
	var elems [][]byte
	for range nodes {
		container := uint64(containerPacked)
		if v2 {
			c, enc, err := r.length()
			if err != nil || enc || (c != containerPlain && c != containerPacked) {
				return Value{}, errBad
			}
			container = c
		}
		b, err := r.str()
		if err != nil {
			return Value{}, err
		}
		if len(b) == 0 {
			return Value{}, errBad
		}
		if container == containerPlain {
			if err := r.bud.spend(elemCost); err != nil {
				return Value{}, err
			}
			elems = append(elems, b)
			continue
		}
		if elems, err = packer(v2)(b, elems, &r.bud); err != nil {
			return Value{}, err
		}
	}
	return collection(List, elems, nil, nil)
}

// A quicklist node's container (Redis's QUICKLIST_NODE_CONTAINER_*).
const (
	containerPlain  = 1
	containerPacked = 2
)

// packedZSet reads a sorted set kept as a ziplist or listpack of member,
// score, member, score, …
func (r *reader) packedZSet(unpack unpacker) (Value, error) {
	flat, err := r.packed(unpack)
	if err != nil {
		return Value{}, err
	}
	if len(flat)%2 != 0 {
		return Value{}, errBad
	}
	elems, scores := make([][]byte, 0, len(flat)/2), make([]float64, 0, len(flat)/2)
	for i := 0; i < len(flat); i += 2 {
		score, err := parseScore(flat[i+1])
		if err != nil {
			return Value{}, err
		}
		elems, scores = append(elems, flat[i]), append(scores, score)
	}
	return collection(ZSet, elems, scores, nil)
}

// unpacker appends the entries of a ziplist or listpack to elems,
// spending from bud.
type unpacker func(b []byte, elems [][]byte, bud *budget) ([][]byte, error)

func packer(isListpack bool) unpacker {
	if isListpack {
		return listpack
	}
	return ziplist
}

// packed reads a string holding a ziplist or listpack and its entries.
func (r *reader) packed(unpack unpacker) ([][]byte, error) {
	b, err := r.str()
	if err != nil {
		return nil, err
	}
	return unpack(b, nil, &r.bud)
}

// collection checks what Redis refuses to load into a key: an empty
// collection, a member twice in a set, sorted set or hash, a NaN score.
func collection(k Kind, elems [][]byte, scores []float64, err error) (Value, error) {
	if err != nil {
		return Value{}, err
	}
	if len(elems) == 0 {
		return Value{}, errBad
	}
	if k != List {
		step := 1
		if k == Hash {
			step = 2
		}
		seen := make(map[string]struct{}, len(elems)/step)
		for i := 0; i < len(elems); i += step {
			if _, dup := seen[string(elems[i])]; dup {
				return Value{}, errBad
			}
			seen[string(elems[i])] = struct{}{}
		}
	}
	for _, s := range scores {
		if math.IsNaN(s) {
			return Value{}, errBad
		}
	}
	return Value{Kind: k, Elems: elems, Scores: scores}, nil
}
