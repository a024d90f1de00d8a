package kv

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"pgregory.net/rapid"
)

// The metadata cache (Options.MetaCacheKeys) lets writes skip reading a key
// they do not need the value of. It must change nothing a command can see:
// these tests run the same commands on a store without the cache and on one
// whose cache holds one key per stripe (so it forgets all the time), and
// compare every result and, after every command, every byte on disk.

// sameStripeKeys returns n keys that share a stripe, so that a one-key-per-
// stripe cache keeps evicting them, and two that do not.
func sameStripeKeys(n int) []string {
	stripeOf := func(k string) uint64 { return hashKey([]byte(k)) % numStripes }
	want := stripeOf("k0")
	keys := []string{"k0"}
	for i := 1; len(keys) < n; i++ {
		if k := fmt.Sprintf("k%d", i); stripeOf(k) == want {
			keys = append(keys, k)
		}
	}
	for i := 1; len(keys) < n+2; i++ {
		if k := fmt.Sprintf("o%d", i); stripeOf(k) != want {
			keys = append(keys, k)
		}
	}
	return keys
}

// dump is every user record and expiry index entry, raw.
func (ts *testStore) dump() string {
	ts.t.Helper()
	iter, err := ts.db.NewIter(&pebble.IterOptions{LowerBound: userSpanStart, UpperBound: userSpanEnd})
	if err != nil {
		ts.t.Fatal(err)
	}
	var b bytes.Buffer
	for valid := iter.First(); valid; valid = iter.Next() {
		fmt.Fprintf(&b, "%q=%q\n", iter.Key(), iter.Value())
	}
	if err := iter.Close(); err != nil {
		ts.t.Fatal(err)
	}
	return b.String()
}

