package resp

import (
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenure-db/tenure/cluster"
	"github.com/tenure-db/tenure/internal/redistext"
	"github.com/tenure-db/tenure/kv"
)

// Blocking pops (SPEC §13): BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP,
// BZPOPMIN, BZPOPMAX, BZMPOP. A handler passes block its command's
// non-blocking form as an attempt; when the first attempt finds nothing
// the client waits, in the order it blocked, on each of its keys.
//
// Clients are woken by a write that may have made a key poppable: the
// handler of such a write (LPUSH, ZADD, LMOVE's destination, RENAME's, …)
// calls c.ready(key), and once the request that wrote is over (a
// command, an EXEC, a script: conn.exec; a read batch's pipelined
// requests: once their pipeline is committed, batch.go's endBatch) its
// connection serves the clients blocked on those keys. On a single server it serves them
// itself, under the registry's lock, before its own reply is sent: each
// blocked client's attempt runs, in blocking order, until one finds
// nothing, and what a served attempt pushes (BLMOVE's destination) is
// served in turn, as Redis serves its ready keys before the next command
// (Redis's "Linked LMOVEs" test). Nothing polls: a blocked client sleeps
// on a channel until it is served, its timeout passes, its client goes
// away, CLIENT UNBLOCK names it, or the server closes.
//
// In a cluster each attempt is a write through the log, which the log's
// applier must not wait for: there the writer only wakes the first
// client blocked on each ready key, which proposes its attempt itself;
// served, it wakes the next. A client blocks on the leader alone (the
// row is effBlock, and routing.go hands it to its handler there), and is
// answered an error when that node stops leading (Server.Pause).
//
// A push and the serving of the clients it readies are not one atomic
// step for clients that do not block: a plain LPOP (or a new BLPOP's
// first attempt) from a third client may take what was pushed before a
// blocked client is served, as if it had come just before the push.
// Blocked clients among themselves are always served in the order they
// blocked.

// blocker is a client blocked on keys.
type blocker struct {
	c    *conn
	keys []string
	// attempt runs the command's non-blocking form on c and reports
	// whether it answered; it writes c's reply only then.
	attempt func() bool
	served  chan struct{} // closed once answered, by an attempt or by unblock
	wake    chan struct{} // in a cluster: the head of a ready key's line is to attempt
	// why, set with served closed and no attempt answered: "timeout"
	// (CLIENT UNBLOCK … TIMEOUT), "error" (… ERROR), "leader" (this node
	// stopped leading) or "closing" (the server closes).
	why  string
	done bool // served or withdrawn; guarded by blocking.mu
	// arrived and ticket order the client in its lines: when its
	// request was read off its socket (unix ns), then when its command
	// began; so that of two clients whose requests came one after the
	// other the first is first in line, whichever registered first.
	arrived int64
	ticket  uint64
}

// blocking is the server's registry of blocked clients: one line per key,
// in the order they blocked.
type blocking struct {
	mu    sync.Mutex
	lines map[string][]*blocker
	byID  map[int64]*blocker
	n     atomic.Int64  // clients blocked: a write with none skips the lock
	seq   atomic.Uint64 // the last ticket handed out
}

// ready notes that the request running on c may have made key poppable;
// the clients blocked on it are served once the request is over.
func (c *conn) ready(key []byte) {
	if c.srv.blocks.n.Load() == 0 {
		return
	}
	c.readyKeys = append(c.readyKeys, string(key))
}

