package kv

import (
	"errors"
	"testing"
	"time"
)

// COPY takes src's value and TTL; dst remembers the larger of the two
// fences, so a copy never lets an older holder write dst (LOCK-12).
func TestCopyFenceAndTTL(t *testing.T) {
	s := openTest(t)
	if _, err := s.Set([]byte("src"), []byte("v5"), SetOptions{Fence: 5, Expiry: Expiry{Mode: ExpiryAt, At: s.clock.ms(time.Minute)}}); err != nil {
		t.Fatal(err)
	}
	if err := s.setFence("dst", "v10", 10); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Copy([]byte("src"), []byte("dst"), false); err != nil || ok {
		t.Fatalf("Copy onto an existing key = %v, %v; want false", ok, err)
	}
	s.mustGet("dst", "v10")
	if ok, err := s.Copy([]byte("src"), []byte("dst"), true); err != nil || !ok {
		t.Fatalf("Copy REPLACE = %v, %v", ok, err)
	}
	s.mustGet("dst", "v5")
	if ttl := s.ttl("dst"); ttl != 60000 {
		t.Errorf("TTL of the copy = %d, want 60000", ttl)
	}
	if err := s.setFence("dst", "v7", 7); !errors.Is(err, ErrFenced) {
		t.Errorf("SET FENCE 7 on a copy over a key fenced at 10 = %v, want ErrFenced", err)
	}
	if ok, err := s.Copy([]byte("src"), []byte("new"), false); err != nil || !ok {
		t.Fatalf("Copy to a new key = %v, %v", ok, err)
	}
	if err := s.setFence("new", "v4", 4); !errors.Is(err, ErrFenced) {
		t.Errorf("SET FENCE 4 on a copy of a key fenced at 5 = %v, want ErrFenced", err)
	}
	if ok, err := s.Copy([]byte("nokey"), []byte("dst"), true); err != nil || ok {
		t.Fatalf("Copy of a missing key = %v, %v", ok, err)
	}
	s.mustGet("src", "v5")
	s.checkCounters()
	s.clock.Advance(2 * time.Minute)
	if ok, err := s.Copy([]byte("src"), []byte("x"), false); err != nil || ok {
		t.Fatalf("Copy of an expired key = %v, %v", ok, err)
	}
	s.checkCounters()
}

// RANDOMKEY finds every key in time, never an expired one, and nothing
// in an empty keyspace.
func TestRandomKey(t *testing.T) {
	s := openTest(t)
	if _, ok, err := s.RandomKey(); err != nil || ok {
		t.Fatalf("RandomKey of nothing = %v, %v", ok, err)
	}
	for _, k := range []string{"a", "b", "c"} {
		s.set(k, "1")
	}
	s.setPX("gone", "1", time.Second)
	s.clock.Advance(2 * time.Second)
	seen := map[string]bool{}
	for i := 0; i < 1000 && len(seen) < 3; i++ {
		k, ok, err := s.RandomKey()
		if err != nil || !ok {
			t.Fatalf("RandomKey = %v, %v", ok, err)
		}
		if string(k) == "gone" {
			t.Fatal("RandomKey returned an expired key")
		}
		seen[string(k)] = true
	}
	if len(seen) != 3 {
		t.Errorf("RandomKey found only %v in 1000 calls", seen)
	}
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	s.setPX("gone", "1", time.Second)
	s.clock.Advance(2 * time.Second)
	if k, ok, err := s.RandomKey(); err != nil || ok {
		t.Fatalf("RandomKey with only an expired key = %q, %v, %v", k, ok, err)
	}
}

// What OBJECT reports comes from the record, which remembers a string
// changed in place across a restart.
func TestObjectEncoding(t *testing.T) {
	s := openTest(t)
	s.set("i", "123")
	s.set("r", "123")
	if _, err := s.SetRange([]byte("r"), 0, []byte("4")); err != nil {
		t.Fatal(err)
	}
	s.reopen()
	for key, want := range map[string]Object{"i": {Encoding: "int", Shared: true}, "r": {Encoding: "raw"}} {
		got, ok, err := s.Object([]byte(key))
		if err != nil || !ok || got != want {
			t.Errorf("Object(%s) = %+v, %v, %v; want %+v", key, got, ok, err, want)
		}
	}
	if _, ok, err := s.Object([]byte("nokey")); err != nil || ok {
		t.Errorf("Object(nokey) = %v, %v", ok, err)
	}
}

// EXPIRETIME's deadline, INFO's avg_ttl (kept across a restart), keyspace
// hits and misses and the time of the last fsync.
func TestDeadlineAndStats(t *testing.T) {
	s := openTest(t)
	s.set("plain", "1")
	s.setPX("t1", "1", 10*time.Second)
	s.setPX("t2", "1", 30*time.Second)
	for key, want := range map[string]int64{"plain": -1, "nokey": -2, "t1": s.clock.ms(10 * time.Second)} {
		if got, err := s.Deadline([]byte(key)); err != nil || got != want {
			t.Errorf("Deadline(%s) = %d, %v; want %d", key, got, err, want)
		}
	}
	if avg := s.Stats().AvgTTL; avg != 20000 {
		t.Errorf("AvgTTL = %d, want 20000", avg)
	}
	s.clock.Advance(5 * time.Second)
	s.reopen()
	if avg := s.Stats().AvgTTL; avg != 15000 {
		t.Errorf("AvgTTL after 5 s and a reopen = %d, want 15000", avg)
	}
	if _, err := s.Persist([]byte("t2")); err != nil {
		t.Fatal(err)
	}
	if avg := s.Stats().AvgTTL; avg != 5000 {
		t.Errorf("AvgTTL after PERSIST t2 = %d, want 5000", avg)
	}
	if _, err := s.Del(bs("t1")); err != nil {
		t.Fatal(err)
	}
	if avg := s.Stats().AvgTTL; avg != 0 {
		t.Errorf("AvgTTL with no TTL left = %d, want 0", avg)
	}

	s.ResetStats()
	s.get("plain")
	s.get("nokey")
	if _, err := s.Exists(bs("plain", "nokey", "t2")); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.KeyspaceHits != 3 || st.KeyspaceMisses != 2 {
		t.Errorf("hits %d misses %d, want 3 and 2", st.KeyspaceHits, st.KeyspaceMisses)
	}
	s.clock.Advance(time.Minute)
	// LASTSAVE is the last fsync: a write's WAL write(2) is none.
	before := s.Stats().LastSync
	s.set("plain", "again")
	if got := s.Stats().LastSync; got != before {
		t.Errorf("LastSync after a SET = %d, want %d (no fsync since)", got, before)
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	if got, want := s.Stats().LastSync, s.clock.Now().Unix(); got != want {
		t.Errorf("LastSync = %d, want %d", got, want)
	}
}
