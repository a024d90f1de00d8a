package lockmod

import (
	"errors"
	"testing"
	"time"
)

// LOCK-14: a node that stops leading drops every lease and waiter at
// once and grants nothing until its next epoch; that epoch starts empty
// and its fences are larger than every fence before.
func TestPauseDropsEverythingAndResumeStartsAnEpoch_LOCK14(t *testing.T) {
	clock := NewFakeClock(time.Unix(1000, 0))
	m := New(Config{Clock: clock, Epoch: 3})
	defer m.Close()
	held, err := m.Hold(HoldRequest{Lock: "l", Key: "k", ReqID: "r1", TTL: time.Minute}).Result()
	if err != nil {
		t.Fatal(err)
	}
	waiting := m.Hold(HoldRequest{Lock: "l", Key: "k", ReqID: "r2", TTL: time.Minute})
	m.Pause()
	select {
	case <-waiting.Done():
		if _, err := waiting.Result(); !errors.Is(err, ErrNoEpoch) {
			t.Fatalf("the waiter: %v, want ErrNoEpoch", err)
		}
	default:
		t.Fatal("Pause left a waiter waiting")
	}
	if !m.Paused() {
		t.Fatal("not paused")
	}
	if _, err := m.Hold(HoldRequest{Lock: "l", Key: "k", ReqID: "r3"}).Result(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Hold while paused: %v", err)
	}
	if _, err := m.Renew(held.LeaseID(), time.Minute); err == nil {
		t.Fatal("Renew while paused succeeded")
	}
	m.Resume(4)
	if st := m.Stats(); st.Leases != 0 || st.Waiters != 0 || st.Epoch != 4 {
		t.Fatalf("after Resume: %+v", st)
	}
	if _, err := m.Renew(held.LeaseID(), time.Minute); !errors.Is(err, ErrLost) {
		t.Fatalf("the old epoch's lease renewed: %v", err)
	}
	g, err := m.Hold(HoldRequest{Lock: "l", Key: "k", ReqID: "r1"}).Result()
	if err != nil {
		t.Fatal(err)
	}
	if g.Fence != 4<<32+1 || g.Fence <= held.Fence {
		t.Fatalf("fence %#x after %#x, want 4<<32+1", g.Fence, held.Fence)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Resume into the epoch already granted in: no panic")
		}
	}()
	m.Resume(4)
}

// LOCK-14: what the Manager refuses while paused it refuses with
// ErrPaused, which a server answers with "try again" (the node does not
// lead now); once closed, with ErrClosed alone.
func TestPausedRefusesWithErrPausedAndClosedWithErrClosed_LOCK14(t *testing.T) {
	m := New(Config{Clock: NewFakeClock(time.Unix(1000, 0)), Epoch: 3})
	held, err := m.Hold(HoldRequest{Lock: "l", Key: "k", ReqID: "r1", TTL: time.Minute}).Result()
	if err != nil {
		t.Fatal(err)
	}
	m.Pause()
	if _, err := m.Hold(HoldRequest{Lock: "l", Key: "k", ReqID: "r2"}).Result(); !errors.Is(err, ErrPaused) {
		t.Errorf("Hold while paused: %v, want ErrPaused", err)
	}
	if _, err := m.Renew(held.LeaseID(), 0); !errors.Is(err, ErrPaused) {
		t.Errorf("Renew while paused: %v, want ErrPaused", err)
	}
	if err := m.Release(held.LeaseID()); !errors.Is(err, ErrPaused) {
		t.Errorf("Release while paused: %v, want ErrPaused", err)
	}
	m.Close()
	if _, err := m.Hold(HoldRequest{Lock: "l", Key: "k", ReqID: "r3"}).Result(); !errors.Is(err, ErrClosed) || errors.Is(err, ErrPaused) {
		t.Errorf("Hold once closed: %v, want ErrClosed alone", err)
	}
	if err := m.Release(held.LeaseID()); !errors.Is(err, ErrClosed) || errors.Is(err, ErrPaused) {
		t.Errorf("Release once closed: %v, want ErrClosed alone", err)
	}
}
