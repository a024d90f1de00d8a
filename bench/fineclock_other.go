//go:build !linux

package main

// fineClock has no timerfd to wake the runtime with off Linux: the paced
// scenarios' timers keep the runtime's own precision (see fineclock.go).
func fineClock() (stop func(), err error) { return func() {}, nil }
