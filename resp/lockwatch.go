package resp

import (
	"errors"
	"net"
	"sync"
	"time"

	"github.com/tenure-db/tenure/internal/lockspec"
	"github.com/tenure-db/tenure/lockmod"
)

// LOCK.WATCH lock key [FENCE f] [TIMEOUT ms] (SPEC §3, §12, LOCK-17): waits
// until the key's newest live lease has a fence other than f, then answers
// the key's state as LOCK.INFO does.
//
// A watcher costs its connection's goroutine, which it has anyway, and an
// entry in the lock module: no second goroutine, no timer, no polling.
// While it waits, the connection's own goroutine reads ahead on the socket
// (to learn that the client went away, as a blocked LOCK.HOLD's watcher
// does), with TIMEOUT as the read deadline; the lock module's wake moves
// that deadline into the past, which ends the read at once.

// maxWatchTimeout is TIMEOUT's upper bound (SPEC §3: 1 to 3600000 ms).
const maxWatchTimeout = time.Hour

func cmdLockWatch(c *conn, args [][]byte) {
	var (
		fence   uint64
		timeout time.Duration
	)
	msg := parseOptions(args[3:],
		opt{name: "fence", value: true, once: true, set: func(v []byte) string {
			n, ok := parseInt(v)
			if !ok || n < 0 {
				return "fence must be an integer from 0"
			}
			fence = uint64(n)
			return ""
		}},
		opt{name: "timeout", value: true, once: true, set: func(v []byte) (msg string) {
			timeout, msg = msArg("timeout", v, time.Millisecond, maxWatchTimeout)
			return msg
		}},
	)
	if msg == "" {
		msg = lengthArg("lock", args[1], lockspec.MaxLockLen)
	}
	if msg == "" {
		msg = lengthArg("key", args[2], lockspec.MaxKeyLen)
	}
	if msg != "" {
		c.out.Err(msg)
		return
	}
	lock, key := string(args[1]), string(args[2])
	var w *lockmod.Watcher
	switch {
	case c.tx.executing:
		// Inside EXEC it does not block, as Redis's blocking commands
		// (SPEC §6): the key's state now.
		w = c.srv.locks.Watch(lock, key, fence, nil)
	case c.ctx != nil:
		w = c.watchInProcess(lock, key, fence, timeout)
	default:
		w = c.watchSocket(lock, key, fence, timeout)
	}
	if w == nil {
		return // the client went away: nobody to answer
	}
	info, ok, err := w.Stop()
	switch {
	case err != nil:
		c.lockError(err)
	case c.srv.cluster != nil && !c.srv.cluster.LocksReady():
		// Woken while this node's lease on leadership ran out: no lease
		// it vouches for, as a leader that steps down answers its
		// watchers. What it would show may be a grant its holder is not
		// told of (LOCK.HOLD answers it TRYAGAIN then, locks.go), in an
		// epoch a newer leader may already have granted past (LOCK-14,
		// LOCK-17): an observer would proclaim a leader that never led.
		c.keyInfo(lockmod.KeyInfo{}, false)
	default:
		c.keyInfo(info, ok)
	}
}

// watchSocket waits for the watcher's answer on a client's connection,
// reading ahead on it meanwhile. It is nil when the client went away.
func (c *conn) watchSocket(lock, key string, fence uint64, timeout time.Duration) *lockmod.Watcher {
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	wk := &watchWake{nc: c.nc}
	defer wk.end()
	wk.arm(deadline) // before the lock module may wake it
	w := c.srv.locks.Watch(lock, key, fence, wk.wake)
	if w.Answered() {
		return w
	}
	c.srv.stats.blocked.Add(1)
	defer c.srv.stats.blocked.Add(-1)
	for {
		err := c.rd.err
		if err == nil && c.rd.buffered() >= maxReadAhead {
			// As a blocked LOCK.HOLD (conn.go, watchGone): blind to the
			// client's going away, we would keep a ghost.
			c.srv.log.Warn("closing a blocked client over the read-ahead limit", "client", c.addr, "limit", maxReadAhead)
			c.rd.err = errReadAheadLimit
			err = c.rd.err
		}
		if err == nil {
			err = c.rd.readAhead()
			if err == nil {
				continue // pipelined behind the watch: buffered for later
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				if w.Answered() || !deadline.IsZero() && !time.Now().Before(deadline) || c.srv.closing.Load() {
					return w
				}
				wk.arm(deadline) // someone else's deadline: not ours to keep
				continue
			}
			c.rd.err = err
		}
		// The client went away: its watcher goes with it, no ghost left.
		w.Stop()
		c.closing = true
		return nil
	}
}

// watchInProcess waits for the watcher's answer on a request run in
// process (Server.Do): its context ending is its client going away.
func (c *conn) watchInProcess(lock, key string, fence uint64, timeout time.Duration) *lockmod.Watcher {
	answered := make(chan struct{})
	w := c.srv.locks.Watch(lock, key, fence, func() { close(answered) })
	if w.Answered() {
		return w
	}
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	select {
	case <-answered:
	case <-expired:
	case <-c.ctx.Done():
		w.Stop()
		return nil
	}
	return w
}

// watchWake is the lock module's way into a watching connection's read:
// the wake moves the read deadline into the past. Once the watch ended, a
// late wake (it races with TIMEOUT) must not touch the connection's
// deadline any more.
type watchWake struct {
	mu    sync.Mutex
	nc    net.Conn
	woken bool
	ended bool
}

func (wk *watchWake) wake() {
	wk.mu.Lock()
	defer wk.mu.Unlock()
	wk.woken = true
	if !wk.ended {
		wk.nc.SetReadDeadline(time.Unix(1, 0))
	}
}

// arm sets the read deadline to the watch's own (zero: none), unless a
// wake came first.
func (wk *watchWake) arm(deadline time.Time) {
	wk.mu.Lock()
	defer wk.mu.Unlock()
	if !wk.woken && !wk.ended {
		wk.nc.SetReadDeadline(deadline)
	}
}

// end gives the connection its deadline back: none.
func (wk *watchWake) end() {
	wk.mu.Lock()
	defer wk.mu.Unlock()
	wk.ended = true
	wk.nc.SetReadDeadline(time.Time{})
}
