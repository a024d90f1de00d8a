//go:build !unix

package resp

import "time"

// cpuTimes: this platform has no getrusage; INFO leaves the CPU fields out.
func cpuTimes() (self, children [2]time.Duration, ok bool) { return self, children, false }
