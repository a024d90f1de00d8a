//go:build unix

package resp

import (
	"syscall"
	"time"
)

// cpuTimes is the CPU time the process (self) and its waited-for children
// spent in user and system mode, for INFO's CPU section.
func cpuTimes() (self, children [2]time.Duration, ok bool) {
	var s, c syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &s) != nil || syscall.Getrusage(syscall.RUSAGE_CHILDREN, &c) != nil {
		return self, children, false
	}
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return [2]time.Duration{tv(s.Utime), tv(s.Stime)}, [2]time.Duration{tv(c.Utime), tv(c.Stime)}, true
}
