package kv

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// TestZSetsAndListsAgainstAModel runs random sorted-set and list commands
// on a store, alone, inside transactions and across reopens, and on a
// model (slices in memory): every reply, and after every step every key's
// elements, members, scores, ranks and size, must be the model's (SPEC
// §13). Scores are drawn from a small set with infinities and -0, so that
// ties (ordered by member) and the order-preserving score bytes are
// exercised.
func TestZSetsAndListsAgainstAModel(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) { runZLModel(t, seed, 1200) })
	}
}

type zlModel struct {
	lists map[string][]string
	zsets map[string]map[string]float64
}

func (m *zlModel) ordered(k string) []ZMember {
	var out []ZMember
	for mem, s := range m.zsets[k] {
		out = append(out, ZMember{[]byte(mem), s})
	}
	sortZ(out)
	return out
}

func (m *zlModel) isList(k string) bool { _, ok := m.lists[k]; return ok }
func (m *zlModel) isZSet(k string) bool { _, ok := m.zsets[k]; return ok }

func (m *zlModel) gc() {
	for k, l := range m.lists {
		if len(l) == 0 {
			delete(m.lists, k)
		}
	}
	for k, z := range m.zsets {
		if len(z) == 0 {
			delete(m.zsets, k)
		}
	}
}

func fmtZ(zs []ZMember) string {
	var b bytes.Buffer
	for _, z := range zs {
		fmt.Fprintf(&b, "%s=%v ", z.Member, z.Score)
	}
	return b.String()
}

