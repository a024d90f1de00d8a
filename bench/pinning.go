package main

// Pinning: the servers on one CPU and the client on another, so that the
// ratios compare servers that had the same CPU.

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// pinning is where the servers and this program run.
type pinning struct {
	taskset string // its path; empty when not pinning
	server  string // CPU list for the servers; empty: not pinned
	client  string // CPU list for this program; empty: not pinned
	all     string // the CPUs there were to share
	note    string // for the header
}

// pinnedEnv marks the image that runs under taskset already, and holds
// the CPU list its parent had.
const pinnedEnv = "TENURE_BENCH_PINNED"

func planPinning(server, client string) (pinning, error) {
	var p pinning
	ts, err := exec.LookPath("taskset")
	if err != nil {
		if server != "none" && server != "auto" || client != "none" && client != "auto" {
			return p, errors.New("taskset not found on PATH: -pin and -client-pin need it (Debian: util-linux)")
		}
		p.note = "none (taskset not found)"
		return p, nil
	}
	allowed, ok := os.LookupEnv(pinnedEnv)
	if !ok {
		var err error
		if allowed, err = allowedCPUs(); err != nil {
			return p, err
		}
	}
	cpus, err := parseCPUList(allowed)
	if err != nil {
		return p, err
	}
	p.all = allowed
	switch server {
	case "none":
	case "auto":
		if len(cpus) >= 2 {
			p.server = cpuList(cpus[len(cpus)/2:])
		}
	default:
		p.server = server
	}
	switch client {
	case "none":
	case "auto":
		if server == "auto" && len(cpus) >= 2 {
			p.client = cpuList(cpus[:len(cpus)/2])
		}
	default:
		p.client = client
	}
	if p.server != "" || p.client != "" {
		p.taskset = ts
	}
	switch {
	case p.server == "" && len(cpus) < 2 && server == "auto":
		p.note = fmt.Sprintf("none (%d CPU)", len(cpus))
	case p.server == "":
		p.note = "servers not pinned"
	default:
		p.note = fmt.Sprintf("both servers on CPU %s (taskset -c %s)", p.server, p.server)
	}
	if p.client != "" {
		p.note += fmt.Sprintf("; this client on CPU %s", p.client)
	} else {
		p.note += "; this client not pinned"
	}
	return p, nil
}

// allowedCPUs is the Cpus_allowed_list of /proc/self/status, e.g. "0-1,4".
func allowedCPUs() (string, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v), nil
		}
	}
	return "", errors.New("no Cpus_allowed_list in /proc/self/status")
}

// parseCPUList reads a CPU list as taskset -c and /proc write it: "0-1,4".
func parseCPUList(v string) ([]int, error) {
	var cpus []int
	for _, part := range strings.Split(v, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("CPU list %q: %w", v, err)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				return nil, fmt.Errorf("CPU list %q: %w", v, err)
			}
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

func cpuList(cpus []int) string {
	s := make([]string, len(cpus))
	for i, c := range cpus {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, ",")
}
