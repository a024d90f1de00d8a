package kv

import (
	"fmt"
	"testing"
	"time"
)

func TestLazyExpiry(t *testing.T) {
	s := openTest(t)
	s.setPX("k", "v", time.Second)
	s.clock.Advance(time.Second)
	s.mustGet("k", "v") // alive up to and including its deadline
	s.clock.Advance(time.Millisecond)
	if s.raw(nsKey) != 1 {
		t.Fatal("record gone before anyone looked")
	}
	s.mustMissing("k")
	if s.raw(nsKey) != 0 || s.raw(nsExpiry) != 0 {
		t.Errorf("lazy expiry left %d records, %d index entries on disk", s.raw(nsKey), s.raw(nsExpiry))
	}
	if st := s.Stats(); st.ExpiredTotal != 1 || st.Keys != 0 {
		t.Errorf("Stats = %+v; want 1 expired, 0 keys", st)
	}

	// Every reader treats an expired key as missing.
	s.setPX("k", "v", time.Second)
	s.clock.Advance(2 * time.Second)
	if n, _ := s.StrLen([]byte("k")); n != 0 {
		t.Errorf("StrLen of expired = %d", n)
	}
	s.setPX("k", "v", time.Second)
	s.clock.Advance(2 * time.Second)
	if v, _ := s.GetRange([]byte("k"), 0, -1); len(v) != 0 {
		t.Errorf("GetRange of expired = %q", v)
	}
	s.setPX("k", "v", time.Second)
	s.clock.Advance(2 * time.Second)
	if vs, _ := s.MGet(bs("k", "k")); vs[0] != nil || vs[1] != nil {
		t.Errorf("MGet of expired = %q", vs)
	}
	s.setPX("k", "5", time.Second)
	s.clock.Advance(2 * time.Second)
	if n, err := s.IncrBy([]byte("k"), 1); err != nil || n != 1 {
		t.Errorf("IncrBy of expired = %d, %v; want 1", n, err)
	}
	if ttl := s.ttl("k"); ttl != -1 {
		t.Errorf("IncrBy over an expired key kept its TTL: %d", ttl)
	}
	s.checkCounters()
}

// TestSweep: the active sweep deletes expired keys from disk, with nobody
// reading them, and leaves live ones.
func TestSweep(t *testing.T) {
	s := openTest(t)
	const n = 1000 // several rounds of sweepRound
	for i := range n {
		s.setPX(fmt.Sprintf("short:%d", i), "v", time.Duration(1+i%10)*time.Second)
	}
	s.setPX("long", "v", time.Hour)
	s.set("forever", "v")
	s.clock.Advance(11 * time.Second)
	if err := s.sweep(0); err != nil {
		t.Fatal(err)
	}
	if got := s.raw(nsKey); got != 2 {
		t.Errorf("records on disk after the sweep = %d; want 2", got)
	}
	if got := s.raw(nsExpiry); got != 1 {
		t.Errorf("expiry index entries after the sweep = %d; want 1", got)
	}
	st := s.Stats()
	if st.ExpiredTotal != n || st.Keys != 2 || st.KeysWithExpiry != 1 {
		t.Errorf("Stats = %+v", st)
	}
	s.mustGet("long", "v")
	s.checkCounters()
}

// TestSweepBounded: one round handles at most its limit, so a pass does
// bounded work between checks of its time budget.
func TestSweepBounded(t *testing.T) {
	s := openTest(t)
	for i := range 100 {
		s.setPX(fmt.Sprint(i), "v", time.Second)
	}
	s.clock.Advance(2 * time.Second)
	n, err := s.sweepOnce(s.nowMs(), 30)
	if err != nil || n != 30 {
		t.Fatalf("sweepOnce = %d, %v; want 30", n, err)
	}
	if got := s.raw(nsKey); got != 70 {
		t.Errorf("records left = %d; want 70", got)
	}
	s.checkCounters()
}

// TestSweepStaleEntry: an index entry whose record has another deadline (or
// none) is removed, and the record is left alone.
func TestSweepStaleEntry(t *testing.T) {
	s := openTest(t)
	s.setPX("k", "v", time.Hour)
	// Plant a stale entry, as a crash between two versions of kv might.
	if err := s.db.Set(expiryKey(s.clock.ms(time.Second), []byte("k")), nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Set(expiryKey(s.clock.ms(time.Second), []byte("nokey")), nil, nil); err != nil {
		t.Fatal(err)
	}
	s.clock.Advance(2 * time.Second)
	if err := s.sweep(0); err != nil {
		t.Fatal(err)
	}
	s.mustGet("k", "v")
	if got := s.raw(nsExpiry); got != 1 {
		t.Errorf("index entries = %d; want 1", got)
	}
	if st := s.Stats(); st.ExpiredTotal != 0 {
		t.Errorf("ExpiredTotal = %d; want 0", st.ExpiredTotal)
	}
}

// TestSweeperRuns: the sweeper goroutine does the sweeping on its own.
func TestSweeperRuns(t *testing.T) {
	s := openTest(t, func(o *Options) { o.SweepInterval = time.Millisecond })
	for i := range 50 {
		s.setPX(fmt.Sprint(i), "v", time.Second)
	}
	s.clock.Advance(2 * time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for s.Stats().Keys != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("sweeper left %d keys", s.Stats().Keys)
		}
		time.Sleep(time.Millisecond)
	}
	if st := s.Stats(); st.ExpiredTotal != 50 {
		t.Errorf("ExpiredTotal = %d", st.ExpiredTotal)
	}
}

// TestExpiredGoneAfterRestart: keys that expired while the store was closed
// are deleted from disk by Open, and never read.
func TestExpiredGoneAfterRestart(t *testing.T) {
	s := openTest(t)
	s.setPX("short", "v", time.Second)
	s.setPX("long", "v", time.Hour)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s.clock.Advance(time.Minute)
	s.open()
	if got := s.raw(nsKey); got != 1 {
		t.Errorf("records on disk after reopen = %d; want 1", got)
	}
	if n, _ := s.DBSize(); n != 1 {
		t.Errorf("DBSize = %d; want 1", n)
	}
	s.mustMissing("short")
	s.mustGet("long", "v")
	// The deadline is absolute: it survived the restart.
	if ttl := s.ttl("long"); ttl != (time.Hour - time.Minute).Milliseconds() {
		t.Errorf("ttl = %d", ttl)
	}
	s.checkCounters()
}
