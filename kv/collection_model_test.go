package kv

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"
)

// TestCollectionsAgainstAModel runs random hash, set and key commands on
// a store with a fake clock, alone and inside transactions, with expiry,
// RENAME, COPY, the STORE forms and reopens, and runs each on a model
// (maps, sets and deadlines in memory) too: every reply and, after every
// step, every key's type, size and members must be the model's (SPEC §13).
func TestCollectionsAgainstAModel(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) { runModel(t, seed, 1500) })
	}
}

type mKey struct {
	typ    Type
	str    string
	hash   map[string]string
	set    map[string]bool
	expiry int64
}

type model struct {
	keys map[string]*mKey
	now  int64
}

// live is key's entry, nil when missing or expired (which it deletes).
func (m *model) live(k string) *mKey {
	e := m.keys[k]
	if e != nil && e.expiry != 0 && m.now > e.expiry {
		delete(m.keys, k)
		return nil
	}
	return e
}

func (m *model) of(k string, t Type) (*mKey, error) {
	e := m.live(k)
	if e != nil && e.typ != t {
		return nil, ErrWrongType
	}
	return e, nil
}

func (m *model) made(k string, t Type) *mKey {
	e := m.live(k)
	if e == nil {
		e = &mKey{typ: t, hash: map[string]string{}, set: map[string]bool{}}
		m.keys[k] = e
	}
	return e
}

func (m *model) gc(k string) {
	if e := m.keys[k]; e != nil && ((e.typ == TypeHash && len(e.hash) == 0) || (e.typ == TypeSet && len(e.set) == 0)) {
		delete(m.keys, k)
	}
}

func sortedKeys[V any](mp map[string]V) []string { return slices.Sorted(maps.Keys(mp)) }

func sortedStrs(b [][]byte) []string {
	s := strs(b)
	slices.Sort(s)
	return s
}

// modelStep is one command: run on the store and on the model, each
// giving a comparable reply.
type modelStep struct {
	name  string
	store func(s *Store) (string, error)
	model func(m *model) (string, error)
}

