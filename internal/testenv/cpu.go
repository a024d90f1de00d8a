package testenv

import (
	"syscall"
	"testing"
	"time"
)

// ReportCPU reports, when the returned func is called at the end of a
// benchmark, the process's CPU time (user and system, of every goroutine:
// a server's in the same process too) per op as cpu-ns/op: on a machine
// shared with other work it varies far less than ns/op, which counts the
// waits for a CPU too.
func ReportCPU(b *testing.B) func() {
	start := processCPU()
	return func() { b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op") }
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
