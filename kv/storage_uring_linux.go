package kv

// The WAL's fdatasync through io_uring: the goroutine that asks for it
// waits in the runtime's network poller, where a plain fdatasync(2) would
// keep its thread and, with GOMAXPROCS 1 (one CPU, or a container allowed
// one), the only slot Go runs goroutines in, until the runtime's sysmon
// takes the slot back (20 µs and more later) and hands it to another
// thread. Under durable writes from a few clients that pause split the
// writers that should share an fsync into two halves taking turns (4.1
// writers a sync at 8 clients, 7.8 with the ring). With more CPUs, or
// GOMAXPROCS above 1, nothing waits on the slot and the ring changes
// nothing measurable. The ring is one per store, one fsync in flight.
//
// The kernel may refuse io_uring (a seccomp profile, Docker's default among
// them, kernel.io_uring_disabled, an old kernel): then the WAL is synced by
// fdatasync(2) as before. INFO persistence's wal_fsync says which.

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The kernel's ABI (include/uapi/linux/io_uring.h).
const (
	uringOpFsync        = 3 // IORING_OP_FSYNC
	uringFsyncDatasync  = 1 // IORING_FSYNC_DATASYNC
	uringFeatSingleMmap = 1 // IORING_FEAT_SINGLE_MMAP
	uringOffCQRing      = 0x8000000
	uringOffSQEs        = 0x10000000
	uringEnterGetEvents = 1 // IORING_ENTER_GETEVENTS
	uringSQESize        = 64
	uringCQESize        = 16
)

// uringParams is struct io_uring_params.
type uringParams struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFd uint32
	resv                                                                   [3]uint32
	sqOff                                                                  uringSQOffsets
	cqOff                                                                  uringCQOffsets
}

type uringSQOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type uringCQOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

// uring is an io_uring of a few entries used for one fsync at a time.
type uring struct {
	mu     sync.Mutex // one operation in flight
	fd     int
	file   *os.File        // fd, in the runtime's poller
	conn   syscall.RawConn // file's, to wait for a completion
	polled bool            // conn waits in the poller (else: in io_uring_enter)
	p      uringParams
	sq, cq []byte // the rings (the same mapping with IORING_FEAT_SINGLE_MMAP)
	sqes   []byte
	single bool   // sq and cq are one mapping
	serial uint64 // user_data of the last submission
}

// newURing sets up a ring, or says why the kernel would not.
func newURing() (u *uring, err error) {
	var p uringParams
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, 4, uintptr(unsafe.Pointer(&p)), 0)
	if errno != 0 {
		return nil, fmt.Errorf("io_uring_setup: %w", errno)
	}
	u = &uring{fd: int(fd), p: p}
	defer func() {
		if err != nil {
			u.close()
			u = nil
		}
	}()
	sqSize := int(p.sqOff.array + p.sqEntries*4)
	cqSize := int(p.cqOff.cqes + p.cqEntries*uringCQESize)
	mmap := func(off int64, size int) ([]byte, error) {
		return unix.Mmap(u.fd, off, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	}
	if p.features&uringFeatSingleMmap != 0 {
		if u.sq, err = mmap(0, max(sqSize, cqSize)); err != nil {
			return u, fmt.Errorf("io_uring rings: %w", err)
		}
		u.cq, u.single = u.sq, true
	} else {
		if u.sq, err = mmap(0, sqSize); err != nil {
			return u, fmt.Errorf("io_uring submission ring: %w", err)
		}
		if u.cq, err = mmap(uringOffCQRing, cqSize); err != nil {
			return u, fmt.Errorf("io_uring completion ring: %w", err)
		}
	}
	if u.sqes, err = mmap(uringOffSQEs, int(p.sqEntries)*uringSQESize); err != nil {
		return u, fmt.Errorf("io_uring entries: %w", err)
	}
	// Non-blocking, so that os.NewFile puts it in the poller: the ring's
	// fd is readable while a completion waits.
	if err := unix.SetNonblock(u.fd, true); err != nil {
		return u, fmt.Errorf("io_uring: %w", err)
	}
	u.file = os.NewFile(uintptr(u.fd), "io_uring")
	if u.conn, err = u.file.SyscallConn(); err != nil {
		return u, fmt.Errorf("io_uring: %w", err)
	}
	return u, nil
}

func (u *uring) word(ring []byte, off uint32) *uint32 {
	return (*uint32)(unsafe.Pointer(&ring[off]))
}

