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
	"bytes"
	"encoding/binary"
	"math"
	"slices"
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

// ScoreRange is a range of scores, each end inclusive or not (ZRANGEBYSCORE's
// min and max, "(" for exclusive).
type ScoreRange struct {
	Min, Max     float64
	MinEx, MaxEx bool
}

func (r ScoreRange) empty() bool {
	return r.Min > r.Max || (r.Min == r.Max && (r.MinEx || r.MaxEx))
}

func (r ScoreRange) has(f float64) bool {
	return (f > r.Min || (!r.MinEx && f == r.Min)) && (f < r.Max || (!r.MaxEx && f == r.Max))
}

// LexBound is one end of ZRANGEBYLEX's range: "-" (Inf -1), "+" (Inf 1),
// or a member, inclusive ("[") or exclusive ("(").
type LexBound struct {
	Value []byte
	Ex    bool
	Inf   int
}

// LexRange is ZRANGEBYLEX's range.
type LexRange struct{ Min, Max LexBound }

func (r LexRange) aboveMin(m []byte) bool {
	switch r.Min.Inf {
	case -1:
		return true
	case 1:
		return false
	}
	c := bytes.Compare(m, r.Min.Value)
	return c > 0 || (c == 0 && !r.Min.Ex)
}

func (r LexRange) belowMax(m []byte) bool {
	switch r.Max.Inf {
	case 1:
		return true
	case -1:
		return false
	}
	c := bytes.Compare(m, r.Max.Value)
	return c < 0 || (c == 0 && !r.Max.Ex)
}

func (r LexRange) empty() bool {
	if r.Min.Inf == 1 || r.Max.Inf == -1 {
		return true
	}
	if r.Min.Inf != 0 || r.Max.Inf != 0 {
		return false
	}
	c := bytes.Compare(r.Min.Value, r.Max.Value)
	return c > 0 || (c == 0 && (r.Min.Ex || r.Max.Ex))
}

// RangeBy is what a ZRANGE counts its range in.
type RangeBy uint8

const (
	ByRank RangeBy = iota
	ByScore
	ByLex
)

// ZRangeSpec is ZRANGE's range: by rank (Start, Stop, Redis's negative
// indexes), by score or by lex, reversed or not, and for the last two an
// offset and a count (Limit < 0: all).
type ZRangeSpec struct {
	By            RangeBy
	Start, Stop   int64
	Score         ScoreRange
	Lex           LexRange
	Rev           bool
	Offset, Limit int64
}

// walk calls fn with each entry of spec's range, in its order, until fn
// returns false. score and member alias Pebble's memory for the call.
func (cr *collRead) walk(spec ZRangeSpec, fn func(score float64, member []byte) bool) error {
	emit := func(sub, v []byte) (bool, error) {
		score, m := entry(sub, v)
		return fn(score, m), nil
	}
	all := func(rev bool, lo, hi []byte, f func(sub, v []byte) (bool, error)) error {
		if rev {
			return cr.eachReverse(lo, hi, f)
		}
		return cr.each(lo, hi, f)
	}
	switch spec.By {
	case ByRank:
		start, stop, ok := rankRange(spec.Start, spec.Stop, cr.size)
		if !ok {
			return nil
		}
		// Walk from the end nearer the range: Redis's rank is counted
		// from the end the command names (REV: from the highest).
		fromFront := start <= cr.size-1-stop
		skip, n := start, stop-start+1
		if !fromFront {
			skip = cr.size - 1 - stop
		}
		rev := spec.Rev != !fromFront
		var seen int64
		var buf []ZMember
		err := all(rev, []byte{spaceScores}, []byte{spaceScores + 1}, func(sub, v []byte) (bool, error) {
			if seen++; seen <= skip {
				return true, nil
			}
			score, m := entry(sub, v)
			if fromFront {
				return fn(score, m) && seen < skip+n, nil
			}
			buf = append(buf, ZMember{clone(m), score})
			return seen < skip+n, nil
		})
		for i := len(buf) - 1; err == nil && i >= 0; i-- {
			if !fn(buf[i].Score, buf[i].Member) {
				break
			}
		}
		return err
	case ByScore:
		r := spec.Score
		if r.empty() {
			return nil
		}
		lo, hi := indexFrom(scoreBytes(r.Min)), indexAfter(scoreBytes(r.Max))
		return all(spec.Rev, lo, hi, func(sub, v []byte) (bool, error) {
			if score, _ := entry(sub, v); !r.has(score) {
				return true, nil
			}
			return emit(sub, v)
		})
	default:
		r := spec.Lex
		if r.empty() {
			return nil
		}
		return all(spec.Rev, []byte{spaceScores}, []byte{spaceScores + 1}, func(sub, v []byte) (bool, error) {
			_, m := entry(sub, v)
			// A lex range is for a zset of equal scores, ordered by
			// member: past its far end, nothing more is in it.
			if spec.Rev && !r.aboveMin(m) || !spec.Rev && !r.belowMax(m) {
				return false, nil
			}
			if !r.aboveMin(m) || !r.belowMax(m) {
				return true, nil
			}
			return emit(sub, v)
		})
	}
}

