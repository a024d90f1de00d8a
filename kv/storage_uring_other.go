//go:build !linux

package kv

import "errors"

// uring is Linux's (storage_uring_linux.go); elsewhere the WAL is synced by
// the file's own Sync.
type uring struct{}

var errURing = errors.New("io_uring")

func newURing() (*uring, error)       { return nil, errors.New("io_uring: Linux only") }
func (*uring) fdatasync(fd int) error { return errURing }
func (*uring) close()                 {}
