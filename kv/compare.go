package kv

import (
	"bytes"
	"strconv"

	"github.com/zeebo/xxh3"
)

// Compare-and-set, as Redis 8.4 and Valkey 9 spell it (SPEC §13): SET …
// IFEQ|IFNE|IFDEQ|IFDNE, DELEX, DIGEST and DELIFEQ.

// CondKind is the kind of a Condition.
type CondKind uint8

const (
	// IfNone: no condition.
	IfNone CondKind = iota
	// IfEq (IFEQ): only if the key exists and its value equals Value.
	IfEq
	// IfNe (IFNE): only if the key is missing or its value differs from Value.
	IfNe
	// IfDigestEq (IFDEQ): only if the key exists and its value's digest is Digest.
	IfDigestEq
	// IfDigestNe (IFDNE): only if the key is missing or its value's digest is not Digest.
	IfDigestNe
)

// Condition is a compare-and-set condition on a string key's current value.
type Condition struct {
	Kind   CondKind
	Value  []byte // for IfEq and IfNe
	Digest uint64 // for IfDigestEq and IfDigestNe
}

// Digest is DIGEST's hash of a value: XXH3-64 with seed 0.
func Digest(value []byte) uint64 { return xxh3.Hash(value) }

// DigestHex is a digest as DIGEST answers it: 16 lowercase hex digits.
func DigestHex(d uint64) string {
	s := strconv.FormatUint(d, 16)
	const zeros = "0000000000000000"
	return zeros[:16-len(s)] + s
}

// ParseDigest reads a digest as IFDEQ and IFDNE take it: exactly 16 hex
// digits, in either case.
func ParseDigest(b []byte) (uint64, bool) {
	if len(b) != 16 {
		return 0, false
	}
	for _, ch := range b {
		if !('0' <= ch && ch <= '9' || 'a' <= ch && ch <= 'f' || 'A' <= ch && ch <= 'F') {
			return 0, false
		}
	}
	d, err := strconv.ParseUint(string(b), 16, 64)
	return d, err == nil
}

// holds says whether the condition lets the write happen, given the key's
// current state (live, and its string value when live).
func (k Condition) holds(live bool, value []byte) bool {
	switch k.Kind {
	case IfEq:
		return live && bytes.Equal(value, k.Value)
	case IfNe:
		return !live || !bytes.Equal(value, k.Value)
	case IfDigestEq:
		return live && Digest(value) == k.Digest
	case IfDigestNe:
		return !live || Digest(value) != k.Digest
	}
	return true
}

// DelIf is DELEX (and, with IfEq, DELIFEQ): it deletes key when the
// condition holds and says whether it did. Without a condition it is DEL
// of one key, of any type; with one, a key of another type is
// ErrWrongType and a missing key is never deleted.
func (s *Store) DelIf(key []byte, cond Condition) (bool, error) {
	var deleted bool
	err := s.update(key, cond.Kind != IfNone, func(c *change, it *item) error {
		cur := it.cur
		if !cur.live {
			return nil
		}
		if cond.Kind != IfNone {
			if err := cur.is(TypeString); err != nil {
				return err
			}
			if !cond.holds(true, cur.rec.value) {
				return nil
			}
		}
		deleted = true
		c.del(it)
		return nil
	})
	if err != nil {
		return false, wrap("delex", err)
	}
	return deleted, nil
}

// DigestOf is DIGEST: the digest of key's string value; ok is false for a
// missing key.
func (s *Store) DigestOf(key []byte) (d uint64, ok bool, err error) {
	ok, err = s.view(key, TypeString, func(rec record) { d = Digest(rec.value) })
	if err != nil {
		return 0, false, wrap("digest", err)
	}
	return d, ok, nil
}
