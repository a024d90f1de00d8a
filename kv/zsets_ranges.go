package kv

// Sorted sets' ranges (SPEC §13): ZRANGE by rank, score or lex, ZCOUNT,
// ZLEXCOUNT and ZREMRANGEBY*: walks of the score index of zsets.go.

import (
	"bytes"
)

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