func runZLModel(t *testing.T, seed uint64, steps int) {
	ts := openTest(t)
	r := rand.New(rand.NewPCG(seed, 7))
	m := &zlModel{lists: map[string][]string{}, zsets: map[string]map[string]float64{}}
	lkeys := []string{"l1", "l2", "l3"}
	zkeys := []string{"z1", "z2", "z3"}
	elems := []string{"a", "b", "c", "d", "e", "", "ab", "\x00x"}
	scores := []float64{math.Inf(-1), -2.5, -1, 0, math.Copysign(0, -1), 1, 1.5, 3, math.Inf(1)}
	pick := func(s []string) string { return s[r.IntN(len(s))] }
	idx := func() int64 { return int64(r.IntN(9) - 4) }
	wrongType := func(err error, want bool) bool { return errors.Is(err, ErrWrongType) == want }

	for step := range steps {
		var st *Store = ts.Store
		inTx := r.IntN(10) == 0
		var desc string
		check := func(ok bool, format string, args ...any) {
			t.Helper()
			if !ok {
				t.Fatalf("seed %d step %d (%s): "+format, append([]any{seed, step, desc}, args...)...)
			}
		}
		run := func(fn func(s *Store)) {
			if inTx {
				ts.mustTx(nil, fn)
			} else {
				fn(st)
			}
		}
		lk, lk2, zk, zk2 := pick(lkeys), pick(lkeys), pick(zkeys), pick(zkeys)
		switch op := r.IntN(20); op {
		case 0, 1:
			left := r.IntN(2) == 0
			vs := []string{pick(elems), pick(elems)}[:1+r.IntN(2)]
			desc = fmt.Sprintf("push %s left=%v %q", lk, left, vs)
			run(func(s *Store) {
				n, err := s.Push([]byte(lk), left, false, bs(vs...))
				for _, v := range vs {
					if left {
						m.lists[lk] = append([]string{v}, m.lists[lk]...)
					} else {
						m.lists[lk] = append(m.lists[lk], v)
					}
				}
				check(err == nil && n == int64(len(m.lists[lk])), "n=%d err=%v model %d", n, err, len(m.lists[lk]))
			})
		case 2:
			left := r.IntN(2) == 0
			count := int64(1 + r.IntN(3))
			desc = fmt.Sprintf("pop %s left=%v %d", lk, left, count)
			run(func(s *Store) {
				got, err := s.Pop([]byte(lk), left, count)
				l := m.lists[lk]
				n := min(int(count), len(l))
				var want []string
				if left {
					want, m.lists[lk] = l[:n], l[n:]
				} else {
					for i := range n {
						want = append(want, l[len(l)-1-i])
					}
					m.lists[lk] = l[:len(l)-n]
				}
				check(err == nil && slices.Equal(strs(got), want), "got %q want %q err %v", got, want, err)
			})
		case 3:
			i, v := idx(), pick(elems)
			desc = fmt.Sprintf("lset %s %d %q", lk, i, v)
			run(func(s *Store) {
				err := s.LSet([]byte(lk), i, []byte(v))
				l := m.lists[lk]
				j := i
				if j < 0 {
					j += int64(len(l))
				}
				switch {
				case l == nil:
					check(errors.Is(err, ErrNoSuchKey), "err %v, want no such key", err)
				case j < 0 || j >= int64(len(l)):
					check(errors.Is(err, ErrIndexOutOfRange), "err %v, want out of range", err)
				default:
					check(err == nil, "err %v", err)
					l[j] = v
				}
			})
		case 4:
			before, pivot, v := r.IntN(2) == 0, pick(elems), pick(elems)
			desc = fmt.Sprintf("linsert %s before=%v %q %q", lk, before, pivot, v)
			run(func(s *Store) {
				n, err := s.LInsert([]byte(lk), before, []byte(pivot), []byte(v))
				l := m.lists[lk]
				want := int64(0)
				if l != nil {
					want = -1
					if p := slices.Index(l, pivot); p >= 0 {
						if !before {
							p++
						}
						m.lists[lk] = slices.Insert(l, p, v)
						want = int64(len(m.lists[lk]))
					}
				}
				check(err == nil && n == want, "n=%d want %d err %v", n, want, err)
			})
		case 5:
			count, v := idx(), pick(elems)
			desc = fmt.Sprintf("lrem %s %d %q", lk, count, v)
			run(func(s *Store) {
				n, err := s.LRem([]byte(lk), count, []byte(v))
				l := m.lists[lk]
				var want int64
				limit := count
				if limit < 0 {
					limit = -limit
				}
				drop := map[int]bool{}
				for k := range l {
					i := k
					if count < 0 {
						i = len(l) - 1 - k
					}
					if l[i] == v && (limit == 0 || int64(len(drop)) < limit) {
						drop[i] = true
					}
				}
				var kept []string
				for i, e := range l {
					if !drop[i] {
						kept = append(kept, e)
					}
				}
				want = int64(len(drop))
				if l != nil {
					m.lists[lk] = kept
				}
				check(err == nil && n == want, "n=%d want %d err %v", n, want, err)
			})
		case 6:
			a, b := idx(), idx()
			desc = fmt.Sprintf("ltrim %s %d %d", lk, a, b)
			run(func(s *Store) {
				err := s.LTrim([]byte(lk), a, b)
				if l := m.lists[lk]; l != nil {
					x, y, ok := rankRange(a, b, int64(len(l)))
					if ok {
						m.lists[lk] = slices.Clone(l[x : y+1])
					} else {
						m.lists[lk] = nil
					}
				}
				check(err == nil, "err %v", err)
			})
		case 7:
			from, to := r.IntN(2) == 0, r.IntN(2) == 0
			desc = fmt.Sprintf("lmove %s %s %v %v", lk, lk2, from, to)
			run(func(s *Store) {
				v, ok, err := s.LMove([]byte(lk), []byte(lk2), from, to)
				l := m.lists[lk]
				if len(l) == 0 {
					check(err == nil && !ok, "ok=%v err %v from an empty list", ok, err)
					return
				}
				var e string
				if from {
					e, m.lists[lk] = l[0], l[1:]
				} else {
					e, m.lists[lk] = l[len(l)-1], l[:len(l)-1]
				}
				if to {
					m.lists[lk2] = append([]string{e}, m.lists[lk2]...)
				} else {
					m.lists[lk2] = append(m.lists[lk2], e)
				}
				check(err == nil && ok && string(v) == e, "got %q %v %v, want %q", v, ok, err, e)
			})
		case 8, 9, 10:
			var f ZAddFlags
			switch r.IntN(6) {
			case 0:
				f.NX = true
			case 1:
				f.XX = true
			case 2:
				f.GT = true
			case 3:
				f.LT = true
			}
			f.Incr = r.IntN(5) == 0
			n := 1
			if !f.Incr {
				n = 1 + r.IntN(3)
			}
			var sc []float64
			var ms []string
			for range n {
				sc, ms = append(sc, scores[r.IntN(len(scores))]), append(ms, pick(elems))
			}
			desc = fmt.Sprintf("zadd %s %+v %v %q", zk, f, sc, ms)
			run(func(s *Store) {
				res, err := s.ZAdd([]byte(zk), f, sc, bs(ms...))
				z := m.zsets[zk]
				if z == nil && !f.XX {
					z = map[string]float64{}
				}
				var want ZAddResult
				var nan bool
				next := maps_clone(z)
				for i, mem := range ms {
					score := sc[i]
					old, had := next[mem]
					switch {
					case had && f.NX, !had && f.XX:
						continue
					case had:
						if f.Incr {
							score += old
							if math.IsNaN(score) {
								nan = true
							}
						}
						if nan || (f.LT && score >= old) || (f.GT && score <= old) {
							continue
						}
						want.Processed++
						want.Score = score
						if score != old {
							want.Updated++
							next[mem] = score
						}
					default:
						want.Processed++
						want.Added++
						want.Score = score
						next[mem] = score
					}
				}
				if nan {
					check(errors.Is(err, ErrScoreNaN), "err %v, want NaN", err)
					return
				}
				if next != nil {
					m.zsets[zk] = next
				}
				check(err == nil && res == want, "got %+v %v, want %+v", res, err, want)
			})
		case 11:
			ms := []string{pick(elems), pick(elems)}
			desc = fmt.Sprintf("zrem %s %q", zk, ms)
			run(func(s *Store) {
				n, err := s.ZRem([]byte(zk), bs(ms...))
				var want int64
				for _, mem := range ms {
					if _, ok := m.zsets[zk][mem]; ok {
						delete(m.zsets[zk], mem)
						want++
					}
				}
				check(err == nil && n == want, "n=%d want %d err %v", n, want, err)
			})
		case 12:
			max, count := r.IntN(2) == 0, int64(1+r.IntN(3))
			desc = fmt.Sprintf("zpop %s max=%v %d", zk, max, count)
			run(func(s *Store) {
				got, err := s.ZPop([]byte(zk), max, count)
				o := m.ordered(zk)
				if max {
					slices.Reverse(o)
				}
				want := o[:min(int(count), len(o))]
				for _, z := range want {
					delete(m.zsets[zk], string(z.Member))
				}
				check(err == nil && fmtZ(got) == fmtZ(want), "got %s want %s err %v", fmtZ(got), fmtZ(want), err)
			})
		case 13:
			spec := randomSpec(r, scores)
			spec.Offset, spec.Limit, spec.Rev = 0, -1, false // ZREMRANGEBY* have no REV, no LIMIT
			desc = fmt.Sprintf("zremrange %s %+v", zk, spec)
			run(func(s *Store) {
				n, err := s.ZRemRange([]byte(zk), spec)
				want := modelRange(m.ordered(zk), spec)
				for _, z := range want {
					delete(m.zsets[zk], string(z.Member))
				}
				check(err == nil && n == int64(len(want)), "n=%d want %d (%s) err %v", n, len(want), fmtZ(want), err)
			})
		case 14:
			spec := randomSpec(r, scores)
			desc = fmt.Sprintf("zrange %s %+v", zk, spec)
			got, err := st.ZRange([]byte(zk), spec)
			want := modelRange(m.ordered(zk), spec)
			check(err == nil && fmtZ(got) == fmtZ(want), "got %s want %s err %v", fmtZ(got), fmtZ(want), err)
			if spec.By != ByRank {
				spec.Offset, spec.Limit = 0, -1
				n, err := st.ZCount([]byte(zk), spec)
				check(err == nil && n == int64(len(modelRange(m.ordered(zk), ZRangeSpec{By: spec.By, Score: spec.Score, Lex: spec.Lex, Limit: -1}))), "ZCOUNT %d err %v", n, err)
			}
		case 15:
			op := ZSetOp(r.IntN(3))
			agg := Aggregate(r.IntN(3))
			desc = fmt.Sprintf("zcombinestore %s %d %d %s %s", zk2, op, agg, zk, pick(zkeys))
			other := pick(zkeys)
			run(func(s *Store) {
				spec := ZCombineSpec{Op: op, Keys: bs(zk, other), Weights: []float64{2, -1}, Agg: agg}
				n, err := s.ZCombineStore([]byte(zk2), spec)
				res := modelCombine(m, spec)
				delete(m.zsets, zk2)
				if len(res) > 0 {
					m.zsets[zk2] = res
				}
				check(err == nil && n == int64(len(res)), "n=%d want %d err %v", n, len(res), err)
			})
		case 16:
			// A type clash: a list command on a zset, and the other way.
			desc = fmt.Sprintf("wrongtype %s %s", lk, zk)
			if m.isZSet(zk) {
				_, err := st.Push([]byte(zk), true, false, bs("x"))
				check(wrongType(err, true), "LPUSH on a zset: %v", err)
			}
			if m.isList(lk) {
				_, err := st.ZAdd([]byte(lk), ZAddFlags{}, []float64{1}, bs("x"))
				check(wrongType(err, true), "ZADD on a list: %v", err)
			}
		case 17:
			if r.IntN(4) == 0 {
				desc = "reopen"
				ts.reopen()
			}
		case 18:
			k := pick(append(lkeys, zkeys...))
			desc = "del " + k
			run(func(s *Store) {
				_, err := s.Del([][]byte{[]byte(k)})
				check(err == nil, "err %v", err)
				delete(m.lists, k)
				delete(m.zsets, k)
			})
		case 19:
			key, other := pick(zkeys), pick(zkeys)
			desc = fmt.Sprintf("zmpop %s %s", key, other)
			run(func(s *Store) {
				got, zs, err := s.ZMPop(bs(key, other), false, 2)
				var want []ZMember
				var wantKey string
				for _, k := range []string{key, other} {
					if o := m.ordered(k); len(o) > 0 {
						wantKey, want = k, o[:min(2, len(o))]
						for _, z := range want {
							delete(m.zsets[k], string(z.Member))
						}
						break
					}
				}
				check(err == nil && string(got) == wantKey && fmtZ(zs) == fmtZ(want), "got %s %s want %s %s err %v", got, fmtZ(zs), wantKey, fmtZ(want), err)
			})
		}
		m.gc()
		desc += " (state check)"
		for _, k := range lkeys {
			got, err := ts.LRange([]byte(k), 0, -1)
			want := m.lists[k]
			check(err == nil && slices.Equal(strs(got), want), "%s: LRANGE %q, model %q (%v)", k, got, want, err)
			n, _ := ts.LLen([]byte(k))
			check(n == int64(len(want)), "%s: LLEN %d, model %d", k, n, len(want))
			for i, e := range want {
				v, ok, _ := ts.LIndex([]byte(k), int64(i-len(want)))
				check(ok && string(v) == e, "%s: LINDEX %d = %q, model %q", k, i-len(want), v, e)
			}
		}
		for _, k := range zkeys {
			want := m.ordered(k)
			got, err := ts.ZRange([]byte(k), ZRangeSpec{By: ByRank, Start: 0, Stop: -1})
			check(err == nil && fmtZ(got) == fmtZ(want), "%s: ZRANGE %s, model %s (%v)", k, fmtZ(got), fmtZ(want), err)
			n, _ := ts.ZCard([]byte(k))
			check(n == int64(len(want)), "%s: ZCARD %d, model %d", k, n, len(want))
			for i, z := range want {
				rank, ok, _ := ts.ZRank([]byte(k), z.Member, i%2 == 1)
				wantRank := int64(i)
				if i%2 == 1 {
					wantRank = int64(len(want) - 1 - i)
				}
				check(ok && rank == wantRank, "%s: rank of %q = %d, want %d", k, z.Member, rank, wantRank)
			}
		}
	}
	ts.checkCounters()
}

