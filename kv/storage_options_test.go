package kv

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestPebbleReadOptions: Pebble's block cache holds more than its own
// 8 MiB default (BlockCacheBytes bounds it), and a read of a key no file
// holds is answered by the files' Bloom filters, not their blocks.
func TestPebbleReadOptions(t *testing.T) {
	const keys, valueLen = 12_000, 1 << 10 // 12 MiB of values, longer than the metadata cache keeps
	fill := func(t *testing.T, o Options) *Store {
		o.Logger = quietLogger()
		s, err := Open(t.TempDir(), o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		rng := rand.New(rand.NewPCG(1, 2))
		value := make([]byte, valueLen)
		for i := range keys {
			for j := range value {
				value[j] = byte(rng.Uint32())
			}
			if _, err := s.Set(fmt.Appendf(nil, "key:%06d", i), value, SetOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.db.Flush(); err != nil {
			t.Fatal(err)
		}
		for i := range keys {
			if _, ok, err := s.Get(fmt.Appendf(nil, "key:%06d", i)); err != nil || !ok {
				t.Fatalf("key %d: %v %v", i, ok, err)
			}
		}
		return s
	}
	t.Run("BlockCacheHoldsWhatWasRead", func(t *testing.T) {
		s := fill(t, Options{})
		if got := s.db.Metrics().BlockCache.Size; got <= 8<<20 {
			t.Errorf("block cache holds %d bytes after reading %d MiB: no more than Pebble's 8 MiB default", got, keys*valueLen>>20)
		}
		small := fill(t, Options{BlockCacheBytes: 4 << 20})
		if got := small.db.Metrics().BlockCache.Size; got > 4<<20 {
			t.Errorf("with BlockCacheBytes 4 MiB the block cache holds %d bytes", got)
		}
	})
	t.Run("BloomFiltersSkipFiles", func(t *testing.T) {
		// A hash's field is read with a point read of its record (HSET
		// reads it to know whether it is new).
		s := fill(t, Options{})
		for i := range 1000 {
			if _, err := s.HSet([]byte("hash"), [][]byte{fmt.Appendf(nil, "field:%04d", i), []byte("v")}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.db.Flush(); err != nil {
			t.Fatal(err)
		}
		before := s.db.Metrics().Filter
		for i := range 1000 {
			if _, ok, err := s.HGet([]byte("hash"), fmt.Appendf(nil, "field:%04d-missing", i)); err != nil || ok {
				t.Fatalf("missing field %d: %v %v", i, ok, err)
			}
		}
		after := s.db.Metrics().Filter
		if hits := after.Hits - before.Hits; hits < 900 {
			t.Errorf("1,000 reads of missing fields: the files' filters skipped %d of them (misses %d)", hits, after.Misses-before.Misses)
		}
	})
}