// rankRange is Redis's start and stop over a zset or list of size n, as
// 0-based indexes from the front; ok is false for an empty range.
func rankRange(start, stop, n int64) (int64, int64, bool) {
	if start < 0 {
		start += n
	}
	if stop < 0 {
		stop += n
	}
	start = max(start, 0)
	if start > stop || start >= n {
		return 0, 0, false
	}
	return start, min(stop, n-1), true
}

// collect walks spec's range with its offset and limit.
func (cr *collRead) collect(spec ZRangeSpec) ([]ZMember, error) {
	out := []ZMember{}
	if spec.By != ByRank && (spec.Offset < 0 || spec.Limit == 0) {
		return out, nil
	}
	skip, limit := spec.Offset, spec.Limit
	if spec.By == ByRank {
		skip, limit = 0, -1
	}
	err := cr.walk(spec, func(score float64, m []byte) bool {
		if skip > 0 {
			skip--
			return true
		}
		out = append(out, ZMember{clone(m), score})
		return limit < 0 || int64(len(out)) < limit
	})
	return out, err
}

// ZRange is ZRANGE and its older forms.
func (s *Store) ZRange(key []byte, spec ZRangeSpec) ([]ZMember, error) {
	var out []ZMember
	_, err := s.readColl(key, TypeZSet, func(cr *collRead) error {
		var err error
		out, err = cr.collect(spec)
		return err
	})
	if out == nil {
		out = []ZMember{}
	}
	return out, wrap("zrange", err)
}

// ZCount is ZCOUNT (ByScore) and ZLEXCOUNT (ByLex): a walk of what it counts.
func (s *Store) ZCount(key []byte, spec ZRangeSpec) (int64, error) {
	var n int64
	spec.Rev = false
	_, err := s.readColl(key, TypeZSet, func(cr *collRead) error {
		return cr.walk(spec, func(float64, []byte) bool { n++; return true })
	})
	return n, wrap("zcount", err)
}

// ZRemRange is ZREMRANGEBYRANK, ZREMRANGEBYSCORE and ZREMRANGEBYLEX: how
// many members it removed.
func (s *Store) ZRemRange(key []byte, spec ZRangeSpec) (int64, error) {
	var n int64
	spec.Rev, spec.Offset, spec.Limit = false, 0, -1
	err := s.zsetUpdate("zremrange", key, func(co *coll) error {
		doomed, err := co.collect(spec)
		if err != nil {
			return err
		}
		for _, z := range doomed {
			co.del(memberSub(spaceMembers, z.Member))
			co.del(indexSub(z.Score, z.Member))
		}
		co.size -= int64(len(doomed))
		n = int64(len(doomed))
		return nil
	})
	return n, err
}

