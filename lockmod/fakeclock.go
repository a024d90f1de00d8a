package lockmod

import (
	"container/heap"
	"sync"
	"time"
)

// FakeClock is a Clock that moves only when told to. It lives outside the test
// files so that other packages' tests (resp) can drive a Manager with it.
type FakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers fakeTimers
	seq    uint64 // orders timers that share a deadline by when they were armed
}

// NewFakeClock returns a FakeClock that reads start until advanced.
func NewFakeClock(start time.Time) *FakeClock {
	return &FakeClock{now: start}
}

// Now returns the fake time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc arms f to run when the clock is advanced to now+d or past it.
// Even with d <= 0, f runs only from Advance, never from AfterFunc itself: the
// caller may hold a lock that f takes.
func (c *FakeClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t := &fakeTimer{clock: c, at: c.now.Add(d), seq: c.seq, f: f}
	heap.Push(&c.timers, t)
	return t
}

// Advance moves the clock forward by d. Timers that fall due are run one at a
// time in deadline order, synchronously, with the clock reading each one's
// deadline while it runs, and outside the clock's own lock: a callback may arm
// another timer, and one that falls within the advanced window runs too.
// A negative d moves nothing but still runs timers already due.
func (c *FakeClock) Advance(d time.Duration) {
	if d < 0 {
		d = 0
	}
	c.mu.Lock()
	end := c.now.Add(d)
	for len(c.timers) > 0 && !c.timers[0].at.After(end) {
		t := heap.Pop(&c.timers).(*fakeTimer)
		if t.at.After(c.now) {
			c.now = t.at
		}
		c.mu.Unlock()
		t.f()
		c.mu.Lock()
	}
	c.now = end
	c.mu.Unlock()
}

// Pending returns how many timers are armed and not yet run or stopped.
func (c *FakeClock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

type fakeTimer struct {
	clock *FakeClock
	at    time.Time
	seq   uint64
	f     func()
	index int // in clock.timers; -1 once run or stopped
}

func (t *fakeTimer) Stop() bool {
	c := t.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.index < 0 {
		return false
	}
	heap.Remove(&c.timers, t.index)
	return true
}

type fakeTimers []*fakeTimer

func (h fakeTimers) Len() int { return len(h) }

func (h fakeTimers) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].seq < h[j].seq
}

func (h fakeTimers) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}

func (h *fakeTimers) Push(x any) {
	t := x.(*fakeTimer)
	t.index = len(*h)
	*h = append(*h, t)
}

func (h *fakeTimers) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	t.index = -1
	return t
}