// fdatasync makes an fdatasync(2) of fd and waits for it, in the poller.
// Its error is the fsync's, or errURing's when the ring failed in itself
// and the fsync did not run.
func (u *uring) fdatasync(fd int) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.sq == nil {
		return fmt.Errorf("%w: closed", errURing)
	}
	u.serial++
	tail := atomic.LoadUint32(u.word(u.sq, u.p.sqOff.tail))
	i := tail & *u.word(u.sq, u.p.sqOff.ringMask)
	sqe := u.sqes[i*uringSQESize : (i+1)*uringSQESize]
	clear(sqe)
	sqe[0] = uringOpFsync
	*(*int32)(unsafe.Pointer(&sqe[4])) = int32(fd)
	*(*uint32)(unsafe.Pointer(&sqe[28])) = uringFsyncDatasync
	*(*uint64)(unsafe.Pointer(&sqe[32])) = u.serial
	*u.word(u.sq, u.p.sqOff.array+i*4) = i
	atomic.StoreUint32(u.word(u.sq, u.p.sqOff.tail), tail+1)
	if n, err := u.enter(1, 0, 0); err != nil || n != 1 {
		// Not submitted: the fsync has not run, and fdatasync(2) may make
		// it. (The entry left in the ring goes with the ring, which the
		// caller lets go.)
		return fmt.Errorf("%w: submitted %d: %v", errURing, n, err)
	}
	var (
		res  int32
		mine bool
	)
	reap := func(uintptr) bool {
		head := atomic.LoadUint32(u.word(u.cq, u.p.cqOff.head))
		if head == atomic.LoadUint32(u.word(u.cq, u.p.cqOff.tail)) {
			return false
		}
		cqe := u.cq[u.p.cqOff.cqes+(head&*u.word(u.cq, u.p.cqOff.ringMask))*uringCQESize:]
		mine = *(*uint64)(unsafe.Pointer(&cqe[0])) == u.serial
		res = *(*int32)(unsafe.Pointer(&cqe[8]))
		atomic.StoreUint32(u.word(u.cq, u.p.cqOff.head), head+1)
		return true
	}
	if err := u.conn.Read(reap); err != nil {
		// Not in the poller after all: wait in the kernel instead.
		for !reap(0) {
			if _, err := u.enter(0, 1, uringEnterGetEvents); err != nil {
				return fmt.Errorf("io_uring: an fdatasync's result is unknown: %v", err)
			}
		}
	}
	return completion(res, mine)
}

// completion is what the completion of a submitted fsync means. Once
// submitted, the fsync may have run and failed, and taken the file's error
// report with it: a later fdatasync(2) of the same file would then succeed.
// So only a completion that says the fsync never ran is the ring's own
// failure (errURing: the caller may fdatasync(2) instead); every other
// failure is the disk's, and so is a result the ring cannot give.
func completion(res int32, mine bool) error {
	switch {
	case !mine:
		return errors.New("io_uring: an fdatasync's result is unknown: a completion of another submission")
	case res == -int32(unix.ECANCELED) || res == -int32(unix.EAGAIN) || res == -int32(unix.ENOMEM) || res == -int32(unix.EINTR):
		// The kernel did not run it: ECANCELED when it could not start
		// the worker thread that runs it (RLIMIT_NPROC, a pids cgroup's
		// limit), EAGAIN and ENOMEM when short of memory.
		return fmt.Errorf("%w: fsync not run: %w", errURing, syscall.Errno(-res))
	case res < 0:
		return fmt.Errorf("fdatasync: %w", syscall.Errno(-res))
	}
	return nil
}

// enter is io_uring_enter(2), retried when a signal interrupts it: how
// many entries it submitted, or its error.
func (u *uring) enter(submit, wait uint32, flags uintptr) (int, error) {
	for {
		n, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(u.fd), uintptr(submit), uintptr(wait), flags, 0, 0)
		switch errno {
		case 0:
			return int(n), nil
		case unix.EINTR:
			continue
		default:
			return 0, fmt.Errorf("io_uring_enter: %w", errno)
		}
	}
}

// close lets the ring go; it waits for an fdatasync in flight.
func (u *uring) close() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.sqes != nil {
		_ = unix.Munmap(u.sqes)
	}
	if u.cq != nil && !u.single {
		_ = unix.Munmap(u.cq)
	}
	if u.sq != nil {
		_ = unix.Munmap(u.sq)
	}
	u.sq, u.cq, u.sqes = nil, nil, nil
	if u.file != nil {
		u.file.Close()
	} else if u.fd >= 0 {
		unix.Close(u.fd)
	}
	u.file, u.fd = nil, -1
}

var errURing = errors.New("io_uring")
