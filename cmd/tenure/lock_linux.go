package main

import "syscall"

// commandAttr puts COMMAND in a process group of its own, and has Linux
// send it SIGTERM should tenure lock die (SIGKILL, the OOM killer): its
// lease is let go with it, and COMMAND must not run on without it.
func commandAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