func maps_clone(z map[string]float64) map[string]float64 {
	if z == nil {
		return nil
	}
	out := make(map[string]float64, len(z))
	for k, v := range z {
		out[k] = v
	}
	return out
}

func randomSpec(r *rand.Rand, scores []float64) ZRangeSpec {
	spec := ZRangeSpec{By: RangeBy(r.IntN(3)), Rev: r.IntN(2) == 0, Limit: -1}
	switch spec.By {
	case ByRank:
		spec.Start, spec.Stop = int64(r.IntN(9)-4), int64(r.IntN(9)-4)
	case ByScore:
		a, b := scores[r.IntN(len(scores))], scores[r.IntN(len(scores))]
		spec.Score = ScoreRange{Min: min(a, b), Max: max(a, b), MinEx: r.IntN(3) == 0, MaxEx: r.IntN(3) == 0}
	case ByLex:
		bound := func() LexBound {
			switch r.IntN(5) {
			case 0:
				return LexBound{Inf: -1}
			case 1:
				return LexBound{Inf: 1}
			}
			return LexBound{Value: []byte{"abcde"[r.IntN(5)]}, Ex: r.IntN(2) == 0}
		}
		spec.Lex = LexRange{Min: bound(), Max: bound()}
	}
	if spec.By != ByRank && r.IntN(2) == 0 {
		spec.Offset, spec.Limit = int64(r.IntN(3)), int64(r.IntN(4)-1)
	}
	return spec
}

