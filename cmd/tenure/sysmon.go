package main

import (
	"os"
	"strings"
	"syscall"
)

// A server that answers one request and waits for the next, as servers do,
// makes Go's sysmon thread sleep deeply whenever its last processor goes
// idle, and wake again (a futex and two context switches) at the next
// system call: about once a request. Profiled under the bench's renewal
// load on one pinned CPU, sysmon's sleeps and wakes were 15% of the
// server's CPU; without them a renewal's p50 went from 0.139-0.152 to
// 0.106-0.126 ms and its CPU from 15.5 to 13.0 µs (durable SETs did not
// change beyond the noise). The runtime skips the deep sleep only while
// GODEBUG's schedtrace is set (its sysmon then backs off to one wake every
// 10 ms when idle), and reads GODEBUG only at start; so the server execs
// itself once with it set.
//
// schedTracePeriod is the longest period schedtrace takes, in
// milliseconds (24.8 days): the runtime prints one line of its scheduler's
// state that often, and once at start on a machine up longer than that.
const schedTracePeriod = "schedtrace=2147483647"

// sysmonAwakeEnv is the environment to exec the server with, or nil when
// GODEBUG already says anything of schedtrace (the operator's choice:
// GODEBUG=schedtrace=0 keeps Go's default).
func sysmonAwakeEnv(env []string) []string {
	out := make([]string, 0, len(env)+1)
	found := false
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "GODEBUG="); ok {
			for _, field := range strings.Split(v, ",") {
				if strings.HasPrefix(field, "schedtrace=") {
					return nil
				}
			}
			e = "GODEBUG=" + schedTracePeriod
			if v != "" {
				e += "," + v
			}
			found = true
		}
		out = append(out, e)
	}
	if !found {
		out = append(out, "GODEBUG="+schedTracePeriod)
	}
	return out
}

// keepSysmonAwake execs the server again with sysmonAwakeEnv, once; it
// returns only when that is not needed or the exec failed, and the server
// then runs as it is.
func keepSysmonAwake() {
	env := sysmonAwakeEnv(os.Environ())
	if env == nil {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	_ = syscall.Exec(exe, os.Args, env)
}
