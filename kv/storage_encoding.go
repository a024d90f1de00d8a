package kv

// Encoding: how keys and records are laid out in Pebble (see the package
// doc's Layout). This file is the only one that knows the bytes.

import (
	"encoding/binary"
	"fmt"

	"github.com/cespare/xxhash/v2"
)

// Namespaces: the first byte of every Pebble key. See the package doc.
const (
	nsMeta    byte = 0x00 // internal metadata: epoch, format, applied index
	nsKey     byte = 0x01 // a user key's metadata record, whatever its type
	nsExpiry  byte = 0x02 // the expiry index
	nsMember  byte = 0x03 // a collection's members, under its generation
	nsReclaim byte = 0x04 // generations whose members are stale (storage_reclaim.go)
	nsEnd     byte = 0x05 // first byte past the user namespaces
)

var (
	metaEpoch = []byte{nsMeta, 'e', 'p', 'o', 'c', 'h'}

	// userSpan is what FLUSHALL clears: the records, their expiry index,
	// the members and the reclaim index, never nsMeta.
	userSpanStart = []byte{nsKey}
	userSpanEnd   = []byte{nsEnd}
)

const prefixLen = 1 + 8 // namespace byte + hash, deadline or generation

func hashKey(key []byte) uint64 { return xxhash.Sum64(key) }

// dataKey is where key's record lives: nsKey, hash BE, key.
func dataKey(h uint64, key []byte) []byte {
	return appendDataKey(make([]byte, 0, prefixLen+len(key)), h, key)
}

// appendDataKey appends key's dataKey to dst.
func appendDataKey(dst []byte, h uint64, key []byte) []byte {
	dst = append(dst, nsKey)
	dst = binary.BigEndian.AppendUint64(dst, h)
	return append(dst, key...)
}

// expiryKey is key's entry in the expiry index: nsExpiry, deadline BE, key.
// Deadlines stored are always after the store's clock at the time of writing,
// so positive, and big-endian order is deadline order.
func expiryKey(at int64, key []byte) []byte {
	ek := make([]byte, prefixLen+len(key))
	ek[0] = nsExpiry
	binary.BigEndian.PutUint64(ek[1:], uint64(at))
	copy(ek[prefixLen:], key)
	return ek
}

func hashPrefix(h uint64) []byte {
	p := make([]byte, prefixLen)
	p[0] = nsKey
	binary.BigEndian.PutUint64(p[1:], h)
	return p
}

func expiryPrefix(at int64) []byte {
	p := make([]byte, prefixLen)
	p[0] = nsExpiry
	binary.BigEndian.PutUint64(p[1:], uint64(at))
	return p
}

// memberKey is where a member of the collection of generation gen lives:
// nsMember, gen BE, member. The key's name is not in it: a generation
// belongs to one collection for ever (see storage_reclaim.go), so RENAME moves
// only the metadata record, and a stale generation's members are one
// range, [memberPrefix(gen), memberPrefix(gen+1)).
func memberKey(gen uint64, member []byte) []byte {
	return append(memberPrefix(gen), member...)
}

func memberPrefix(gen uint64) []byte {
	p := make([]byte, prefixLen, prefixLen+16)
	p[0] = nsMember
	binary.BigEndian.PutUint64(p[1:], gen)
	return p
}

// reclaimKey is a stale generation's entry in the reclaim index: nsReclaim,
// gen BE, with no value.
func reclaimKey(gen uint64) []byte {
	p := make([]byte, prefixLen)
	p[0] = nsReclaim
	binary.BigEndian.PutUint64(p[1:], gen)
	return p
}

// Metadata record format: see the package doc.
const (
	flagExpiry byte = 1 << 0
	flagFence  byte = 1 << 1
	// flagRaw: the string was changed in place (APPEND, SETRANGE, SETBIT,
	// BITOP), which Redis keeps in its "raw" encoding whatever it holds;
	// OBJECT ENCODING says so. It has no payload.
	flagRaw byte = 1 << 2

	flagsKnown = flagExpiry | flagFence | flagRaw
)