// modelRange is spec's range of o (a zset in order), as Redis answers it;
// a lex range filters every member (the model's zsets may mix scores, in
// which case the store stops at the far end of the range, as Redis does,
// so a lex range is only checked on a zset of equal scores: see below).
func modelRange(o []ZMember, spec ZRangeSpec) []ZMember {
	var in []ZMember
	switch spec.By {
	case ByRank:
		a, b, ok := rankRange(spec.Start, spec.Stop, int64(len(o)))
		if !ok {
			return nil
		}
		if spec.Rev {
			o = slices.Clone(o)
			slices.Reverse(o)
		}
		return o[a : b+1]
	case ByScore:
		for _, z := range o {
			if spec.Score.has(z.Score) {
				in = append(in, z)
			}
		}
	case ByLex:
		if len(o) > 0 && o[0].Score != o[len(o)-1].Score {
			return lexWalk(o, spec.Lex, spec.Rev, spec.Offset, spec.Limit)
		}
		for _, z := range o {
			if spec.Lex.aboveMin(z.Member) && spec.Lex.belowMax(z.Member) {
				in = append(in, z)
			}
		}
	}
	if spec.Rev {
		slices.Reverse(in)
	}
	if spec.Offset < 0 || spec.Limit == 0 {
		return nil
	}
	in = in[min(int(spec.Offset), len(in)):]
	if spec.Limit > 0 {
		in = in[:min(int(spec.Limit), len(in))]
	}
	return in
}

