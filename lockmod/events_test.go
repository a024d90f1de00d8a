package lockmod

import (
	"math"
	"slices"
	"sync"
	"testing"
	"time"
)

// eventLog is an EventSink that keeps every event.
type eventLog struct{ events []Event }

func (l *eventLog) LockEvent(e Event) { l.events = append(l.events, e) }

// TestLockEventsEveryKind (SPEC §13 "Lock events", §4): each kind of event
// is told in the step of its change, in order, with the fence the lease was
// granted with, its owner and §4's reason.
func TestLockEventsEveryKind(t *testing.T) {
	log := &eventLog{}
	h := newHarness(t, Config{Epoch: 3})
	h.m.AddEventSink(log)
	owner := func(o string) opt { return func(r *HoldRequest) { r.Owner = o } }

	a := h.granted("l", "k", "a", ttl(2*sec), owner("alice"))
	b := h.hold("l", "k", "b", maxHold(sec), owner("bob")) // waits behind a
	mustWait(t, b)
	h.advance(2 * sec) // a expires; b is granted in the same step
	gb := mustGrant(t, b)
	_, err := h.m.Renew(a.LeaseID(), 0) // LOCK-05: -LOST expired, told as lost
	mustLost(t, err, ReasonExpired)
	h.advance(sec) // b is revoked at MAXHOLD
	c := h.granted("l", "k", "c")
	h.m.Revoke("l", "k")
	d := h.granted("m", "x", "d", owner("dora"))
	if err := h.m.Release(d.LeaseID()); err != nil {
		t.Fatal(err)
	}
	mustLostTicket(t, h.hold("m", "x", "d"), ReasonReleased) // a retry after RELEASE
	h.m.Pause()
	h.m.Resume(4)

	at := func(d time.Duration) time.Time { return start.Add(d) }
	want := []Event{
		{Kind: EventGranted, Lock: "l", Key: "k", Fence: a.Fence, Owner: "alice", At: at(0)},
		{Kind: EventExpired, Lock: "l", Key: "k", Fence: a.Fence, Owner: "alice", Reason: "expired", At: at(2 * sec)},
		{Kind: EventGranted, Lock: "l", Key: "k", Fence: gb.Fence, Owner: "bob", At: at(2 * sec)},
		{Kind: EventLost, Lock: "l", Key: "k", Fence: a.Fence, Owner: "alice", Reason: "expired", At: at(2 * sec)},
		{Kind: EventRevoked, Lock: "l", Key: "k", Fence: gb.Fence, Owner: "bob", Reason: "revoked maxhold", At: at(3 * sec)},
		{Kind: EventGranted, Lock: "l", Key: "k", Fence: c.Fence, At: at(3 * sec)},
		{Kind: EventRevoked, Lock: "l", Key: "k", Fence: c.Fence, Reason: "revoked by admin", At: at(3 * sec)},
		{Kind: EventGranted, Lock: "m", Key: "x", Fence: d.Fence, Owner: "dora", At: at(3 * sec)},
		{Kind: EventReleased, Lock: "m", Key: "x", Fence: d.Fence, Owner: "dora", Reason: "released", At: at(3 * sec)},
		{Kind: EventLost, Lock: "m", Key: "x", Fence: d.Fence, Owner: "dora", Reason: "released", At: at(3 * sec)},
		{Kind: EventEpoch, Epoch: 4, At: at(3 * sec)},
	}
	if !slices.Equal(log.events, want) {
		t.Fatalf("events:\n%+v\nwant\n%+v", log.events, want)
	}
	for _, e := range want {
		if e.Kind != EventEpoch && e.Fence>>32 != 3 {
			t.Fatalf("fence %d not of epoch 3 (LOCK-02)", e.Fence)
		}
	}
}

// TestLockEventsEpochBump: the epoch bumped when n runs out (SPEC §2) is
// told before the grant that needed it.
func TestLockEventsEpochBump(t *testing.T) {
	log := &eventLog{}
	h := newHarness(t, Config{Epoch: 1, Bumper: &bumper{epoch: 1}, FirstN: math.MaxUint32})
	h.m.AddEventSink(log)
	g := h.granted("l", "k", "r")
	if len(log.events) != 2 || log.events[0].Kind != EventEpoch || log.events[0].Epoch != 2 ||
		log.events[1].Kind != EventGranted || log.events[1].Fence != g.Fence || g.Fence != 2<<32|1 {
		t.Fatalf("events %+v, grant fence %d", log.events, g.Fence)
	}
}

// TestLockEventsRemoveSink: a removed sink hears nothing more; the other
// still does.
func TestLockEventsRemoveSink(t *testing.T) {
	one, two := &eventLog{}, &eventLog{}
	h := newHarness(t, Config{})
	remove := h.m.AddEventSink(one)
	h.m.AddEventSink(two)
	h.granted("l", "k", "a")
	remove()
	remove()
	h.granted("l", "j", "b")
	if len(one.events) != 1 || len(two.events) != 2 {
		t.Fatalf("one heard %d, two %d; want 1 and 2", len(one.events), len(two.events))
	}
}

// TestFeedNeverBlocksGrants: a Feed nobody reads fills, then drops and
// counts; grants go on at full speed, and what it kept is the first events
// in order.
func TestFeedNeverBlocksGrants(t *testing.T) {
	h := newHarness(t, Config{})
	f := NewFeed(8)
	h.m.AddEventSink(f)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 100 {
			g := h.granted("l", "k", "r"+string(rune('A'+i%26))+string(rune('a'+i/26)))
			if err := h.m.Release(g.LeaseID()); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("grants stalled behind a feed nobody reads")
	}
	if f.Dropped() != 200-8 {
		t.Fatalf("dropped %d, want %d", f.Dropped(), 200-8)
	}
	var prev uint64
	for i := range 8 {
		e := <-f.C()
		want := EventGranted
		if i%2 == 1 {
			want = EventReleased
		}
		if e.Kind != want || e.Fence < prev {
			t.Fatalf("event %d: %+v", i, e)
		}
		prev = e.Fence
	}
}

// TestLockEventsConcurrentSink: sinks are added and removed while grants go
// on (go test -race).
func TestLockEventsConcurrentSink(t *testing.T) {
	h := newHarness(t, Config{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for range 50 {
			f := NewFeed(4)
			h.m.AddEventSink(f)()
		}
	})
	for i := range 50 {
		g := h.granted("l", "k", "q"+string(rune('A'+i%26))+string(rune('a'+i/26)))
		if err := h.m.Release(g.LeaseID()); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
}
