package kv

// Hashes (SPEC §13): a field is a member record in the hashed space
// (collection.go), its value the record's value.

import (
	"errors"
	"math"
	"strconv"

	"github.com/tenure-db/tenure/internal/redistext"
)

// Errors of the hash commands, Redis's texts.
var (
	// ErrHashNotInteger: HINCRBY on a field that is not an integer.
	ErrHashNotInteger = errors.New("hash value is not an integer")
	// ErrHashNotFloat: HINCRBYFLOAT on a field that is not a float.
	ErrHashNotFloat = errors.New("hash value is not a float")
)

// hashUpdate runs fn on key's hash with its stripe held, and finishes it.
func (s *Store) hashUpdate(op string, key []byte, fn func(co *coll) error) error {
	err := s.update(key, false, func(c *change, it *item) error {
		co, err := s.openColl(c, it, TypeHash)
		if err != nil {
			return err
		}
		if err := fn(co); err != nil {
			return err
		}
		co.finish()
		return nil
	})
	return wrap(op, err)
}

// hashSet sets field to value in co, counting a new field, and notes
// whether Redis would have left its listpack.
func (co *coll) hashSet(field, value []byte) (added bool, err error) {
	sub := memberSub(spaceMembers, field)
	had, err := co.has(sub)
	if err != nil {
		return false, err
	}
	co.put(sub, value)
	if !had {
		co.size++
	}
	l := co.s.limits.Load()
	if int64(len(field)) > l.HashMaxListpackValue || int64(len(value)) > l.HashMaxListpackValue || co.size > l.HashMaxListpackEntries {
		co.markBig()
	}
	return !had, nil
}

// HSet is HSET (and HMSET): pairs of field and value; it returns how many
// fields are new.
func (s *Store) HSet(key []byte, pairs [][]byte) (int64, error) {
	var n int64
	err := s.hashUpdate("hset", key, func(co *coll) error {
		for i := 0; i+1 < len(pairs); i += 2 {
			added, err := co.hashSet(pairs[i], pairs[i+1])
			if err != nil {
				return err
			}
			if added {
				n++
			}
		}
		return nil
	})
	return n, err
}

// HSetNX is HSETNX: it sets field only if it is missing.
func (s *Store) HSetNX(key, field, value []byte) (bool, error) {
	var done bool
	err := s.hashUpdate("hsetnx", key, func(co *coll) error {
		had, err := co.has(memberSub(spaceMembers, field))
		if err != nil || had {
			return err
		}
		done = true
		_, err = co.hashSet(field, value)
		return err
	})
	return done, err
}

// HDel is HDEL: it returns how many of fields it deleted; the hash goes
// with its last field.
func (s *Store) HDel(key []byte, fields [][]byte) (int64, error) {
	var n int64
	err := s.hashUpdate("hdel", key, func(co *coll) error {
		for _, f := range fields {
			sub := memberSub(spaceMembers, f)
			had, err := co.has(sub)
			if err != nil {
				return err
			}
			if had {
				co.del(sub)
				co.size--
				n++
			}
		}
		return nil
	})
	return n, err
}

// HIncrBy is HINCRBY: a missing field counts as 0.
func (s *Store) HIncrBy(key, field []byte, delta int64) (int64, error) {
	var n int64
	err := s.hashUpdate("hincrby", key, func(co *coll) error {
		v, ok, err := co.get(memberSub(spaceMembers, field))
		if err != nil {
			return err
		}
		var old int64
		if ok {
			if old, ok = redistext.ParseInt(v); !ok {
				return ErrHashNotInteger
			}
		}
		if (delta < 0 && old < 0 && delta < math.MinInt64-old) ||
			(delta > 0 && old > 0 && delta > math.MaxInt64-old) {
			return ErrOverflow
		}
		n = old + delta
		_, err = co.hashSet(field, strconv.AppendInt(nil, n, 10))
		return err
	})
	return n, err
}

// HIncrByFloat is HINCRBYFLOAT: a missing field counts as 0; the result is
// formatted as INCRBYFLOAT's.
func (s *Store) HIncrByFloat(key, field []byte, delta float64) ([]byte, error) {
	var out []byte
	err := s.hashUpdate("hincrbyfloat", key, func(co *coll) error {
		v, ok, err := co.get(memberSub(spaceMembers, field))
		if err != nil {
			return err
		}
		var old float64
		if ok {
			if old, ok = redistext.ParseFloat(v); !ok {
				return ErrHashNotFloat
			}
		}
		n := old + delta
		if math.IsNaN(n) || math.IsInf(n, 0) {
			return ErrNaN
		}
		out = redistext.FormatFloat(n)
		_, err = co.hashSet(field, out)
		return err
	})
	return out, err
}