// lexWalk is what a lex range gives on a zset of mixed scores: the walk in
// order, skipping members outside the range, stopping past its far end.
func lexWalk(o []ZMember, r LexRange, rev bool, off, limit int64) []ZMember {
	if r.empty() || off < 0 || limit == 0 {
		return nil
	}
	if rev {
		o = slices.Clone(o)
		slices.Reverse(o)
	}
	var in []ZMember
	for _, z := range o {
		if rev && !r.aboveMin(z.Member) || !rev && !r.belowMax(z.Member) {
			break
		}
		if r.aboveMin(z.Member) && r.belowMax(z.Member) {
			in = append(in, z)
		}
	}
	in = in[min(int(off), len(in)):]
	if limit > 0 {
		in = in[:min(int(limit), len(in))]
	}
	return in
}

func modelCombine(m *zlModel, spec ZCombineSpec) map[string]float64 {
	w := func(i int, s float64) float64 {
		v := s * spec.Weights[i]
		if math.IsNaN(v) {
			return 0
		}
		return v
	}
	agg := func(a, b float64) float64 {
		switch spec.Agg {
		case AggMin:
			return min(a, b)
		case AggMax:
			return max(a, b)
		}
		if s := a + b; !math.IsNaN(s) {
			return s
		}
		return 0
	}
	a, b := m.zsets[string(spec.Keys[0])], m.zsets[string(spec.Keys[1])]
	out := map[string]float64{}
	switch spec.Op {
	case ZUnion:
		for k, v := range a {
			out[k] = w(0, v)
		}
		for k, v := range b {
			if o, ok := out[k]; ok {
				out[k] = agg(o, w(1, v))
			} else {
				out[k] = w(1, v)
			}
		}
	case ZInter:
		for k, v := range a {
			if v2, ok := b[k]; ok {
				out[k] = agg(w(0, v), w(1, v2))
			}
		}
	case ZDiff:
		for k, v := range a {
			if _, ok := b[k]; !ok {
				out[k] = v
			}
		}
	}
	return out
}
