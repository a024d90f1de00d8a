//go:build unix

package lockmod

import (
	"errors"
	"os"
	"sync"
	"syscall"
	"time"
)

// pollPark parks a goroutine until the scheduler's next poll of the
// network, without sleeping: it waits to read a pipe that it writes to
// itself once the runtime watches for it. The runtime learns that the pipe
// is readable only by polling, which it does as soon as nothing else is
// runnable; that same poll wakes every goroutine whose connection has data.
type pollPark struct {
	mu sync.Mutex // one parker at a time: each reads back only its own byte
	r  *os.File
	w  *os.File
	rc syscall.RawConn
}

var (
	pollParkOnce sync.Once
	pollParkPipe *pollPark // nil if no pipe could be had
)

// thePollPark is the process's pollPark, made at its first use.
func thePollPark() *pollPark {
	pollParkOnce.Do(func() {
		r, w, err := os.Pipe()
		if err != nil {
			return
		}
		rc, err := r.SyscallConn()
		if err != nil {
			r.Close()
			w.Close()
			return
		}
		pollParkPipe = &pollPark{r: r, w: w, rc: rc}
	})
	return pollParkPipe
}

// park parks until the network has been polled; false if the pipe failed.
func (p *pollPark) park() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	wrote, failed := false, false
	var buf [8]byte
	// On a busy server the runtime may not poll until its monitor does
	// (every 10 ms): a park is cut short after maxPark, so that a sweep
	// still gets its turns. The byte then left in the pipe only wakes the
	// next park early.
	_ = p.r.SetReadDeadline(time.Now().Add(maxPark))
	err := p.rc.Read(func(fd uintptr) bool {
		if !wrote {
			// Written only now, when the read is armed: a poll that saw
			// the byte come in before would be forgotten.
			wrote = true
			if _, err := p.w.Write(buf[:1]); err != nil {
				failed = true
				return true
			}
			return false // wait for the poll
		}
		_, err := syscall.Read(int(fd), buf[:])
		return err != syscall.EAGAIN
	})
	return (err == nil || errors.Is(err, os.ErrDeadlineExceeded)) && !failed
}

// maxPark is the longest a park lasts.
const maxPark = time.Millisecond

// parkForPoll parks the calling goroutine until the scheduler has polled
// the network, and reports whether it could.
func parkForPoll() bool {
	pp := thePollPark()
	return pp != nil && pp.park()
}
