//go:build linux

package main

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// fineTick is how often the fine clock wakes the client's runtime.
const fineTick = 50 * time.Microsecond

// fineClock makes the client's timers fire within about fineTick of their
// time while it runs, and returns the function that stops it.
//
// Go's runtime, when it has nothing to run, waits in epoll_wait until its
// next timer with a timeout in whole milliseconds (runtime/netpoll_epoll.go
// rounds any shorter wait up to 1 ms). A paced load of thousands of
// requests a second from one idle client process therefore leaves in
// bursts: the renewal scenario's 30,000 renewals a second went out as about
// 90 in 1.1 ms, then nothing for 1 ms (the client's write(2)s counted in
// 100 µs bins with perf), and the median renewal measured how long the
// middle of a burst waits behind the rest, in the client and the server
// alike. A timerfd that expires every fineTick, read by a goroutine through
// the runtime's poller, wakes that epoll_wait, and the runtime then runs
// every timer due: the load leaves as paced. It costs the client 20,000
// wake-ups a second, so only the paced scenarios run it.
func fineClock() (stop func(), err error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("timerfd_create: %w", err)
	}
	tick := unix.NsecToTimespec(int64(fineTick))
	if err := unix.TimerfdSettime(fd, 0, &unix.ItimerSpec{Interval: tick, Value: tick}, nil); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("timerfd_settime: %w", err)
	}
	// Non-blocking, so os.NewFile hands it to the runtime's poller: a Read
	// parks the goroutine instead of holding a thread.
	f := os.NewFile(uintptr(fd), "fine clock")
	done := make(chan struct{})
	go func() {
		defer close(done)
		var expirations [8]byte
		for {
			if _, err := f.Read(expirations[:]); err != nil {
				return // closed by stop
			}
		}
	}()
	return func() {
		f.Close()
		<-done
	}, nil
}
