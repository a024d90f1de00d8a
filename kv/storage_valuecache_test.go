package kv

import (
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// The values the metadata cache keeps (GET answers from them) against
// Pebble: after every write — on its own, in a pipeline, in a
// transaction, of every kind that changes a string, its deadline or its
// encoding — each value the cache keeps is the one on disk, byte for byte,
// with the same encoding and deadline, and GET answers what a model of
// the keyspace says.
func TestCachedValuesAgreeWithDisk(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		ts := openTest(t, func(o *Options) { o.MetaCacheKeys = rapid.SampledFrom([]int{0, 256, 512}).Draw(rt, "cache") })
		keys := []string{"a", "b", "c", "d"}
		model := map[string]string{}
		long := strings.Repeat("L", maxCachedValue+1)
		key := func(label string) []byte { return []byte(rapid.SampledFrom(keys).Draw(rt, label)) }
		value := func() []byte {
			return []byte(rapid.SampledFrom([]string{"", "1", "22", "abc", long}).Draw(rt, "value"))
		}
		// one runs a write on st, which is the store, a pipeline's view or
		// a transaction's, and keeps the model in step.
		one := func(st *Store, op int) {
			k := key("key")
			var err error
			switch op {
			case 0:
				v := value()
				if _, err = st.Set(k, v, SetOptions{}); err == nil {
					model[string(k)] = string(v)
				}
			case 1:
				v := value()
				if _, err = st.Append(k, v); err == nil {
					model[string(k)] += string(v)
				}
			case 2:
				var n int64
				if n, err = st.IncrBy(k, 1); err == nil {
					model[string(k)] = fmt.Sprint(n)
				} else if err == ErrNotInteger {
					err = nil
				}
			case 3:
				if _, err = st.SetRange(k, 1, []byte("Z")); err == nil {
					b := []byte(model[string(k)])
					for len(b) < 2 {
						b = append(b, 0)
					}
					b[1] = 'Z'
					model[string(k)] = string(b)
				}
			case 4:
				if _, err = st.Del([][]byte{k}); err == nil {
					delete(model, string(k))
				}
			case 5:
				_, err = st.ExpireAt(k, ts.nowMs()+3_600_000, 0)
			case 6:
				_, err = st.Persist(k)
			case 7:
				var had bool
				if _, had, err = st.GetDel(k); err == nil && had {
					delete(model, string(k))
				}
			case 8:
				if _, err = st.SetBit(k, 3, true); err == nil {
					b := []byte(model[string(k)])
					if len(b) == 0 {
						b = []byte{0}
					}
					b[0] |= 1 << 4
					model[string(k)] = string(b)
				}
			}
			if err != nil {
				rt.Fatalf("op %d on %s: %v", op, k, err)
			}
		}
		check := func(what string) {
			for _, k := range keys {
				it := ts.newItem([]byte(k))
				it.st.Lock()
				m, v, cached := it.st.meta.getValue(dataKeyHash(it.dk), it.key)
				if err := loadFrom(ts.db, &it, ts.nowMs(), true); err != nil {
					rt.Fatal(err)
				}
				it.st.Unlock()
				disk := it.cur
				if cached && m.valued && (!disk.present || string(v) != string(disk.rec.value) ||
					m.raw != disk.rec.raw || m.expiry != disk.rec.expiry || m.fence != disk.rec.fence) {
					rt.Fatalf("after %s: %s cached %q %+v; on disk %q %+v (present %v)", what, k, v, m, disk.rec.value, disk.rec, disk.present)
				}
				got, ok, err := ts.Get([]byte(k))
				want, in := model[k]
				if err != nil || ok != in || string(got) != want {
					rt.Fatalf("after %s: GET %s = %q, %v, %v; want %q, %v", what, k, got, ok, err, want, in)
				}
			}
		}
		for range rapid.IntRange(1, 40).Draw(rt, "steps") {
			switch rapid.IntRange(0, 3).Draw(rt, "how") {
			case 0:
				one(ts.Store, rapid.IntRange(0, 8).Draw(rt, "op"))
			case 1:
				p := ts.NewPipeline()
				for range rapid.IntRange(1, 5).Draw(rt, "n") {
					one(p.View(), rapid.IntRange(0, 8).Draw(rt, "op"))
					if rapid.Bool().Draw(rt, "get") { // a read of the pipeline's own write
						k := key("read")
						got, ok, err := p.View().Get(k)
						want, in := model[string(k)]
						if err != nil || ok != in || string(got) != want {
							rt.Fatalf("pipeline GET %s = %q, %v, %v; want %q, %v", k, got, ok, err, want, in)
						}
					}
				}
				if err := p.Commit(); err != nil {
					rt.Fatal(err)
				}
			case 2:
				if _, err := ts.Tx(nil, func(tx *Store) {
					for range rapid.IntRange(1, 4).Draw(rt, "n") {
						one(tx, rapid.IntRange(0, 8).Draw(rt, "op"))
					}
				}); err != nil {
					rt.Fatal(err)
				}
			case 3:
				if err := ts.FlushAll(); err != nil {
					rt.Fatal(err)
				}
				clear(model)
			}
			check("step")
		}
	})
}

// A GET outside a pipeline reads a key the cache does not hold from
// Pebble and leaves its value there; the next GET is answered from it.
func TestGetCachesWhatItRead(t *testing.T) {
	ts := openTest(t)
	if _, err := ts.Set([]byte("k"), []byte("v"), SetOptions{}); err != nil {
		t.Fatal(err)
	}
	it := ts.newItem([]byte("k"))
	it.st.meta.reset()
	if v, ok, err := ts.Get([]byte("k")); err != nil || !ok || string(v) != "v" {
		t.Fatalf("GET = %q, %v, %v", v, ok, err)
	}
	it.st.Lock()
	m, v, ok := it.st.meta.getValue(dataKeyHash(it.dk), it.key)
	it.st.Unlock()
	if !ok || !m.valued || string(v) != "v" {
		t.Fatalf("after GET the cache holds %q, %+v, %v; want \"v\"", v, m, ok)
	}
}