func TestMetaCacheChangesNothing_LOCK12(t *testing.T) {
	keys := sameStripeKeys(4)
	rapid.Check(t, func(rt *rapid.T) {
		plain := openTest(t, func(o *Options) { o.MetaCacheKeys = -1 })
		cached := openTest(t, func(o *Options) { o.MetaCacheKeys = numStripes })
		stores := []*testStore{plain, cached}
		key := rapid.SampledFrom(keys)
		deadline := func(rt *rapid.T) int64 {
			return plain.clock.ms(time.Duration(rapid.IntRange(-1, 3).Draw(rt, "ttl s")) * time.Second)
		}
		// Each op draws its arguments, then returns what runs them on a store.
		ops := map[string]func(rt *rapid.T) func(s *testStore) string{
			"set": func(rt *rapid.T) func(s *testStore) string {
				o := SetOptions{
					NX:    rapid.Bool().Draw(rt, "nx"),
					Get:   rapid.Bool().Draw(rt, "get"),
					Fence: rapid.Uint64Range(0, 4).Draw(rt, "fence"),
				}
				o.XX = !o.NX && rapid.Bool().Draw(rt, "xx")
				switch rapid.IntRange(0, 2).Draw(rt, "expiry") {
				case 1:
					o.Expiry = Expiry{Mode: ExpiryKeep}
				case 2:
					o.Expiry = Expiry{Mode: ExpiryAt, At: deadline(rt)}
				}
				k, v := key.Draw(rt, "key"), rapid.StringN(0, 3, 3).Draw(rt, "value")
				return func(s *testStore) string {
					r, err := s.Set([]byte(k), []byte(v), o)
					return fmt.Sprint(r.Written, string(r.Old), r.OldExists, err)
				}
			},
			"del": func(rt *rapid.T) func(s *testStore) string {
				a, b := key.Draw(rt, "a"), key.Draw(rt, "b")
				return func(s *testStore) string {
					n, err := s.Del(bs(a, b))
					return fmt.Sprint(n, err)
				}
			},
			"expire": func(rt *rapid.T) func(s *testStore) string {
				cond := ExpireCond(rapid.SampledFrom([]int{0, 1, 2, 4, 8}).Draw(rt, "cond"))
				k, at := key.Draw(rt, "key"), deadline(rt)
				return func(s *testStore) string {
					ok, err := s.ExpireAt([]byte(k), at, cond)
					return fmt.Sprint(ok, err)
				}
			},
			"persist": func(rt *rapid.T) func(s *testStore) string {
				k := key.Draw(rt, "key")
				return func(s *testStore) string {
					ok, err := s.Persist([]byte(k))
					return fmt.Sprint(ok, err)
				}
			},
			"incr": func(rt *rapid.T) func(s *testStore) string {
				k := key.Draw(rt, "key")
				return func(s *testStore) string {
					n, err := s.IncrBy([]byte(k), 1)
					return fmt.Sprint(n, err)
				}
			},
			"rename": func(rt *rapid.T) func(s *testStore) string {
				src, dst := key.Draw(rt, "src"), key.Draw(rt, "dst")
				return func(s *testStore) string { return fmt.Sprint(s.Rename([]byte(src), []byte(dst))) }
			},
			"getex": func(rt *rapid.T) func(s *testStore) string {
				k, at := key.Draw(rt, "key"), deadline(rt)
				return func(s *testStore) string {
					v, ok, err := s.GetEx([]byte(k), Expiry{Mode: ExpiryAt, At: at})
					return fmt.Sprint(string(v), ok, err)
				}
			},
			"mset": func(rt *rapid.T) func(s *testStore) string {
				a, b := key.Draw(rt, "a"), key.Draw(rt, "b")
				return func(s *testStore) string { return fmt.Sprint(s.MSet(bs(a, "1", b, "2"))) }
			},
			"flushall": func(*rapid.T) func(s *testStore) string {
				return func(s *testStore) string { return fmt.Sprint(s.FlushAll()) }
			},
			"sweep": func(*rapid.T) func(s *testStore) string {
				return func(s *testStore) string { return fmt.Sprint(s.sweep(0)) }
			},
			// A list emptied by its pops is deleted, and the stripe notes
			// it gone (metaTable.gone): every way of writing the key again
			// must be seen by the next command.
			"lpush": func(rt *rapid.T) func(s *testStore) string {
				k := key.Draw(rt, "key")
				return func(s *testStore) string {
					n, err := s.Push([]byte(k), true, false, bs("x"))
					return fmt.Sprint(n, err)
				}
			},
			"rpop": func(rt *rapid.T) func(s *testStore) string {
				a, b := key.Draw(rt, "a"), key.Draw(rt, "b")
				return func(s *testStore) string {
					k, out, err := s.MPop(bs(a, b), false, 1)
					return fmt.Sprint(string(k), len(out), err)
				}
			},
			"tx-set": func(rt *rapid.T) func(s *testStore) string {
				k := key.Draw(rt, "key")
				return func(s *testStore) string {
					var err1 error
					_, err := s.Tx(nil, func(tx *Store) { _, err1 = tx.Set([]byte(k), []byte("t"), SetOptions{}) })
					return fmt.Sprint(err, err1)
				}
			},
			"pipe-set": func(rt *rapid.T) func(s *testStore) string {
				k := key.Draw(rt, "key")
				return func(s *testStore) string {
					p := s.NewPipeline()
					_, err1 := p.View().Set([]byte(k), []byte("p"), SetOptions{})
					return fmt.Sprint(err1, p.Commit())
				}
			},
			"get": func(rt *rapid.T) func(s *testStore) string {
				k := key.Draw(rt, "key")
				return func(s *testStore) string {
					v, ok, err := s.Get([]byte(k))
					return fmt.Sprint(string(v), ok, err)
				}
			},
		}
		names := make([]string, 0, len(ops))
		for name := range ops {
			names = append(names, name)
		}
		slices.Sort(names) // rapid needs the same choices in the same order to shrink
		for step := range rapid.IntRange(1, 60).Draw(rt, "steps") {
			if d := rapid.IntRange(0, 1500).Draw(rt, "advance ms"); d > 0 {
				for _, s := range stores {
					s.clock.Advance(time.Duration(d) * time.Millisecond)
				}
			}
			name := rapid.SampledFrom(names).Draw(rt, "op")
			run := ops[name](rt)
			got := make([]string, len(stores))
			for i, s := range stores {
				got[i] = run(s)
			}
			if got[0] != got[1] {
				rt.Fatalf("step %d %s: without the cache %s, with it %s", step, name, got[0], got[1])
			}
			if a, b := plain.dump(), cached.dump(); a != b {
				rt.Fatalf("step %d %s: on disk without the cache:\n%swith it:\n%s", step, name, a, b)
			}
			if a, b := plain.Stats(), cached.Stats(); a.Keys != b.Keys || a.KeysWithExpiry != b.KeysWithExpiry || a.ExpiredTotal != b.ExpiredTotal {
				rt.Fatalf("step %d %s: counters without the cache %+v, with it %+v", step, name, a, b)
			}
		}
		plain.checkCounters()
		cached.checkCounters()
	})
}
