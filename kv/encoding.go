package kv

import (
	"encoding/binary"
	"fmt"

	"github.com/cespare/xxhash/v2"
)

// Namespaces: the first byte of every Pebble key. See the package doc.
const (
	nsMeta   byte = 0x00
	nsKey    byte = 0x01
	nsExpiry byte = 0x02
	nsEnd    byte = 0x03 // first byte past the user namespaces
)

var (
	metaEpoch = []byte{nsMeta, 'e', 'p', 'o', 'c', 'h'}

	// userSpan is what FLUSHALL clears: the records and their expiry index,
	// never nsMeta.
	userSpanStart = []byte{nsKey}
	userSpanEnd   = []byte{nsEnd}
)

const prefixLen = 1 + 8 // namespace byte + hash or deadline

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

// Record format: see the package doc.
const (
	recString byte = 0x01

	flagExpiry byte = 1 << 0
	flagFence  byte = 1 << 1
	// flagRaw: the string was changed in place (APPEND, SETRANGE, SETBIT,
	// BITOP), which Redis keeps in its "raw" encoding whatever it holds;
	// OBJECT ENCODING says so. It has no payload.
	flagRaw byte = 1 << 2
)

// record is a key's stored state: its string, its deadline (unix ms, 0 =
// none) and the largest fence that wrote it (0 = none; LOCK-12).
type record struct {
	value  []byte
	expiry int64
	fence  uint64
	raw    bool // changed in place: see flagRaw
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
	dst[0] = recString
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

// decodeRecord reads a record; its value aliases raw.
func decodeRecord(raw []byte) (record, error) {
	if len(raw) < 2 || raw[0] != recString || raw[1]&^(flagExpiry|flagFence|flagRaw) != 0 {
		return record{}, fmt.Errorf("kv: corrupt record header % x", raw[:min(len(raw), 2)])
	}
	flags := raw[1]
	i := 2
	var r record
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
	return r, nil
}

// expiredAt reports whether a key with deadline at is expired at now: Redis
// keeps a key alive up to and including its deadline.
func expiredAt(at, now int64) bool { return at != 0 && now > at }