// zpop takes up to count members from the low end (or the high, max).
func (co *coll) zpop(max bool, count int64) ([]ZMember, error) {
	out := []ZMember{}
	if count <= 0 || !co.exists() {
		return out, nil
	}
	take := func(sub, v []byte) (bool, error) {
		score, m := entry(sub, v)
		out = append(out, ZMember{clone(m), score})
		return int64(len(out)) < count, nil
	}
	var err error
	if max {
		err = co.eachReverse([]byte{spaceScores}, []byte{spaceScores + 1}, take)
	} else {
		err = co.each([]byte{spaceScores}, []byte{spaceScores + 1}, take)
	}
	for _, z := range out {
		co.del(memberSub(spaceMembers, z.Member))
		co.del(indexSub(z.Score, z.Member))
	}
	co.size -= int64(len(out))
	return out, err
}

// ZPop is ZPOPMIN and ZPOPMAX (max): up to count members, in order.
func (s *Store) ZPop(key []byte, max bool, count int64) ([]ZMember, error) {
	var out []ZMember
	err := s.zsetUpdate("zpop", key, func(co *coll) error {
		var err error
		out, err = co.zpop(max, count)
		return err
	})
	return out, err
}

// ZMPop is ZMPOP and BZPOPMIN/BZPOPMAX's attempt: up to count members
// from the first of keys that holds a zset; key is nil when none does.
// WRONGTYPE for a key of another type met before one that holds a zset.
func (s *Store) ZMPop(keys [][]byte, max bool, count int64) (key []byte, out []ZMember, err error) {
	err = s.updateMany(keys, false, func(c *change, items []item, idx []int) error {
		for i, k := range keys {
			co, err := s.openColl(c, &items[idx[i]], TypeZSet)
			if err != nil {
				return err
			}
			if !co.exists() {
				continue
			}
			if out, err = co.zpop(max, count); err != nil {
				return err
			}
			key = k
			co.finish()
			return nil
		}
		return nil
	})
	return key, out, wrap("zmpop", err)
}

// ZRandMember is ZRANDMEMBER key count: as HRANDFIELD chooses
// (collRead.randomMembers), each member followed by its score's bytes
// when withScores… decoded here into ZMembers.
func (s *Store) ZRandMember(key []byte, count int64) ([]ZMember, error) {
	out := []ZMember{}
	_, err := s.readColl(key, TypeZSet, func(cr *collRead) error {
		picks, err := cr.randomMembers(count, true)
		for i := 0; i+1 < len(picks); i += 2 {
			out = append(out, ZMember{picks[i], decodeScore(picks[i+1])})
		}
		return err
	})
	return out, wrap("zrandmember", err)
}

// ZScan is ZSCAN: members and their scores, by the member's hash.
func (s *Store) ZScan(key []byte, cursor uint64, match []byte, count int) (uint64, []ZMember, error) {
	next, raw, err := s.memberScan(key, TypeZSet, cursor, match, count, true)
	out := make([]ZMember, 0, len(raw)/2)
	for i := 0; i+1 < len(raw); i += 2 {
		out = append(out, ZMember{raw[i], decodeScore(raw[i+1])})
	}
	return next, out, wrap("zscan", err)
}

// ZSetOp is ZUNION's, ZINTER's and ZDIFF's operation.
type ZSetOp uint8

const (
	ZUnion ZSetOp = iota
	ZInter
	ZDiff
)

// Aggregate is how ZUNION and ZINTER combine a member's scores.
type Aggregate uint8

const (
	AggSum Aggregate = iota
	AggMin
	AggMax
)

// ZCombineSpec is ZUNION, ZINTER or ZDIFF of Keys, a set counting as a
// zset whose scores are 1, each weighted by Weights (nil: 1 each).
type ZCombineSpec struct {
	Op      ZSetOp
	Keys    [][]byte
	Weights []float64
	Agg     Aggregate
}

