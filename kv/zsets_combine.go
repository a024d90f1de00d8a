package kv

// Sorted sets combined (SPEC §13): ZUNION, ZINTER, ZDIFF, their STORE
// forms, ZRANGESTORE and ZINTERCARD.

import (
	"bytes"
	"math"
	"slices"
)

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
