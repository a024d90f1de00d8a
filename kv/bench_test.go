package kv

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/tenure-db/tenure/internal/testenv"
)

const benchKeys = 10000

// openBench opens a Store on the real disk, with benchKeys keys of 16-byte
// values, and returns it with the keys.
func openBench(b *testing.B, mode FsyncMode) (*Store, [][]byte) {
	b.Helper()
	s, err := Open(b.TempDir(), Options{Fsync: mode, Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	keys := make([][]byte, benchKeys)
	value := []byte("0123456789abcdef")
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key:%08d", i)
		if _, err := s.Set(keys[i], value, SetOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	return s, keys
}

func BenchmarkGet(b *testing.B) {
	s, keys := openBench(b, FsyncEverysec)
	b.ReportAllocs()
	b.ResetTimer()
	defer testenv.ReportCPU(b)()
	for i := 0; b.Loop(); i++ {
		if _, ok, err := s.Get(keys[i%len(keys)]); err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
}

func BenchmarkSet(b *testing.B) {
	s, keys := openBench(b, FsyncEverysec)
	value := []byte("fedcba9876543210")
	b.ReportAllocs()
	b.ResetTimer()
	defer testenv.ReportCPU(b)()
	for i := 0; b.Loop(); i++ {
		if _, err := s.Set(keys[i%len(keys)], value, SetOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGetParallel(b *testing.B) {
	s, keys := openBench(b, FsyncEverysec)
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := int(next.Add(7919))
		for pb.Next() {
			i++
			if _, _, err := s.Get(keys[i%len(keys)]); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkSetParallel(b *testing.B) {
	s, keys := openBench(b, FsyncEverysec)
	value := []byte("fedcba9876543210")
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := int(next.Add(7919))
		for pb.Next() {
			i++
			if _, err := s.Set(keys[i%len(keys)], value, SetOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkSetFsyncAlways: 32 writers per CPU, each write waiting for an
// fsync it shares with the others.
func BenchmarkSetFsyncAlways(b *testing.B) {
	s, keys := openBench(b, FsyncAlways)
	value := []byte("fedcba9876543210")
	var next atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := int(next.Add(7919))
		for pb.Next() {
			i++
			if _, err := s.Set(keys[i%len(keys)], value, SetOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkGetFunc is BenchmarkGet without the copy of the value, as GET
// replies: it should allocate nothing.
func BenchmarkGetFunc(b *testing.B) {
	s, keys := openBench(b, FsyncEverysec)
	var n int
	b.ReportAllocs()
	b.ResetTimer()
	defer testenv.ReportCPU(b)()
	for i := 0; b.Loop(); i++ {
		if ok, err := s.GetFunc(keys[i%len(keys)], func(v []byte) { n += len(v) }); err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
}

// BenchmarkPipelineSet is BenchmarkSet through pipelines of 16 SETs, one
// commit each, as a client's pipeline of 16 reaches the store.
func BenchmarkPipelineSet(b *testing.B) {
	s, keys := openBench(b, FsyncEverysec)
	value := []byte("fedcba9876543210")
	p := s.NewPipeline()
	b.ReportAllocs()
	b.ResetTimer()
	defer testenv.ReportCPU(b)()
	for i := 0; b.Loop(); i++ {
		if _, err := p.View().Set(keys[(i*7919)%len(keys)], value, SetOptions{}); err != nil {
			b.Fatal(err)
		}
		if i%16 == 15 {
			if err := p.Commit(); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := p.Commit(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkPebbleFloor is the floor under BenchmarkPipelineSet and
// BenchmarkSet: Pebble alone, with its default options as the store opens
// it, committing the same data keys and 16-byte values in batches of 1 and
// of 16 without a sync (so fewer WAL write(2)s than the store makes). No
// parsing, no metadata cache, no stripes, no network. Issue 19's note
// compares it with Redis's whole cost of a pipelined SET; run it pinned to
// one CPU, as bench/ runs the servers:
//
//	GOMAXPROCS=1 taskset -c 1 go test -run '^$' -bench PebbleFloor ./kv
func BenchmarkPebbleFloor(b *testing.B) {
	for _, size := range []int{1, 16} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			db, err := pebble.Open(b.TempDir(), &pebble.Options{
				FormatMajorVersion: pebble.FormatNewest,
				Logger:             pebbleLogger{quietLogger()},
			})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			dks := make([][]byte, benchKeys)
			value := record{value: []byte("fedcba9876543210")}
			encoded := make([]byte, value.encodedLen())
			value.encodeTo(encoded)
			for i := range dks {
				k := fmt.Appendf(nil, "key:%08d", i)
				dks[i] = dataKey(hashKey(k), k)
				if err := db.Set(dks[i], encoded, pebble.NoSync); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			defer testenv.ReportCPU(b)()
			batch := db.NewBatch()
			for i := 0; b.Loop(); i++ {
				if err := batch.Set(dks[(i*7919)%len(dks)], encoded, nil); err != nil {
					b.Fatal(err)
				}
				if batch.Count() == uint32(size) {
					if err := batch.Commit(pebble.NoSync); err != nil {
						b.Fatal(err)
					}
					batch.Reset()
				}
			}
			_ = batch.Close()
		})
	}
}

// BenchmarkHSetManyHashes is the bench's HSET (bench/collections.go): 1,000
// hashes filled with 100 fields each, then HSET of one of 200 fields, so
// that half the writes add a field; the store's files, not only its
// memtable, hold the hashes by the time it measures.
func BenchmarkHSetManyHashes(b *testing.B) {
	const hashes, fields = 1000, 100
	s, err := Open(b.TempDir(), Options{Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	key := func(i int) []byte { return fmt.Appendf(nil, "hash:%04d", i) }
	field := func(i int) []byte { return fmt.Appendf(nil, "field:%03d", i) }
	value := []byte("0123456789abcdef0123456789abcdef")
	for k := range hashes {
		for f := range fields {
			if _, err := s.HSet(key(k), [][]byte{field(f), value}); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := s.db.Flush(); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	b.ReportAllocs()
	b.ResetTimer()
	defer testenv.ReportCPU(b)()
	for b.Loop() {
		if _, err := s.HSet(key(rng.IntN(hashes)), [][]byte{field(rng.IntN(2 * fields)), value}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTxCompareAndSet is the bench's EVALSHA scenario without Lua
// (bench/keyspace.go's casScript): a transaction that GETs a key and SETs
// it when the value is the one expected, as a script's redis.call pair.
func BenchmarkTxCompareAndSet(b *testing.B) {
	s, keys := openBench(b, FsyncEverysec)
	value := []byte("0123456789abcdef")
	b.ReportAllocs()
	b.ResetTimer()
	defer testenv.ReportCPU(b)()
	for i := 0; b.Loop(); i++ {
		k := keys[i%len(keys)]
		var swapped bool
		_, err := s.Tx(nil, func(tx *Store) {
			v, ok, err := tx.Get(k)
			if err != nil || !ok || string(v) != string(value) {
				return
			}
			_, err = tx.Set(k, value, SetOptions{})
			swapped = err == nil
		})
		if err != nil || !swapped {
			b.Fatal(swapped, err)
		}
	}
}