func runModel(t *testing.T, seed uint64, steps int) {
	ts := openTest(t)
	rng := rand.New(rand.NewPCG(seed, 99))
	m := &model{keys: map[string]*mKey{}, now: ts.clock.Now().UnixMilli()}
	keyNames := []string{"a", "b", "c", "d"}
	key := func() string { return keyNames[rng.IntN(len(keyNames))] }
	member := func() string { return "m" + strconv.Itoa(rng.IntN(12)) }
	members := func() []string {
		out := make([]string, 1+rng.IntN(4))
		for i := range out {
			out[i] = member()
		}
		return out
	}
	b := func(ss []string) [][]byte { return bs(ss...) }
	show := func(ss []string) string { return fmt.Sprint(ss) }

	randomStep := func() modelStep {
		k, k2 := key(), key()
		switch rng.IntN(19) {
		case 0:
			ms := members()
			var pairs []string
			for _, f := range ms {
				pairs = append(pairs, f, strconv.Itoa(rng.IntN(100)))
			}
			return modelStep{"HSET " + k + show(pairs), func(s *Store) (string, error) {
				n, err := s.HSet([]byte(k), b(pairs))
				return fmt.Sprint(n), err
			}, func(m *model) (string, error) {
				if _, err := m.of(k, TypeHash); err != nil {
					return "", err
				}
				e, n := m.made(k, TypeHash), 0
				for i := 0; i < len(pairs); i += 2 {
					if _, ok := e.hash[pairs[i]]; !ok {
						n++
					}
					e.hash[pairs[i]] = pairs[i+1]
				}
				return fmt.Sprint(n), nil
			}}
		case 1:
			fs := members()
			return modelStep{"HDEL " + k + show(fs), func(s *Store) (string, error) {
				n, err := s.HDel([]byte(k), b(fs))
				return fmt.Sprint(n), err
			}, func(m *model) (string, error) {
				e, err := m.of(k, TypeHash)
				if err != nil || e == nil {
					return "0", err
				}
				n := 0
				for _, f := range fs {
					if _, ok := e.hash[f]; ok {
						delete(e.hash, f)
						n++
					}
				}
				m.gc(k)
				return fmt.Sprint(n), nil
			}}
		case 2:
			f, d := member(), int64(rng.IntN(7)-3)
			return modelStep{"HINCRBY " + k + " " + f, func(s *Store) (string, error) {
				n, err := s.HIncrBy([]byte(k), []byte(f), d)
				return fmt.Sprint(n), err
			}, func(m *model) (string, error) {
				if _, err := m.of(k, TypeHash); err != nil {
					return "", err
				}
				e := m.made(k, TypeHash)
				old, ok := e.hash[f]
				n := int64(0)
				if ok {
					v, err := strconv.ParseInt(old, 10, 64)
					if err != nil {
						m.gc(k)
						return "", ErrHashNotInteger
					}
					n = v
				}
				e.hash[f] = strconv.FormatInt(n+d, 10)
				return fmt.Sprint(n + d), nil
			}}
		case 3:
			return modelStep{"HGETALL " + k, func(s *Store) (string, error) {
				out, err := s.HGetAll([]byte(k), true, true)
				var pairs []string
				for i := 0; i+1 < len(out); i += 2 {
					pairs = append(pairs, string(out[i])+"="+string(out[i+1]))
				}
				slices.Sort(pairs)
				n, _ := s.HLen([]byte(k))
				return fmt.Sprint(pairs, n), err
			}, func(m *model) (string, error) {
				e, err := m.of(k, TypeHash)
				var pairs []string
				if e != nil {
					for f, v := range e.hash {
						pairs = append(pairs, f+"="+v)
					}
				}
				slices.Sort(pairs)
				return fmt.Sprint(pairs, len(pairs)), err
			}}
		case 4:
			f := member()
			return modelStep{"HGET " + k + " " + f, func(s *Store) (string, error) {
				v, ok, err := s.HGet([]byte(k), []byte(f))
				return fmt.Sprint(string(v), ok), err
			}, func(m *model) (string, error) {
				e, err := m.of(k, TypeHash)
				if e == nil {
					return fmt.Sprint("", false), err
				}
				v, ok := e.hash[f]
				return fmt.Sprint(v, ok), err
			}}
		case 5, 6:
			ms := members()
			return modelStep{"SADD " + k + show(ms), func(s *Store) (string, error) {
				n, err := s.SAdd([]byte(k), b(ms))
				return fmt.Sprint(n), err
			}, func(m *model) (string, error) {
				if _, err := m.of(k, TypeSet); err != nil {
					return "", err
				}
				e, n := m.made(k, TypeSet), 0
				for _, x := range ms {
					if !e.set[x] {
						e.set[x] = true
						n++
					}
				}
				return fmt.Sprint(n), nil
			}}
		case 7:
			ms := members()
			return modelStep{"SREM " + k + show(ms), func(s *Store) (string, error) {
				n, err := s.SRem([]byte(k), b(ms))
				return fmt.Sprint(n), err
			}, func(m *model) (string, error) {
				e, err := m.of(k, TypeSet)
				if err != nil || e == nil {
					return "0", err
				}
				n := 0
				for _, x := range ms {
					if e.set[x] {
						delete(e.set, x)
						n++
					}
				}
				m.gc(k)
				return fmt.Sprint(n), nil
			}}
		case 8:
			return modelStep{"SMEMBERS " + k, func(s *Store) (string, error) {
				out, err := s.SMembers([]byte(k))
				n, _ := s.SCard([]byte(k))
				return fmt.Sprint(sortedStrs(out), n), err
			}, func(m *model) (string, error) {
				e, err := m.of(k, TypeSet)
				if e == nil {
					return fmt.Sprint([]string{}, 0), err
				}
				return fmt.Sprint(sortedKeys(e.set), len(e.set)), err
			}}
		case 9:
			// SPOP's choice is the store's: the model takes what it popped.
			var popped []string
			cnt := int64(1 + rng.IntN(3))
			return modelStep{"SPOP " + k, func(s *Store) (string, error) {
				out, err := s.SPop([]byte(k), cnt)
				popped = strs(out)
				return fmt.Sprint(len(out)), err
			}, func(m *model) (string, error) {
				e, err := m.of(k, TypeSet)
				if err != nil || e == nil {
					return "0", err
				}
				for _, x := range popped {
					if !e.set[x] {
						return "", fmt.Errorf("SPOP popped %q, not a member", x)
					}
					delete(e.set, x)
				}
				want := min(int(cnt), len(e.set)+len(popped))
				m.gc(k)
				return fmt.Sprint(want), nil
			}}
		case 10:
			x := member()
			return modelStep{"SMOVE " + k + " " + k2 + " " + x, func(s *Store) (string, error) {
				ok, err := s.SMove([]byte(k), []byte(k2), []byte(x))
				return fmt.Sprint(ok), err
			}, func(m *model) (string, error) {
				e, err := m.of(k, TypeSet)
				if err != nil || e == nil {
					return "false", err
				}
				if _, err := m.of(k2, TypeSet); err != nil {
					return "", err
				}
				if !e.set[x] {
					return "false", nil
				}
				if k != k2 {
					delete(e.set, x)
					m.gc(k)
					m.made(k2, TypeSet).set[x] = true
				}
				return "true", nil
			}}
		case 11, 12:
			op := SetOp(rng.IntN(3))
			ks := []string{k, k2, key()}[:1+rng.IntN(3)]
			dst := key()
			store := rng.IntN(2) == 0
			return modelStep{fmt.Sprint("SETOP ", op, store, dst, ks), func(s *Store) (string, error) {
				if store {
					n, err := s.SetAlgebraStore(op, []byte(dst), b(ks))
					return fmt.Sprint(n), err
				}
				out, err := s.SetAlgebra(op, b(ks), 0)
				return fmt.Sprint(sortedStrs(out)), err
			}, func(m *model) (string, error) {
				var sets []map[string]bool
				for _, x := range ks {
					e, err := m.of(x, TypeSet)
					if err != nil {
						return "", err
					}
					if e == nil {
						sets = append(sets, nil)
					} else {
						sets = append(sets, e.set)
					}
				}
				res := map[string]bool{}
				switch op {
				case SetInter:
					for x := range sets[0] {
						in := true
						for _, st := range sets[1:] {
							in = in && st[x]
						}
						if in {
							res[x] = true
						}
					}
				case SetUnion:
					for _, st := range sets {
						for x := range st {
							res[x] = true
						}
					}
				case SetDiff:
					for x := range sets[0] {
						in := false
						for _, st := range sets[1:] {
							in = in || st[x]
						}
						if !in {
							res[x] = true
						}
					}
				}
				if !store {
					return fmt.Sprint(sortedKeys(res)), nil
				}
				delete(m.keys, dst)
				if len(res) > 0 {
					m.made(dst, TypeSet).set = res
				}
				return fmt.Sprint(len(res)), nil
			}}
		case 13:
			return modelStep{"DEL " + k, func(s *Store) (string, error) {
				n, err := s.Del(bs(k))
				return fmt.Sprint(n), err
			}, func(m *model) (string, error) {
				if m.live(k) == nil {
					return "0", nil
				}
				delete(m.keys, k)
				return "1", nil
			}}
		case 14:
			d := int64(rng.IntN(3000))
			return modelStep{"PEXPIRE " + k, func(s *Store) (string, error) {
				ok, err := s.ExpireAt([]byte(k), s.nowMs()+d, CondNone)
				return fmt.Sprint(ok), err
			}, func(m *model) (string, error) {
				e := m.live(k)
				if e == nil {
					return "false", nil
				}
				e.expiry = m.now + d
				if d == 0 {
					delete(m.keys, k)
				}
				return "true", nil
			}}
		case 15:
			return modelStep{"RENAME " + k + " " + k2, func(s *Store) (string, error) {
				err := s.Rename([]byte(k), []byte(k2))
				return "", err
			}, func(m *model) (string, error) {
				e := m.live(k)
				if e == nil {
					return "", ErrNoSuchKey
				}
				if k != k2 {
					m.keys[k2] = e
					delete(m.keys, k)
				}
				return "", nil
			}}
		case 16:
			if k == k2 {
				k2 = k + "copy"
			}
			return modelStep{"COPY " + k + " " + k2, func(s *Store) (string, error) {
				ok, err := s.Copy([]byte(k), []byte(k2), true)
				return fmt.Sprint(ok), err
			}, func(m *model) (string, error) {
				e := m.live(k)
				if e == nil {
					return "false", nil
				}
				c := *e
				c.hash, c.set = maps.Clone(e.hash), maps.Clone(e.set)
				m.keys[k2] = &c
				return "true", nil
			}}
		case 17:
			return modelStep{"SET " + k, func(s *Store) (string, error) {
				_, err := s.Set([]byte(k), []byte("str"), SetOptions{})
				return "", err
			}, func(m *model) (string, error) {
				m.keys[k] = &mKey{typ: TypeString, str: "str"}
				return "", nil
			}}
		default:
			f := member()
			return modelStep{"HSTRLEN/SISMEMBER " + k, func(s *Store) (string, error) {
				typ, _ := s.Type([]byte(k))
				switch typ {
				case "hash":
					n, err := s.HStrLen([]byte(k), []byte(f))
					return fmt.Sprint(typ, n), err
				case "set":
					ok, err := s.SIsMember([]byte(k), []byte(f))
					return fmt.Sprint(typ, ok), err
				}
				return typ, nil
			}, func(m *model) (string, error) {
				e := m.live(k)
				switch {
				case e == nil:
					return "none", nil
				case e.typ == TypeHash:
					return fmt.Sprint("hash", len(e.hash[f])), nil
				case e.typ == TypeSet:
					return fmt.Sprint("set", e.set[f]), nil
				}
				return "string", nil
			}}
		}
	}

	check := func(step int, what string) {
		for _, k := range append(keyNames, "acopy", "bcopy", "ccopy", "dcopy") {
			e := m.live(k)
			typ, err := ts.Type([]byte(k))
			if err != nil {
				t.Fatal(err)
			}
			want := "none"
			if e != nil {
				want = e.typ.String()
			}
			if typ != want {
				t.Fatalf("step %d (%s): TYPE %s = %s, model %s", step, what, k, typ, want)
			}
			switch {
			case e == nil:
			case e.typ == TypeHash:
				all, _ := ts.HGetAll([]byte(k), true, false)
				if n, _ := ts.HLen([]byte(k)); n != int64(len(e.hash)) || !slices.Equal(sortedStrs(all), sortedKeys(e.hash)) {
					t.Fatalf("step %d (%s): %s HLEN %d fields %q, model %v", step, what, k, n, all, e.hash)
				}
			case e.typ == TypeSet:
				all, _ := ts.SMembers([]byte(k))
				if n, _ := ts.SCard([]byte(k)); n != int64(len(e.set)) || !slices.Equal(sortedStrs(all), sortedKeys(e.set)) {
					t.Fatalf("step %d (%s): %s SCARD %d members %q, model %v", step, what, k, n, all, e.set)
				}
			}
		}
	}
	run := func(st modelStep, s *Store, step int) {
		got, gerr := st.store(s)
		want, werr := st.model(m)
		if !errors.Is(gerr, werr) && (gerr == nil || werr == nil || gerr.Error() != werr.Error()) {
			t.Fatalf("step %d %s: store error %v, model %v", step, st.name, gerr, werr)
		}
		if gerr == nil && got != want {
			t.Fatalf("step %d %s: store %q, model %q", step, st.name, got, want)
		}
	}
	for step := range steps {
		switch r := rng.IntN(20); {
		case r == 0:
			d := time.Duration(rng.IntN(1500)) * time.Millisecond
			ts.clock.Advance(d)
			m.now = ts.clock.Now().UnixMilli()
		case r == 1:
			// A transaction of a few commands: each sees the ones
			// before; the model runs them in order.
			var sts []modelStep
			for range 1 + rng.IntN(5) {
				sts = append(sts, randomStep())
			}
			if _, err := ts.Tx(nil, func(tx *Store) {
				for i, st := range sts {
					run(st, tx, step*100+i)
				}
			}); err != nil {
				t.Fatal(err)
			}
		case r == 2 && step%50 == 0:
			ts.reopen()
		default:
			run(randomStep(), ts.Store, step)
		}
		if rng.IntN(4) == 0 {
			if _, err := ts.reclaim(reclaimRound); err != nil {
				t.Fatal(err)
			}
		}
		check(step, "")
	}
	ts.checkCounters()
}
