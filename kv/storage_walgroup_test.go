package kv

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// gatherAfter makes the next round's leader gather until n writers have
// joined it, with no bound in time a test could reach.
func gatherAfter(s *Store, n int) {
	g := &s.walGroup
	g.mu.Lock()
	g.last, g.took, g.longest = n, time.Hour, time.Hour
	g.mu.Unlock()
}

// roundOpen reports whether a leader is gathering or syncing.
func roundOpen(s *Store) bool {
	g := &s.walGroup
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.round != nil
}

// A leader waits for as many writers as its last round had, and one sync
// then answers them all (SPEC §6: --fsync always acknowledges a write once
// it is on disk; writers share the fsync).
func TestGroupCommitGathersTheLastRound(t *testing.T) {
	s := openTest(t, func(o *Options) { o.Fsync = FsyncAlways })
	before := s.Stats()
	gatherAfter(s.Store, 3)

	done := make(chan error, 3)
	set := func(k string) { _, err := s.Set([]byte(k), []byte("v"), SetOptions{}); done <- err }
	go set("a")
	for !roundOpen(s.Store) {
		time.Sleep(time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("the leader synced alone (err %v) though its last round had 3 writers", err)
	case <-time.After(50 * time.Millisecond):
	}
	go set("b")
	go set("c")
	for range 3 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	after := s.Stats()
	if syncs, writers := after.WALSyncs-before.WALSyncs, after.WALSyncWriters-before.WALSyncWriters; syncs != 1 || writers != 3 {
		t.Fatalf("%d syncs answered %d writers; want 1 sync for all 3", syncs, writers)
	}
	for _, k := range []string{"a", "b", "c"} {
		if v, ok, err := s.Get([]byte(k)); err != nil || !ok || string(v) != "v" {
			t.Fatalf("GET %s = %q %v %v", k, v, ok, err)
		}
	}
}

// A writer whose last round was its own never waits for company: a lone
// client's write costs one sync and no more.
func TestGroupCommitLoneWriterDoesNotWait(t *testing.T) {
	s := openTest(t, func(o *Options) { o.Fsync = FsyncAlways })
	gatherAfter(s.Store, 1)
	before := s.Stats()
	done := make(chan error, 1)
	go func() {
		for i := range 20 {
			if _, err := s.Set([]byte(fmt.Sprint("k", i)), []byte("v"), SetOptions{}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a lone writer waited to gather others")
	}
	if syncs := s.Stats().WALSyncs - before.WALSyncs; syncs != 20 {
		t.Fatalf("20 writes one after another made %d syncs", syncs)
	}
}

// Writers that join a round after its sync began are not covered by it:
// each still returns only once a sync that began after its commit ended,
// and none is left waiting.
func TestGroupCommitLateJoinersGetTheirOwnSync(t *testing.T) {
	s := openTest(t, func(o *Options) { o.Fsync = FsyncAlways })
	const writers, each = 16, 50
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				k := fmt.Sprintf("w%d:%d", w, i)
				if _, err := s.Set([]byte(k), []byte(k), SetOptions{}); err != nil {
					errs <- err
					return
				}
				if s.unsettled.syncedTo.Load() < 1 {
					errs <- fmt.Errorf("%s acknowledged before any sync", k)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if u := &s.unsettled; u.syncedTo.Load() < u.unsynced.Load() {
		t.Fatalf("all writers returned with %d commits unsynced", u.unsynced.Load()-u.syncedTo.Load())
	}
	if roundOpen(s.Store) {
		t.Fatal("a round is still open after every writer returned")
	}
}
