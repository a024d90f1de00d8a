package kv

// Sets (SPEC §13): a member is a member record in the hashed space
// (collection.go), with an empty value.

import (
	"cmp"
	"slices"

	"github.com/tenure-db/tenure/internal/redistext"
)

// setUpdate runs fn on key's set with its stripe held, and finishes it.
func (s *Store) setUpdate(op string, key []byte, fn func(co *coll) error) error {
	err := s.update(key, false, func(c *change, it *item) error {
		co, err := s.openColl(c, it, TypeSet)
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

// setAdd adds member to co, counting it if new, and notes whether Redis
// would have left its intset.
func (co *coll) setAdd(member []byte) (bool, error) {
	sub := memberSub(spaceMembers, member)
	had, err := co.has(sub)
	if err != nil || had {
		return false, err
	}
	co.put(sub, nil)
	co.size++
	if !isInt(member) || co.size > co.s.limits.Load().SetMaxIntsetEntries {
		co.markBig()
	}
	return true, nil
}

// setRem removes member from co, if there.
func (co *coll) setRem(member []byte) (bool, error) {
	sub := memberSub(spaceMembers, member)
	had, err := co.has(sub)
	if err != nil || !had {
		return false, err
	}
	co.del(sub)
	co.size--
	return true, nil
}

// SAdd is SADD: it returns how many members are new.
func (s *Store) SAdd(key []byte, members [][]byte) (int64, error) {
	var n int64
	err := s.setUpdate("sadd", key, func(co *coll) error {
		for _, m := range members {
			added, err := co.setAdd(m)
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

// SRem is SREM: it returns how many members it removed; the set goes
// with its last member.
func (s *Store) SRem(key []byte, members [][]byte) (int64, error) {
	var n int64
	err := s.setUpdate("srem", key, func(co *coll) error {
		for _, m := range members {
			done, err := co.setRem(m)
			if err != nil {
				return err
			}
			if done {
				n++
			}
		}
		return nil
	})
	return n, err
}

// SCard is SCARD, from the set's metadata.
func (s *Store) SCard(key []byte) (int64, error) {
	n, err := s.collSize(key, TypeSet)
	return n, wrap("scard", err)
}

// SIsMember is SISMEMBER: one point lookup.
func (s *Store) SIsMember(key, member []byte) (bool, error) {
	out, err := s.SMIsMember(key, [][]byte{member})
	if err != nil {
		return false, wrap("sismember", err)
	}
	return out[0], nil
}

// SMIsMember is SMISMEMBER: one point lookup a member.
func (s *Store) SMIsMember(key []byte, members [][]byte) ([]bool, error) {
	out := make([]bool, len(members))
	_, err := s.readColl(key, TypeSet, func(cr *collRead) error {
		for i, m := range members {
			_, ok, err := cr.get(memberSub(spaceMembers, m))
			if err != nil {
				return err
			}
			out[i] = ok
		}
		return nil
	})
	if err != nil {
		return nil, wrap("smismember", err)
	}
	return out, nil
}

// SMembers is SMEMBERS. A set Redis would keep as an intset comes in its
// order, ascending; any other in the set's own.
func (s *Store) SMembers(key []byte) ([][]byte, error) {
	out := [][]byte{}
	_, err := s.readColl(key, TypeSet, func(cr *collRead) error {
		ms, _, err := cr.all(spaceMembers, false)
		if err == nil && ms != nil {
			out = intsetOrder(cr.header, ms)
		}
		return err
	})
	if err != nil {
		return nil, wrap("smembers", err)
	}
	return out, nil
}

// SScan is SSCAN (see collRead.scan).
func (s *Store) SScan(key []byte, cursor uint64, match []byte, count int) (uint64, [][]byte, error) {
	next, out, err := s.memberScan(key, TypeSet, cursor, match, count, false)
	return next, out, wrap("sscan", err)
}

// SRandMember is SRANDMEMBER key count (see randomMembers).
func (s *Store) SRandMember(key []byte, count int64) ([][]byte, error) {
	out := [][]byte{}
	_, err := s.readColl(key, TypeSet, func(cr *collRead) error {
		var err error
		out, err = cr.randomMembers(count, false)
		return err
	})
	if err != nil {
		return nil, wrap("srandmember", err)
	}
	return out, nil
}

// RandomMember is SRANDMEMBER key and HRANDFIELD key without a count: a
// member of key's set (t TypeSet) or a field of its hash (TypeHash),
// chosen at random; ok is false for a missing key.
func (s *Store) RandomMember(key []byte, t Type) (m []byte, ok bool, err error) {
	_, err = s.readColl(key, t, func(cr *collRead) error {
		m, _, ok, err = cr.randomOne()
		return err
	})
	if err != nil {
		return nil, false, wrap("random", err)
	}
	return m, ok, nil
}

// SPop is SPOP key [count]: count distinct members chosen at random,
// removed; all of them, and the key, when count is the size or more.
func (s *Store) SPop(key []byte, count int64) ([][]byte, error) {
	out := [][]byte{}
	err := s.setUpdate("spop", key, func(co *coll) error {
		if !co.exists() || count <= 0 {
			return nil
		}
		var err error
		if count == 1 {
			m, _, ok, err := co.randomOne()
			if err != nil || !ok {
				return err
			}
			out = [][]byte{m}
		} else if out, err = co.randomMembers(count, false); err != nil {
			return err
		}
		if int64(len(out)) >= co.size {
			co.size = 0 // the key goes, and its members with its generation
			co.dirty = true
			return nil
		}
		for _, m := range out {
			if _, err := co.setRem(m); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// SMove is SMOVE: it moves member from src to dst and reports whether src
// held it. WRONGTYPE if either key holds another type.
func (s *Store) SMove(src, dst, member []byte) (bool, error) {
	var moved bool
	err := s.updateMany([][]byte{src, dst}, false, func(c *change, items []item, idx []int) error {
		from, err := s.openColl(c, &items[idx[0]], TypeSet)
		if err != nil || !from.exists() {
			return err
		}
		if err := items[idx[1]].cur.is(TypeSet); err != nil {
			return err
		}
		if moved, err = from.has(memberSub(spaceMembers, member)); err != nil || !moved {
			return err
		}
		if idx[0] == idx[1] {
			return nil
		}
		if _, err := from.setRem(member); err != nil {
			return err
		}
		from.finish()
		to, err := s.openColl(c, &items[idx[1]], TypeSet)
		if err != nil {
			return err
		}
		if _, err := to.setAdd(member); err != nil {
			return err
		}
		to.finish()
		return nil
	})
	if err != nil {
		return false, wrap("smove", err)
	}
	return moved, nil
}

// SetOp is a set algebra command's operation.
type SetOp int

const (
	SetInter SetOp = iota // SINTER
	SetUnion              // SUNION
	SetDiff               // SDIFF
)

// SetAlgebra is SINTER, SUNION and SDIFF: the members of the result, a
// missing key counting as an empty set; WRONGTYPE if any key holds
// another type. With limit > 0 (SINTERCARD's LIMIT) an intersection stops
// once it has that many.
func (s *Store) SetAlgebra(op SetOp, keys [][]byte, limit int64) ([][]byte, error) {
	var out [][]byte
	err := s.readColls(keys, TypeSet, func(sets []*collRead) error {
		var err error
		out, err = setAlgebra(op, sets, limit)
		return err
	})
	if err != nil {
		return nil, wrap("sinter", err)
	}
	return out, nil
}

// SetAlgebraStore is SINTERSTORE, SUNIONSTORE and SDIFFSTORE: dst becomes
// the result (deleted when it is empty), whatever it held; it returns the
// result's size.
func (s *Store) SetAlgebraStore(op SetOp, dst []byte, keys [][]byte) (int64, error) {
	var n int64
	all := append([][]byte{dst}, keys...)
	err := s.updateMany(all, false, func(c *change, items []item, idx []int) error {
		sets := make([]*collRead, len(keys))
		for i := range keys {
			co, err := s.openColl(c, &items[idx[i+1]], TypeSet)
			if err != nil {
				return err
			}
			if co.exists() {
				sets[i] = &co.collRead
			}
		}
		res, err := setAlgebra(op, sets, 0)
		if err != nil {
			return err
		}
		to := s.freshColl(c, &items[idx[0]], TypeSet)
		for _, m := range res {
			if _, err := to.setAdd(m); err != nil {
				return err
			}
		}
		to.finish()
		n = to.size
		return nil
	})
	if err != nil {
		return 0, wrap("sstore", err)
	}
	return n, nil
}

// setAlgebra computes op over sets (nil: a missing key).
func setAlgebra(op SetOp, sets []*collRead, limit int64) ([][]byte, error) {
	out := [][]byte{}
	switch op {
	case SetInter:
		smallest := -1
		for i, cr := range sets {
			if cr == nil {
				return out, nil
			}
			if smallest < 0 || cr.size < sets[smallest].size {
				smallest = i
			}
		}
		err := sets[smallest].members(spaceMembers, func(m, _ []byte) (bool, error) {
			sub := memberSub(spaceMembers, m)
			for i, cr := range sets {
				if i == smallest {
					continue
				}
				_, ok, err := cr.get(sub)
				if err != nil || !ok {
					return err == nil, err
				}
			}
			out = append(out, clone(m))
			return limit <= 0 || int64(len(out)) < limit, nil
		})
		return out, err
	case SetUnion:
		seen := map[string]bool{}
		for _, cr := range sets {
			if cr == nil {
				continue
			}
			err := cr.members(spaceMembers, func(m, _ []byte) (bool, error) {
				if !seen[string(m)] {
					seen[string(m)] = true
					out = append(out, clone(m))
				}
				return true, nil
			})
			if err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	if sets[0] == nil {
		return out, nil
	}
	err := sets[0].members(spaceMembers, func(m, _ []byte) (bool, error) {
		sub := memberSub(spaceMembers, m)
		for _, cr := range sets[1:] {
			if cr == nil {
				continue
			}
			_, ok, err := cr.get(sub)
			if err != nil || ok {
				return err == nil, err
			}
		}
		out = append(out, clone(m))
		return true, nil
	})
	return out, err
}

// readColls calls fn with the collections of type t at keys, nil for a
// missing key, all read from one snapshot (or a transaction's batch), so
// that a write of several of them is seen whole or not at all; WRONGTYPE
// if a live key holds another type. Expired keys count as missing and are
// dropped after, as MGet drops them.
func (s *Store) readColls(keys [][]byte, t Type, fn func(crs []*collRead) error) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if s.tx != nil && s.tx.pipe != nil && s.tx.b != nil {
		s.tx.pipe.commitPart() // read from one snapshot: commit what the pipeline wrote first
	}
	r := s.reader()
	if s.tx == nil || s.tx.pipe != nil {
		snap := s.db.NewSnapshot()
		defer snap.Close()
		r = snap
	}
	now := s.nowMs()
	crs := make([]*collRead, len(keys))
	var expired [][]byte
	var typeErr error
	for i, k := range keys {
		rec, closer, found, err := getRecord(r, dataKey(hashKey(k), k))
		if err != nil {
			return err
		}
		live := found && !expiredAt(rec.expiry, now)
		s.lookups.count(live)
		if found {
			if !live {
				expired = append(expired, k)
			} else if err := rec.is(t); err != nil {
				typeErr = err
			} else {
				crs[i] = &collRead{r: r, header: headerOf(rec)}
			}
			_ = closer.Close()
		}
	}
	err := typeErr
	if err == nil {
		err = fn(crs)
	}
	if e := s.settleRead(); err == nil {
		err = e
	}
	for _, k := range expired {
		if e := s.dropExpired(k); err == nil {
			err = e
		}
	}
	return err
}

// intsetOrder puts members of a set Redis would keep as an intset in its
// order, ascending numbers, so that SMEMBERS answers as Redis's does.
func intsetOrder(h header, ms [][]byte) [][]byte {
	if h.isBig() {
		return ms
	}
	sortInts(ms)
	return ms
}

// sortInts sorts members that are all integers, ascending.
func sortInts(ms [][]byte) {
	slices.SortFunc(ms, func(a, b []byte) int {
		x, _ := redistext.ParseInt(a)
		y, _ := redistext.ParseInt(b)
		return cmp.Compare(x, y)
	})
}