// serveReady serves the clients blocked on the keys the request that just
// ended on c readied: at once on a single server, by waking them in a
// cluster. Inside MULTI or a script it waits for EXEC's or the script's
// end, whose conn.exec calls it again.
func (c *conn) serveReady() {
	if len(c.readyKeys) == 0 || c.store != c.srv.store {
		return
	}
	keys := c.readyKeys
	c.readyKeys = nil
	b := &c.srv.blocks
	if c.srv.cluster != nil {
		b.wakeHeads(keys)
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.serveLocked(keys)
}

// serveLocked serves the clients blocked on keys, each line in its order,
// until an attempt does not answer; what a served attempt readies (a
// BLMOVE's destination) is served in turn. The caller holds b.mu.
func (b *blocking) serveLocked(keys []string) {
	for len(keys) > 0 {
		key := keys[0]
		keys = keys[1:]
		for len(b.lines[key]) > 0 {
			w := b.lines[key][0]
			if !w.attempt() {
				break
			}
			b.remove(w)
			close(w.served)
			keys = append(keys, w.c.readyKeys...)
			w.c.readyKeys = nil
		}
	}
}

// wakeHeads wakes the first client blocked on each key, in a cluster.
func (b *blocking) wakeHeads(keys []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, k := range keys {
		if line := b.lines[k]; len(line) > 0 {
			select {
			case line[0].wake <- struct{}{}:
			default:
			}
		}
	}
}

// remove takes w out of every line; the caller holds b.mu.
func (b *blocking) remove(w *blocker) {
	w.done = true
	for _, k := range w.keys {
		line := b.lines[k]
		for i, x := range line {
			if x == w {
				line = append(line[:i:i], line[i+1:]...)
				break
			}
		}
		if len(line) == 0 {
			delete(b.lines, k)
		} else {
			b.lines[k] = line
		}
	}
	delete(b.byID, w.c.id)
	b.n.Add(-1)
}

// canBlock says a request on c may block: not inside EXEC or a script
// (c.store is then a transaction's view), nor applying a cluster's entry.
func (c *conn) canBlock() bool {
	return c.store == c.srv.store && !c.applyingEntry() && (c.nc != nil || c.ctx != nil)
}

// block runs attempt, the command's non-blocking form, and when it does
// not answer, blocks c on keys until an attempt does or timeout passes
// (0: for ever), and then answers timedOut. attempt reports whether it
// answered. Inside MULTI or a script it does not block: the attempt's
// failure is answered timedOut at once.
//
// On a single server a client that finds others in line on one of its
// keys queues behind them without an attempt of its own, and the lines
// are served at once, in order: it does not take what was pushed for a
// client that blocked before it (Redis serves its blocked clients before
// the next command runs). Otherwise it attempts under the registry's
// lock, so that a write's serving cannot fall between its attempt and
// its registration, and n counts it from the start: a write meanwhile
// notes its keys as ready (conn.ready) and serves them once it has the
// lock.
func (c *conn) block(keys [][]byte, timeout time.Duration, attempt func() bool, timedOut func()) {
	b := &c.srv.blocks
	if !c.canBlock() {
		// Inside EXEC or a script (whose transaction holds every stripe
		// a serving attempt may wait for), or applying a cluster's entry:
		// the registry's lock is never taken here.
		if !attempt() {
			timedOut()
		}
		return
	}
	w := &blocker{c: c, attempt: attempt, served: make(chan struct{}), wake: make(chan struct{}, 1), ticket: b.seq.Add(1), arrived: c.lastActive.Load()}
	seen := map[string]bool{}
	for _, k := range keys {
		if !seen[string(k)] {
			seen[string(k)] = true
			w.keys = append(w.keys, string(k))
		}
	}
	if c.srv.cluster != nil {
		// The attempt is a proposal through the log, which must not run
		// under the registry's lock; wait attempts once more after the
		// registration.
		if attempt() {
			return
		}
		b.mu.Lock()
		b.n.Add(1)
		b.register(w)
		b.mu.Unlock()
		c.wait(w, timeout, timedOut)
		return
	}
	b.n.Add(1)
	b.mu.Lock()
	queued := false
	for _, k := range w.keys {
		queued = queued || len(b.lines[k]) > 0
	}
	if !queued {
		if attempt() {
			b.n.Add(-1)
			b.mu.Unlock()
			return
		}
		b.register(w)
	} else {
		b.register(w)
		b.serveLocked(w.keys)
	}
	b.mu.Unlock()
	c.wait(w, timeout, timedOut)
}

// after says x came after w.
func (x *blocker) after(w *blocker) bool {
	if x.arrived != w.arrived {
		return x.arrived > w.arrived
	}
	return x.ticket > w.ticket
}

// register puts w in its lines, by ticket; the caller holds b.mu and has
// counted w in n.
func (b *blocking) register(w *blocker) {
	if b.lines == nil {
		b.lines, b.byID = map[string][]*blocker{}, map[int64]*blocker{}
	}
	for _, k := range w.keys {
		line := append(b.lines[k], w)
		for i := len(line) - 1; i > 0 && line[i-1].after(w); i-- {
			line[i-1], line[i] = line[i], line[i-1]
		}
		b.lines[k] = line
	}
	b.byID[w.c.id] = w
	w.c.inLine = true
}

// wait sleeps until w is served or ends otherwise, and answers.
func (c *conn) wait(w *blocker, timeout time.Duration, timedOut func()) {
	b := &c.srv.blocks
	defer func() {
		b.mu.Lock()
		c.inLine = false
		b.mu.Unlock()
	}()
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	var gone <-chan struct{}
	if c.ctx != nil {
		gone = c.ctx.Done()
	} else {
		wg := c.watchGone()
		defer wg.stop(c)
		gone = wg.Gone()
	}
	if c.srv.cluster != nil {
		// A write may have come between the first attempt and the
		// registration: attempt once more before sleeping.
		w.wake <- struct{}{}
	}
	for {
		select {
		case <-w.served:
			c.unblocked(w, timedOut)
			return
		case <-w.wake:
			if c.attemptInLine(w) {
				return
			}
			continue
		case <-expired:
		case <-gone:
			c.closing = true
		}
		b.mu.Lock()
		if w.done {
			b.mu.Unlock()
			<-w.served // served as the timer fired: the answer stands
			c.unblocked(w, timedOut)
			return
		}
		b.remove(w)
		b.mu.Unlock()
		if !c.closing {
			timedOut()
		}
		return
	}
}

// attemptInLine is a cluster's blocked client woken at the head of a
// line: it proposes its attempt, and when it answered leaves every line,
// waking the next client of each.
func (c *conn) attemptInLine(w *blocker) bool {
	b := &c.srv.blocks
	b.mu.Lock()
	if w.done {
		b.mu.Unlock()
		return false // unblocked meanwhile: served is closed
	}
	b.mu.Unlock()
	if !w.attempt() {
		return false
	}
	b.mu.Lock()
	if !w.done {
		b.remove(w)
	}
	b.mu.Unlock()
	b.wakeHeads(w.keys)
	return true
}

// unblocked answers a client that left its lines without an attempt of
// its own answering, or whose attempt did.
func (c *conn) unblocked(w *blocker, timedOut func()) {
	switch w.why {
	case "":
		// An attempt answered.
	case "timeout":
		timedOut()
	case "error":
		c.out.Error("UNBLOCKED", "client unblocked via CLIENT UNBLOCK")
	case "leader":
		c.out.Error("TRYAGAIN", "this node stopped leading: retry the blocking command where MOVED points")
	case "closing":
		c.out.Err("server is shutting down")
	}
}

// unblock ends the wait of client id without an attempt, for why (see
// blocker.why); it reports whether that client was blocked here.
func (b *blocking) unblock(id int64, why string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	w := b.byID[id]
	if w == nil || w.done {
		return false
	}
	w.why = why
	b.remove(w)
	close(w.served)
	return true
}

// unblockAll ends every wait, for why: this node stopped leading.
func (b *blocking) unblockAll(why string) {
	b.mu.Lock()
	var ids []int64
	for id := range b.byID {
		ids = append(ids, id)
	}
	b.mu.Unlock()
	for _, id := range ids {
		b.unblock(id, why)
	}
}

// cmdClientUnblock is CLIENT UNBLOCK id [TIMEOUT|ERROR]: a client blocked
// in a blocking pop is answered as its timeout would answer it, or with
// -UNBLOCKED.
func cmdClientUnblock(c *conn, args [][]byte) {
	why := "timeout"
	if len(args) == 4 {
		switch option(args[3]) {
		case "timeout":
		case "error":
			why = "error"
		default:
			c.out.Err("CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
			return
		}
	}
	id, ok := parseInt(args[2])
	if !ok {
		c.out.Err(errNotInteger)
		return
	}
	if c.srv.blocks.unblock(id, why) {
		c.out.Int(1)
	} else {
		c.out.Int(0)
	}
}

// timeoutArg reads a blocking pop's timeout, in seconds with a fraction,
// as Redis does: 0 is for ever.
func timeoutArg(b []byte) (time.Duration, string) {
	f, ok := redistext.ParseFloat(b)
	if !ok {
		return 0, "timeout is not a float or out of range"
	}
	ms := math.Ceil(f * 1000)
	if ms < 0 {
		return 0, "timeout is negative"
	}
	if ms > float64(math.MaxInt64/int64(time.Millisecond)) {
		return maxWait, ""
	}
	return time.Duration(ms) * time.Millisecond, ""
}

// attemptHere runs a blocking command's attempt: local, the non-blocking
// form, on a single server or applying a cluster's entry; on a cluster's
// leader, the request itself through the log, whose entry runs local on
// every node (applying, it never blocks). It reports whether the attempt
// answered: a null reply is no answer, and is taken back.
func (c *conn) attemptHere(args [][]byte, local func() bool) bool {
	if c.srv.cluster == nil || c.applyingEntry() || c.store != c.srv.store {
		return local()
	}
	mark := c.out.Len()
	c.propose(cluster.Entry{Cmds: [][][]byte{args}}, nil)
	if v := c.out.v; v != nil {
		if v.done && v.err == ErrNull {
			v.reset()
			return false
		}
		return true
	}
	switch string(c.out.b[mark:]) {
	case "*-1\r\n", "_\r\n", "$-1\r\n":
		c.out.truncate(mark)
		return false
	}
	return true
}

// popped ends a blocking command's attempt: an error is answered only
// when it is no WRONGTYPE met while blocked (Redis leaves such a client
// blocked), a pop is answered by reply, and nothing popped is no answer
// unless the command cannot block (applying a cluster's entry), which
// answers a null itself.
func (c *conn) popped(err error, ok bool, reply func()) bool {
	switch {
	case err != nil && c.inLine && errors.Is(err, kv.ErrWrongType):
		return false
	case err != nil:
		c.storeError(err)
		return true
	case ok:
		reply()
		return true
	case c.applyingEntry():
		c.out.NullArray()
		return true
	}
	return false
}

// blockingPop is the frame of BLPOP, BRPOP, BZPOPMIN and BZPOPMAX, key
// [key …] timeout: pop tries the keys once (it answers through popped),
// the client blocks on them until a try answers or the timeout passes,
// and a timeout answers a null array.
func (c *conn) blockingPop(args [][]byte, pop func(keys [][]byte) bool) {
	timeout, msg := timeoutArg(args[len(args)-1])
	if msg != "" {
		c.out.Err(msg)
		return
	}
	keys := args[1 : len(args)-1]
	c.block(keys, timeout, func() bool {
		return c.attemptHere(args, func() bool { return pop(keys) })
	}, c.out.NullArray)
}
