package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func TestSysmonAwakeEnv(t *testing.T) {
	for _, tc := range []struct {
		env, want []string
	}{
		{[]string{"HOME=/h"}, []string{"HOME=/h", "GODEBUG=" + schedTracePeriod}},
		{[]string{"GODEBUG="}, []string{"GODEBUG=" + schedTracePeriod}},
		{[]string{"GODEBUG=madvdontneed=1", "A=b"}, []string{"GODEBUG=" + schedTracePeriod + ",madvdontneed=1", "A=b"}},
		// The operator's own schedtrace, 0 (Go's default) included, stays.
		{[]string{"GODEBUG=schedtrace=0"}, nil},
		{[]string{"GODEBUG=gctrace=1,schedtrace=1000"}, nil},
	} {
		if got := sysmonAwakeEnv(tc.env); !slices.Equal(got, tc.want) {
			t.Errorf("sysmonAwakeEnv(%q) = %q, want %q", tc.env, got, tc.want)
		}
	}
}

// testKeepsSysmonAwake: the server runs with GODEBUG's schedtrace set, in
// the same process it was started as (a kill of the pid its parent knows
// kills the server), unless the operator's GODEBUG says otherwise.
func testKeepsSysmonAwake(t *testing.T, bin string) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/PID/environ")
	}
	godebug := func(c *child) string {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", c.cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range bytes.Split(raw, []byte{0}) {
			if v, ok := strings.CutPrefix(string(e), "GODEBUG="); ok {
				return v
			}
		}
		return "(none)"
	}
	env := slices.DeleteFunc(os.Environ(), func(e string) bool { return strings.HasPrefix(e, "GODEBUG=") })
	for _, tc := range []struct{ godebug, want string }{
		{"", schedTracePeriod},
		{"GODEBUG=madvdontneed=1", schedTracePeriod + ",madvdontneed=1"},
		{"GODEBUG=schedtrace=0", "schedtrace=0"},
	} {
		cmd := exec.Command(bin, "--addr", "127.0.0.1:0", "--dir", t.TempDir())
		cmd.Env = slices.Clip(env)
		if tc.godebug != "" {
			cmd.Env = append(cmd.Env, tc.godebug)
		}
		if got := godebug(awaitReady(t, runCmd(t, cmd), cmd.Args)); got != tc.want {
			t.Errorf("started with %q, the server's GODEBUG is %q, want %q", tc.godebug, got, tc.want)
		}
	}
}
