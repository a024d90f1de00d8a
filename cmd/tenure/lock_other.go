//go:build !linux

package main

import "syscall"

// commandAttr puts COMMAND in a process group of its own.
func commandAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
