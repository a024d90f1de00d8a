package resp_test

import (
	"errors"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
)

// TestRedsyncUnmodified: go-redsync, the lock library of the Go Redis
// world, runs against tenure as it is: its Lock is SET NX PX, its Extend
// and Unlock are scripts (SPEC §13). A second mutex on the same name is
// refused while the first holds it, and gets it once it is unlocked.
func TestRedsyncUnmodified(t *testing.T) {
	s := start(t)
	rs := redsync.New(goredis.NewPool(s.Client()))
	m := rs.NewMutex("redsync-job", redsync.WithExpiry(5*time.Second), redsync.WithTries(1))
	if err := m.Lock(); err != nil {
		t.Fatalf("Lock: %v", err)
	}
	if ok, err := m.Extend(); !ok || err != nil {
		t.Fatalf("Extend: %v %v", ok, err)
	}
	if ttl := s.Client().PTTL(bg, "redsync-job").Val(); ttl < 4*time.Second {
		t.Fatalf("PTTL after Extend: %v", ttl)
	}
	other := rs.NewMutex("redsync-job", redsync.WithExpiry(5*time.Second), redsync.WithTries(1))
	var taken *redsync.ErrTaken
	if err := other.Lock(); !errors.Is(err, redsync.ErrFailed) && !errors.As(err, &taken) {
		t.Fatalf("a second mutex while held: %v", err)
	}
	if ok, err := other.Unlock(); ok || err == nil {
		t.Fatalf("a second mutex's Unlock of a lock it does not hold: %v %v", ok, err)
	}
	if ok, err := m.Unlock(); !ok || err != nil {
		t.Fatalf("Unlock: %v %v", ok, err)
	}
	if err := other.Lock(); err != nil {
		t.Fatalf("the second mutex once the first unlocked: %v", err)
	}
	if ok, err := other.Unlock(); !ok || err != nil {
		t.Fatalf("the second mutex's Unlock: %v %v", ok, err)
	}
}
