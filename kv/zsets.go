package kv

// Sorted sets (SPEC §13). A zset keeps two records a member, under its
// generation (collection.go):
//
//   - the member record, in the hashed space spaceMembers: memberSub(member)
//     → the score, 8 bytes (float64 bits BE). ZSCORE, ZMSCORE, ZADD's
//     lookup of the old score and ZSCAN's cursor use it: a point lookup.
//   - the index entry, in spaceScores: space, the score as order-preserving
//     bytes (scoreBytes), member → nothing. Pebble's order of these keys is
//     Redis's order of a zset, by score then by member's bytes, so a range
//     by score or by lex is a seek and a scan of what it returns, ZPOPMIN
//     and ZPOPMAX the first and last entries.
//
// ZCARD is the header's size. What has no index of its own costs a walk:
// a rank (ZRANK, ZRANGE by rank, ZREMRANGEBYRANK) is counted along the
// index from the nearer end, O(rank) or O(size - rank), as there is no
// order-statistics tree over Pebble's keys; ZCOUNT and ZLEXCOUNT walk
// what they count, O(count). Redis's skiplist answers those in O(log n):
// a rank in a zset of millions costs tenure a walk of the index, and
// ZRANGE 0 99, ZRANGE -100 -1 or a score range cost what they return.

import (
	"encoding/binary"
	"math"
)

// ZMember is a member of a sorted set and its score.
type ZMember struct {
	Member []byte
	Score  float64
}

// scoreBytes is f as 8 bytes whose byte order is f's order: the sign bit
// flipped for a positive number, every bit for a negative one. -0 is 0,
// as Redis compares them equal.
func scoreBytes(f float64) uint64 {
	if f == 0 {
		f = 0
	}
	b := math.Float64bits(f)
	if b>>63 != 0 {
		return ^b
	}
	return b | 1<<63
}

// scoreOfBytes undoes scoreBytes.
func scoreOfBytes(u uint64) float64 {
	if u>>63 != 0 {
		return math.Float64frombits(u &^ (1 << 63))
	}
	return math.Float64frombits(^u)
}

// indexSub is member's index entry at score.
func indexSub(score float64, member []byte) []byte {
	sub := make([]byte, 9, 9+len(member))
	sub[0] = spaceScores
	binary.BigEndian.PutUint64(sub[1:], scoreBytes(score))
	return append(sub, member...)
}

// indexFrom is the first index sub-key at score u (scoreBytes) or after.
func indexFrom(u uint64) []byte {
	sub := make([]byte, 9)
	sub[0] = spaceScores
	binary.BigEndian.PutUint64(sub[1:], u)
	return sub
}

// indexAfter is the first index sub-key past every entry at score u.
func indexAfter(u uint64) []byte {
	if u == math.MaxUint64 {
		return []byte{spaceScores + 1}
	}
	return indexFrom(u + 1)
}

func encodeScore(f float64) []byte { return binary.BigEndian.AppendUint64(nil, math.Float64bits(f)) }
func decodeScore(v []byte) float64 {
	if len(v) < 8 {
		return 0
	}
	return math.Float64frombits(binary.BigEndian.Uint64(v))
}

// entry reads an index entry: its key, and its value, the exact score
// (the key's bytes order -0 as 0; the value keeps which it was, as
// Redis's skiplist does). member aliases sub.
func entry(sub, v []byte) (score float64, member []byte) {
	if len(v) == 8 {
		return decodeScore(v), sub[9:]
	}
	return scoreOfBytes(binary.BigEndian.Uint64(sub[1:9])), sub[9:]
}

// zscore is member's score, with a write command's own writes.
func (co *coll) zscore(member []byte) (float64, bool, error) {
	v, ok, err := co.get(memberSub(spaceMembers, member))
	return decodeScore(v), ok, err
}

// zscoreRead is member's score from a read.
func (cr *collRead) zscore(member []byte) (float64, bool, error) {
	v, ok, err := cr.get(memberSub(spaceMembers, member))
	return decodeScore(v), ok, err
}

// zset writes member at score, replacing its entry at old when had.
func (co *coll) zset(member []byte, score, old float64, had bool) {
	if had {
		if scoreBytes(old) == scoreBytes(score) && math.Signbit(old) == math.Signbit(score) {
			return
		}
		co.del(indexSub(old, member))
	} else {
		co.size++
		lim := co.s.limits.Load()
		if co.size > lim.ZSetMaxListpackEntries || int64(len(member)) > lim.ZSetMaxListpackValue {
			co.markBig()
		}
	}
	co.put(memberSub(spaceMembers, member), encodeScore(score))
	co.put(indexSub(score, member), encodeScore(score))
}