// collectionHeaderLen is the least payload of a collection's record: its
// generation and its size, uint64 BE each. What follows is the type's own
// (a list's ends, say).
const collectionHeaderLen = 16

// record is a key's metadata record: its type, its deadline (unix ms,
// 0 = none), the largest fence that wrote it (0 = none; LOCK-12) and its
// payload. A string's payload is its value, kept inline (one Pebble
// lookup for GET, one put for SET); a collection's is its header
// (generation, size), its members being records of their own.
//
// The zero record is an empty string: every record{value: v} is a string.
type record struct {
	value  []byte // the payload
	expiry int64
	fence  uint64
	typ    Type // a byte, in the padding after raw: an item still fits its size class (see newItemAt)
	raw    bool // a string changed in place: see flagRaw
}

func (r record) encodedLen() int {
	n := 2 + len(r.value)
	if r.expiry != 0 {
		n += 8
	}
	if r.fence != 0 {
		n += 8
	}
	return n
}

// encodeTo writes r into dst, which has exactly r.encodedLen() bytes.
func (r record) encodeTo(dst []byte) {
	dst[0] = r.typ.code()
	var flags byte
	i := 2
	if r.expiry != 0 {
		flags |= flagExpiry
		binary.BigEndian.PutUint64(dst[i:], uint64(r.expiry))
		i += 8
	}
	if r.fence != 0 {
		flags |= flagFence
		binary.BigEndian.PutUint64(dst[i:], r.fence)
		i += 8
	}
	if r.raw {
		flags |= flagRaw
	}
	dst[1] = flags
	copy(dst[i:], r.value)
}

// decodeRecord reads a metadata record of any type; its value aliases raw.
// Only bytes no tenure ever wrote are corrupt: an unknown type code, an
// unknown flag, a short field.
func decodeRecord(raw []byte) (record, error) {
	if len(raw) < 2 || raw[1]&^flagsKnown != 0 {
		return record{}, fmt.Errorf("kv: corrupt record header % x", raw[:min(len(raw), 2)])
	}
	typ, ok := typeOfCode(raw[0])
	if !ok {
		return record{}, fmt.Errorf("kv: corrupt record: unknown type code %#x", raw[0])
	}
	flags := raw[1]
	i := 2
	r := record{typ: typ}
	if flags&flagExpiry != 0 {
		if len(raw) < i+8 {
			return record{}, fmt.Errorf("kv: corrupt record: short expiry")
		}
		r.expiry = int64(binary.BigEndian.Uint64(raw[i:]))
		i += 8
	}
	if flags&flagFence != 0 {
		if len(raw) < i+8 {
			return record{}, fmt.Errorf("kv: corrupt record: short fence")
		}
		r.fence = binary.BigEndian.Uint64(raw[i:])
		i += 8
	}
	r.raw = flags&flagRaw != 0
	r.value = raw[i:]
	if typ != TypeString && len(r.value) < collectionHeaderLen {
		return record{}, fmt.Errorf("kv: corrupt record: %s header of %d bytes", typ, len(r.value))
	}
	return r, nil
}

// collection makes the record of a collection of type t: generation gen,
// size members.
func collection(t Type, gen, size uint64) record {
	v := make([]byte, collectionHeaderLen)
	binary.BigEndian.PutUint64(v, gen)
	binary.BigEndian.PutUint64(v[8:], size)
	return record{typ: t, value: v}
}

// generation is a collection's generation; 0 for a string, which has none.
func (r record) generation() uint64 {
	if r.typ == TypeString || len(r.value) < collectionHeaderLen {
		return 0
	}
	return binary.BigEndian.Uint64(r.value)
}

// size is a collection's number of members.
func (r record) size() uint64 {
	if r.typ == TypeString || len(r.value) < collectionHeaderLen {
		return 0
	}
	return binary.BigEndian.Uint64(r.value[8:])
}

// expiredAt reports whether a key with deadline at is expired at now: Redis
// keeps a key alive up to and including its deadline.
func expiredAt(at, now int64) bool { return at != 0 && now > at }