// source reads one input of ZUNION and friends: a zset, a set (scores of
// 1), or nothing.
type source struct {
	cr  *collRead
	set bool
}

func (src source) size() int64 {
	if src.cr == nil {
		return 0
	}
	return src.cr.size
}

func (src source) score(m []byte) (float64, bool, error) {
	if src.cr == nil {
		return 0, false, nil
	}
	if src.set {
		_, ok, err := src.cr.get(memberSub(spaceMembers, m))
		return 1, ok, err
	}
	return src.cr.zscore(m)
}

func (src source) each(fn func(m []byte, score float64) error) error {
	if src.cr == nil {
		return nil
	}
	return src.cr.members(spaceMembers, func(m, v []byte) (bool, error) {
		score := 1.0
		if !src.set {
			score = decodeScore(v)
		}
		return true, fn(m, score)
	})
}

// sources opens the inputs of spec among items.
func (s *Store) sources(c *change, items []item, idx []int, from int, n int) ([]source, error) {
	srcs := make([]source, n)
	for i := range n {
		it := &items[idx[from+i]]
		if !it.cur.live {
			continue
		}
		switch it.cur.rec.typ {
		case TypeZSet, TypeSet:
			srcs[i] = source{cr: &collRead{r: s.reader(), header: headerOf(it.cur.rec)}, set: it.cur.rec.typ == TypeSet}
		default:
			return nil, ErrWrongType
		}
	}
	return srcs, nil
}

