package lockmod

import "time"

// Clock is the store's monotonic clock. The Manager reads store time from it and
// arms at most one timer on it at a time, for its earliest event. Tests pass a
// *FakeClock and advance it by hand instead of sleeping.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f once, in its own goroutine or (for a fake) from the
	// goroutine that advances time, after d has passed. f must not be called
	// while the caller of AfterFunc holds any lock f takes.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc call.
type Timer interface {
	// Stop prevents the call if it has not started; it reports whether it did.
	Stop() bool
}

// SystemClock is time.Now and time.AfterFunc. time.Now carries a monotonic
// reading, so store time does not jump with the wall clock.
func SystemClock() Clock { return systemClock{} }

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
