package kv

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

// metaTable against a model, with hashes drawn from a few values so that
// keys share homes, share whole hashes and wrap around the table's end: it
// never answers a key with another's metadata, finds every key it holds
// (a key just put, and every other when nothing had to be evicted for it),
// forgets a deleted key, and holds at most its limit.
func TestMetaTableAgainstAModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		limit := rapid.IntRange(1, 12).Draw(rt, "limit")
		keys := make([]string, 24)
		hashes := map[string]uint64{}
		for i := range keys {
			keys[i] = fmt.Sprint("k", i)
			hashes[keys[i]] = rapid.Uint64Range(0, 5).Draw(rt, "home")*numStripes + 7
		}
		var tb metaTable
		model := map[string]keyMeta{} // what tb may hold
		values := map[string]string{} // with the values of the valued
		check := func(op string) {
			held := 0
			for _, k := range keys {
				m, v, ok := tb.getValue(hashes[k], []byte(k))
				if !ok {
					continue
				}
				held++
				if want, in := model[k]; !in || m != want || string(v) != values[k] {
					rt.Fatalf("after %s: %s = %+v %q, %v; want %+v %q, %v", op, k, m, v, ok, want, values[k], in)
				}
			}
			if held != tb.n || tb.n > limit {
				rt.Fatalf("after %s: finds %d keys, counts %d, limit %d", op, held, tb.n, limit)
			}
			for k := range model {
				if _, ok := tb.get(hashes[k], []byte(k)); !ok {
					delete(model, k) // evicted
				}
			}
		}
		for range rapid.IntRange(1, 200).Draw(rt, "ops") {
			k := rapid.SampledFrom(keys).Draw(rt, "key")
			h := hashes[k]
			switch rapid.IntRange(0, 3).Draw(rt, "op") {
			case 0:
				tb.del(h, []byte(k))
				delete(model, k)
				if _, ok := tb.get(h, []byte(k)); ok {
					rt.Fatalf("%s found after del", k)
				}
			case 1:
				tb.reset()
				clear(model)
			default:
				m := keyMeta{expiry: rapid.Int64Range(0, 3).Draw(rt, "expiry"), fence: rapid.Uint64Range(0, 3).Draw(rt, "fence")}
				var v []byte
				if m.valued = rapid.Bool().Draw(rt, "valued"); m.valued {
					v = []byte(rapid.SampledFrom([]string{"", "x", "yy", "a longer value"}).Draw(rt, "value"))
				}
				_, had := model[k]
				roomy := had || tb.n < limit
				before := len(model)
				tb.put(h, []byte(k), m, v, limit)
				model[k], values[k] = m, string(v)
				if got, ok := tb.get(h, []byte(k)); !ok || got != m {
					rt.Fatalf("%s = %+v, %v just after put of %+v", k, got, ok, m)
				}
				check("put " + k)
				if roomy && len(model) < before+btoi(!had) {
					rt.Fatalf("put %s with room evicted a key", k)
				}
				continue
			}
			check("op on " + k)
		}
	})
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