// zrem removes member, if there.
func (co *coll) zrem(member []byte) (bool, error) {
	score, had, err := co.zscore(member)
	if err != nil || !had {
		return false, err
	}
	co.del(memberSub(spaceMembers, member))
	co.del(indexSub(score, member))
	co.size--
	return true, nil
}

// zsetUpdate runs fn on key's zset with its stripe held, and finishes it.
func (s *Store) zsetUpdate(op string, key []byte, fn func(co *coll) error) error {
	err := s.update(key, false, func(c *change, it *item) error {
		co, err := s.openColl(c, it, TypeZSet)
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

// ZAddFlags are ZADD's conditions.
type ZAddFlags struct{ NX, XX, GT, LT, Incr bool }

// ZAddResult is what ZADD did: members added, members whose score changed,
// members it acted on (not skipped by a condition), and with Incr the new
// score.
type ZAddResult struct {
	Added, Updated, Processed int64
	Score                     float64
}

// ZAdd is ZADD (and ZINCRBY: Incr), members[i] at scores[i], as Redis's
// zsetAdd: NX adds only, XX updates only, GT and LT update only to a
// greater or lesser score (new members are added all the same).
// ErrScoreNaN when Incr would make NaN; what came before it stays, as in
// Redis.
func (s *Store) ZAdd(key []byte, f ZAddFlags, scores []float64, members [][]byte) (ZAddResult, error) {
	var res ZAddResult
	err := s.zsetUpdate("zadd", key, func(co *coll) error {
		if !co.exists() && f.XX {
			return nil
		}
		if !co.exists() {
			lim := co.s.limits.Load()
			if lim.ZSetMaxListpackEntries == 0 || int64(len(members[0])) > lim.ZSetMaxListpackValue {
				co.markBig()
			}
		}
		for i, m := range members {
			score := scores[i]
			old, had, err := co.zscore(m)
			if err != nil {
				return err
			}
			switch {
			case had:
				if f.NX {
					continue
				}
				if f.Incr {
					score += old
					if math.IsNaN(score) {
						return ErrScoreNaN
					}
				}
				if (f.LT && score >= old) || (f.GT && score <= old) {
					continue
				}
				res.Processed++
				res.Score = score
				if score != old {
					res.Updated++
					co.zset(m, score, old, true)
				}
			case f.XX:
				continue
			default:
				res.Processed++
				res.Added++
				res.Score = score
				co.zset(m, score, 0, false)
			}
		}
		return nil
	})
	return res, err
}

// ZRem is ZREM: how many members it removed; the zset goes with its last.
func (s *Store) ZRem(key []byte, members [][]byte) (int64, error) {
	var n int64
	err := s.zsetUpdate("zrem", key, func(co *coll) error {
		for _, m := range members {
			ok, err := co.zrem(m)
			if err != nil {
				return err
			}
			if ok {
				n++
			}
		}
		return nil
	})
	return n, err
}

// ZCard is ZCARD, from the header.
func (s *Store) ZCard(key []byte) (int64, error) {
	n, err := s.collSize(key, TypeZSet)
	return n, wrap("zcard", err)
}

// ZMScore is ZMSCORE (and ZSCORE): one point lookup a member.
func (s *Store) ZMScore(key []byte, members [][]byte) ([]float64, []bool, error) {
	scores, ok := make([]float64, len(members)), make([]bool, len(members))
	_, err := s.readColl(key, TypeZSet, func(cr *collRead) error {
		for i, m := range members {
			var err error
			if scores[i], ok[i], err = cr.zscore(m); err != nil {
				return err
			}
		}
		return nil
	})
	return scores, ok, wrap("zmscore", err)
}

// ZRank is ZRANK and ZREVRANK (rev): member's rank, counted along the
// index from the end the rank counts from.
func (s *Store) ZRank(key, member []byte, rev bool) (rank int64, found bool, err error) {
	_, err = s.readColl(key, TypeZSet, func(cr *collRead) error {
		score, ok, err := cr.zscore(member)
		if err != nil || !ok {
			return err
		}
		found = true
		at := indexSub(score, member)
		count := func(sub, _ []byte) (bool, error) { rank++; return true, nil }
		if rev {
			return cr.each(append(at, 0), []byte{spaceScores + 1}, count)
		}
		return cr.each([]byte{spaceScores}, at, count)
	})
	return rank, found, wrap("zrank", err)
}