// HGet is HGET: one point lookup under the hash's generation.
func (s *Store) HGet(key, field []byte) (v []byte, ok bool, err error) {
	_, err = s.readColl(key, TypeHash, func(cr *collRead) error {
		v, ok, err = cr.get(memberSub(spaceMembers, field))
		return err
	})
	if err != nil {
		return nil, false, wrap("hget", err)
	}
	return v, ok, nil
}

// HMGet is HMGET: a value per field, nil for a missing one.
func (s *Store) HMGet(key []byte, fields [][]byte) ([][]byte, error) {
	out := make([][]byte, len(fields))
	_, err := s.readColl(key, TypeHash, func(cr *collRead) error {
		for i, f := range fields {
			v, ok, err := cr.get(memberSub(spaceMembers, f))
			if err != nil {
				return err
			}
			if ok {
				out[i] = v
			}
		}
		return nil
	})
	if err != nil {
		return nil, wrap("hmget", err)
	}
	return out, nil
}

// HLen is HLEN, from the hash's metadata: no member is read.
func (s *Store) HLen(key []byte) (int64, error) {
	n, err := s.collSize(key, TypeHash)
	return n, wrap("hlen", err)
}

// collSize is a collection's size from its header, 0 for a missing key.
func (s *Store) collSize(key []byte, t Type) (int64, error) {
	var n int64
	_, err := s.view(key, t, func(rec record) { n = int64(rec.size()) })
	return n, err
}

// HExists is HEXISTS.
func (s *Store) HExists(key, field []byte) (bool, error) {
	_, ok, err := s.HGet(key, field)
	return ok, err
}

// HStrLen is HSTRLEN: 0 for a missing field or key.
func (s *Store) HStrLen(key, field []byte) (int64, error) {
	v, _, err := s.HGet(key, field)
	return int64(len(v)), err
}

// HGetAll is HGETALL, HKEYS and HVALS: the fields and, with values, their
// values, in the hash's order (which is no order Redis promises).
func (s *Store) HGetAll(key []byte, fields, values bool) (out [][]byte, err error) {
	out = [][]byte{}
	_, err = s.readColl(key, TypeHash, func(cr *collRead) error {
		out = make([][]byte, 0, min(cr.size, 1<<16)*2)
		return cr.members(spaceMembers, func(f, v []byte) (bool, error) {
			if fields {
				out = append(out, clone(f))
			}
			if values {
				out = append(out, clone(v))
			}
			return true, nil
		})
	})
	if err != nil {
		return nil, wrap("hgetall", err)
	}
	return out, nil
}

// HScan is HSCAN: the fields (and values, unless noValues) from cursor
// on, and the cursor to go on from (0: done). See collRead.scan.
func (s *Store) HScan(key []byte, cursor uint64, match []byte, count int, noValues bool) (uint64, [][]byte, error) {
	next, out, err := s.memberScan(key, TypeHash, cursor, match, count, !noValues)
	return next, out, wrap("hscan", err)
}

// memberScan is HSCAN, SSCAN and ZSCAN's scan of hashed space
// spaceMembers: members matching match (nil: all), each followed by its
// value when values is set.
func (s *Store) memberScan(key []byte, t Type, cursor uint64, match []byte, count int, values bool) (uint64, [][]byte, error) {
	if count <= 0 {
		count = 10
	}
	all := match == nil || (len(match) == 1 && match[0] == '*')
	out := [][]byte{}
	var next uint64
	_, err := s.readColl(key, t, func(cr *collRead) error {
		var err error
		next, err = cr.scan(spaceMembers, cursor, count, func(m, v []byte) {
			if all || redistext.Match(match, m) {
				out = append(out, clone(m))
				if values {
					out = append(out, clone(v))
				}
			}
		})
		return err
	})
	return next, out, err
}

// HRandField is HRANDFIELD key count [WITHVALUES] (see randomMembers):
// fields, each followed by its value with withValues.
func (s *Store) HRandField(key []byte, count int64, withValues bool) ([][]byte, error) {
	out := [][]byte{}
	_, err := s.readColl(key, TypeHash, func(cr *collRead) error {
		var err error
		out, err = cr.randomMembers(count, withValues)
		return err
	})
	if err != nil {
		return nil, wrap("hrandfield", err)
	}
	return out, nil
}