// zcombine computes spec over srcs, in Redis's result order: by score,
// then member.
func zcombine(spec ZCombineSpec, srcs []source) ([]ZMember, error) {
	weight := func(i int) float64 {
		if spec.Weights == nil {
			return 1
		}
		return spec.Weights[i]
	}
	agg := func(a, b float64) float64 {
		switch spec.Agg {
		case AggMin:
			return min(a, b)
		case AggMax:
			return max(a, b)
		}
		r := a + b
		if math.IsNaN(r) {
			return 0 // Redis: inf + -inf is 0 when aggregating
		}
		return r
	}
	mul := func(score, w float64) float64 {
		r := score * w
		if math.IsNaN(r) {
			return 0 // Redis: 0 * inf is 0
		}
		return r
	}
	acc := map[string]float64{}
	var order []string
	switch spec.Op {
	case ZUnion:
		for i, src := range srcs {
			err := src.each(func(m []byte, score float64) error {
				score = mul(score, weight(i))
				if old, ok := acc[string(m)]; ok {
					acc[string(m)] = agg(old, score)
				} else {
					acc[string(m)] = score
					order = append(order, string(m))
				}
				return nil
			})
			if err != nil {
				return nil, err
			}
		}
	case ZInter:
		smallest := -1
		for i, src := range srcs {
			if src.cr == nil {
				return []ZMember{}, nil
			}
			if smallest < 0 || src.size() < srcs[smallest].size() {
				smallest = i
			}
		}
		if smallest < 0 {
			return []ZMember{}, nil
		}
		err := srcs[smallest].each(func(m []byte, score float64) error {
			total := mul(score, weight(smallest))
			for i, src := range srcs {
				if i == smallest {
					continue
				}
				sc, ok, err := src.score(m)
				if err != nil || !ok {
					return err
				}
				// Redis folds in input order; sum and min/max commute.
				total = agg(total, mul(sc, weight(i)))
			}
			acc[string(m)] = total
			order = append(order, string(m))
			return nil
		})
		if err != nil {
			return nil, err
		}
	case ZDiff:
		if len(srcs) == 0 || srcs[0].cr == nil {
			return []ZMember{}, nil
		}
		err := srcs[0].each(func(m []byte, score float64) error {
			for _, src := range srcs[1:] {
				_, ok, err := src.score(m)
				if err != nil || ok {
					return err
				}
			}
			acc[string(m)] = score
			order = append(order, string(m))
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	out := make([]ZMember, 0, len(order))
	for _, m := range order {
		out = append(out, ZMember{[]byte(m), acc[m]})
	}
	sortZ(out)
	return out, nil
}

// sortZ sorts members as a zset orders them.
func sortZ(zs []ZMember) {
	slices.SortFunc(zs, func(a, b ZMember) int {
		switch {
		case a.Score < b.Score:
			return -1
		case a.Score > b.Score:
			return 1
		}
		return bytes.Compare(a.Member, b.Member)
	})
}

// ZCombine is ZUNION, ZINTER and ZDIFF: the result, in order.
func (s *Store) ZCombine(spec ZCombineSpec) ([]ZMember, error) {
	var out []ZMember
	err := s.updateMany(spec.Keys, false, func(c *change, items []item, idx []int) error {
		srcs, err := s.sources(c, items, idx, 0, len(spec.Keys))
		if err != nil {
			return err
		}
		out, err = zcombine(spec, srcs)
		return err
	})
	return out, wrap("zunion", err)
}

// ZCombineStore is ZUNIONSTORE, ZINTERSTORE and ZDIFFSTORE: dst becomes
// the result (deleted when empty); it returns the result's size.
func (s *Store) ZCombineStore(dst []byte, spec ZCombineSpec) (int64, error) {
	var n int64
	all := append([][]byte{dst}, spec.Keys...)
	err := s.updateMany(all, false, func(c *change, items []item, idx []int) error {
		srcs, err := s.sources(c, items, idx, 1, len(spec.Keys))
		if err != nil {
			return err
		}
		res, err := zcombine(spec, srcs)
		if err != nil {
			return err
		}
		n = s.storeZ(c, &items[idx[0]], res)
		return nil
	})
	return n, wrap("zunionstore", err)
}

// storeZ makes it a new zset of zs (or deletes it, for none), named as
// Redis names a zset made whole of that size.
func (s *Store) storeZ(c *change, it *item, zs []ZMember) int64 {
	to := s.freshColl(c, it, TypeZSet)
	lim := s.limits.Load()
	var longest int
	for _, z := range zs {
		to.put(memberSub(spaceMembers, z.Member), encodeScore(z.Score))
		to.put(indexSub(z.Score, z.Member), encodeScore(z.Score))
		longest = max(longest, len(z.Member))
	}
	to.size = int64(len(zs))
	if to.size > lim.ZSetMaxListpackEntries || int64(longest) > lim.ZSetMaxListpackValue {
		to.markBig()
	}
	to.finish()
	return to.size
}

// ZRangeStore is ZRANGESTORE: dst becomes src's range (deleted when
// empty); it returns its size.
func (s *Store) ZRangeStore(dst, src []byte, spec ZRangeSpec) (int64, error) {
	var n int64
	err := s.updateMany([][]byte{dst, src}, false, func(c *change, items []item, idx []int) error {
		from, err := s.openColl(c, &items[idx[1]], TypeZSet)
		if err != nil {
			return err
		}
		var res []ZMember
		if from.exists() {
			if res, err = from.collRead.collect(spec); err != nil {
				return err
			}
		}
		n = s.storeZ(c, &items[idx[0]], res)
		return nil
	})
	return n, wrap("zrangestore", err)
}

// ZInterCard is ZINTERCARD: the size of the intersection of keys, up to
// limit (0: no limit).
func (s *Store) ZInterCard(keys [][]byte, limit int64) (int64, error) {
	out, err := s.ZCombine(ZCombineSpec{Op: ZInter, Keys: keys})
	if err != nil {
		return 0, wrap("zintercard", err)
	}
	n := int64(len(out))
	if limit > 0 {
		n = min(n, limit)
	}
	return n, nil
}
