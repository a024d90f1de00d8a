package resp

import (
	"errors"
	"strconv"
	"time"
	"unsafe"

	"github.com/tenure-db/tenure/internal/lockspec"
	"github.com/tenure-db/tenure/lockmod"
)

// Lock commands (SPEC §3, §12): LOCK.HOLD, LOCK.RENEW, LOCK.RELEASE,
// LOCK.INFO, LOCK.LIST, LOCK.HOLDERS, LOCK.REVOKE; LOCK.WATCH is
// lockwatch.go's. The semantics are
// lockmod's; this file parses, waits and replies.

// maxWait is LOCK.HOLD's longest WAIT, about 35 years: "no limit" in
// practice. The other ranges of SPEC §3 are lockspec's.
const maxWait = (1 << 40) * time.Millisecond

// msArg parses an option's integer milliseconds within [lo, hi], or
// returns the error text naming the range in milliseconds.
func msArg(name string, b []byte, lo, hi time.Duration) (time.Duration, string) {
	n, ok := parseInt(b)
	if !ok || n < ms(lo) || n > ms(hi) {
		return 0, name + " must be an integer from " + itoa(ms(lo)) + " to " + itoa(ms(hi))
	}
	return time.Duration(n) * time.Millisecond, ""
}

// lengthArg returns the error text for a name outside 1 to max bytes.
func lengthArg(name string, b []byte, max int) string {
	if len(b) == 0 || len(b) > max {
		return name + " must be 1 to " + itoa(int64(max)) + " bytes"
	}
	return ""
}

func ms(d time.Duration) int64 { return d.Milliseconds() }

// msOrNone is d in milliseconds when it applies, else -1: how LOCK.INFO and
// LOCK.LIST spell "no deadline" (SPEC §3).
func msOrNone(d time.Duration, applies bool) int64 {
	if !applies {
		return -1
	}
	return ms(d)
}

// argView is an argument as a string without a copy, for a call that keeps
// no reference to it once it returns: lockmod.Manager.Hold copies what it
// keeps. A LOCK.HOLD granted at once then allocates nothing here.
func argView(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// lockError answers an error from lockmod.
func (c *conn) lockError(err error) {
	var lost *lockmod.LostError
	switch {
	case errors.As(err, &lost):
		c.srv.metrics.lost(lost.Reason)
		c.out.Error("LOST", lost.Reason)
	case errors.Is(err, lockmod.ErrSuperseded), errors.Is(err, lockmod.ErrReqIDInUse), errors.Is(err, lockmod.ErrHeldInProcess):
		c.out.Err(err.Error())
	case errors.As(err, new(*lockmod.LimitError)):
		c.out.Err(err.Error()) // LOCK-15: "this key is in use with LIMIT 5"

	case errors.Is(err, lockmod.ErrNoEpoch):
		c.out.Error("TRYAGAIN", "this node stopped leading: its leases ended with its epoch")
	case errors.Is(err, lockmod.ErrPaused):
		c.out.Error("TRYAGAIN", "this node does not lead now")
	case errors.Is(err, lockmod.ErrClosed):
		c.out.Err("server is shutting down")
	default:
		c.srv.log.Error("lock module failed", "err", err)
		c.out.Err(err.Error())
	}
}

// cmdLockHold is LOCK.HOLD lock key reqid [TTL ms] [WAIT ms] [MAXHOLD ms]
// [LIMIT n | SHARED] [OWNER text].
// While it waits in line only its own connection blocks, and a client that
// goes away is noticed at once: its request is withdrawn and its place
// lingers (SPEC §3).
func cmdLockHold(c *conn, args [][]byte) {
	req, msg := holdRequest(args)
	if msg != "" {
		c.out.Err(msg)
		return
	}
	if c.tx.executing {
		req.Wait, req.HasWait = 0, true // as Redis runs a blocking command inside EXEC (SPEC §6)
	}
	t := c.srv.locks.Hold(req)
	if !c.awaitAnswer(t) {
		return // the client is gone: nobody to answer
	}
	g, err := t.Result()
	switch {
	case errors.Is(err, lockmod.ErrAbandoned):
		return // withdrawn because the client went away: nobody to answer
	case errors.Is(err, lockmod.ErrNotGranted):
		c.out.NullArray()
	case err != nil:
		c.lockError(err)
	case c.srv.cluster != nil && !c.srv.cluster.LocksReady():
		// Granted while this node's lease on leadership ran out (a
		// waiter served by an expiry on a leader thawed after a freeze):
		// told, the client would hold in an epoch a newer leader may
		// already have granted past (LOCK-14). Untold, the lease ends
		// with this leadership or its ttl; a retry goes to the leader.
		c.out.Error("TRYAGAIN", "this node no longer leads for certain")
	default:
		var id [32]byte
		c.out.Array(3)
		c.out.Bulk(g.AppendLeaseID(id[:0]))
		c.out.Int(int64(g.Fence))
		c.out.Int(msOrNone(g.TTLLeft, g.Ending == nil)) // a retry that found a lease held in process (LOCK-13)
	}
}

// holdRequest reads LOCK.HOLD's arguments, or returns the error text to
// answer. Adding an option is one opt here.
func holdRequest(args [][]byte) (lockmod.HoldRequest, string) {
	lock, key, reqid := args[1], args[2], args[3]
	for _, msg := range [...]string{
		lengthArg("lock", lock, lockspec.MaxLockLen),
		lengthArg("key", key, lockspec.MaxKeyLen),
		lengthArg("reqid", reqid, lockspec.MaxReqIDLen),
	} {
		if msg != "" {
			return lockmod.HoldRequest{}, msg
		}
	}
	req := lockmod.HoldRequest{Lock: argView(lock), Key: argView(key), ReqID: argView(reqid), TTL: lockspec.DefaultTTL}
	msg := parseOptions(args[4:],
		opt{name: "ttl", value: true, once: true, set: func(v []byte) (msg string) {
			req.TTL, msg = msArg("ttl", v, lockspec.MinTTL, lockspec.MaxTTL)
			return msg
		}},
		opt{name: "wait", value: true, once: true, set: func(v []byte) (msg string) {
			req.Wait, msg = msArg("wait", v, 0, maxWait)
			req.HasWait = true
			return msg
		}},
		opt{name: "maxhold", value: true, once: true, set: func(v []byte) (msg string) {
			req.MaxHold, msg = msArg("maxhold", v, lockspec.MinMaxHold, lockspec.MaxMaxHold)
			return msg
		}},
		opt{name: "limit", value: true, once: true, set: func(v []byte) string {
			n, ok := parseInt(v)
			if !ok || n < 1 || n > lockspec.MaxLimit {
				return "limit must be an integer from 1 to " + itoa(lockspec.MaxLimit)
			}
			req.Limit = int(n)
			return ""
		}},
		opt{name: "shared", once: true, set: func([]byte) string {
			req.Shared = true
			return ""
		}},
		opt{name: "owner", value: true, once: true, set: func(v []byte) string {
			if msg := lengthArg("owner", v, lockspec.MaxOwnerLen); msg != "" {
				return msg
			}
			req.Owner = argView(v)
			return ""
		}},
	)
	if msg == "" && req.Shared && req.Limit != 0 {
		msg = errSyntax // SPEC §3: LIMIT and SHARED together
	}
	return req, msg
}

// awaitAnswer waits for t to be answered, watching the client meanwhile. It
// is false when the client went away first: the request is abandoned.
func (c *conn) awaitAnswer(t lockmod.Ticket) bool {
	select {
	case <-t.Done():
		return true
	default:
	}
	if c.ctx != nil {
		return c.awaitInProcess(t)
	}
	w := c.watchGone()
	select {
	case <-t.Done():
	case <-w.Gone():
		// Never grant to a request whose client is known gone; should
		// the grant have won the race, the lease stays live for a
		// retry with the same reqid (LOCK-03) or runs out. Nor run
		// what the client pipelined behind this request: it is gone.
		t.Abandon()
		c.closing = true
	}
	w.stop(c)
	select {
	case <-t.Done():
		return true
	default:
		return false
	}
}

// awaitInProcess is awaitAnswer for a request run in process: its context
// ending is its client going away.
func (c *conn) awaitInProcess(t lockmod.Ticket) bool {
	select {
	case <-t.Done():
		return true
	case <-c.ctx.Done():
		t.Abandon()
	}
	select {
	case <-t.Done():
		return true
	default:
		return false
	}
}

// cmdLockRenew is LOCK.RENEW leaseid [TTL ms].
func cmdLockRenew(c *conn, args [][]byte) {
	var ttl time.Duration
	msg := parseOptions(args[2:], opt{name: "ttl", value: true, once: true, set: func(v []byte) (msg string) {
		ttl, msg = msArg("ttl", v, lockspec.MinTTL, lockspec.MaxTTL)
		return msg
	}})
	if msg != "" {
		c.out.Err(msg)
		return
	}
	left, err := c.srv.locks.Renew(string(args[1]), ttl)
	if err != nil {
		c.lockError(err)
		return
	}
	c.out.Int(ms(left))
}

func cmdLockRelease(c *conn, args [][]byte) {
	if err := c.srv.locks.Release(string(args[1])); err != nil {
		c.lockError(err)
		return
	}
	c.out.Int(1)
}

// cmdLockInfo never shows a lease id (LOCK-04: the id is the holder's
// secret). Its reply is a map of nine fields (SPEC §6: a map in RESP3);
// with several live leases, fence, ttl, held, maxhold and owner are the
// newest's (SPEC §3).
func cmdLockInfo(c *conn, args [][]byte) {
	info, ok := c.srv.locks.Info(string(args[1]), string(args[2]))
	c.keyInfo(info, ok)
}

// keyInfo answers a key's state as LOCK.INFO shows it: null when it is
// free and nobody waits, else a map of nine fields (an array of pairs in
// RESP2).
func (c *conn) keyInfo(info lockmod.KeyInfo, ok bool) {
	if !ok {
		c.out.NullArray()
		return
	}
	c.out.Map(9)
	c.out.BulkString("fence")
	c.out.Int(int64(info.Fence))
	c.out.BulkString("ttl")
	c.out.Int(msOrNone(info.TTL, info.Fence != 0 && !info.InProcess)) // LOCK-13: as a key without expiry
	c.out.BulkString("held")
	c.out.Int(msOrNone(info.Held, info.Fence != 0))
	c.out.BulkString("maxhold")
	c.out.Int(msOrNone(info.MaxHold, info.MaxHold > 0))
	c.out.BulkString("waiters")
	c.out.Int(int64(info.Waiters))
	c.out.BulkString("holders")
	c.out.Int(int64(info.Holders))
	c.out.BulkString("limit")
	c.out.Int(int64(info.Limit))
	c.out.BulkString("shared")
	c.out.Int(boolInt(info.Shared))
	c.out.BulkString("owner")
	c.out.BulkString(info.Owner) // LOCK-16
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// cmdLockHolders is LOCK.HOLDERS lock key: every live lease of the key,
// oldest first, each a map of fence, ttl, held, maxhold, shared, owner.
// Never a lease id (LOCK-04, LOCK-16).
func cmdLockHolders(c *conn, args [][]byte) {
	hs := c.srv.locks.Holders(string(args[1]), string(args[2]))
	c.out.Array(len(hs))
	for _, h := range hs {
		c.out.Map(6)
		c.out.BulkString("fence")
		c.out.Int(int64(h.Fence))
		c.out.BulkString("ttl")
		c.out.Int(msOrNone(h.TTL, !h.InProcess))
		c.out.BulkString("held")
		c.out.Int(ms(h.Held))
		c.out.BulkString("maxhold")
		c.out.Int(msOrNone(h.MaxHold, h.MaxHold > 0))
		c.out.BulkString("shared")
		c.out.Int(boolInt(h.Shared))
		c.out.BulkString("owner")
		c.out.BulkString(h.Owner)
	}
}

// cmdLockList is LOCK.LIST lock [CURSOR c] [COUNT n]: a SCAN over the keys
// of a lock that are held or waited for. Each entry is key, fence, ttl,
// waiters, holders, owner (the newest live lease's fence, ttl and owner);
// never a lease id (LOCK-04).
func cmdLockList(c *conn, args [][]byte) {
	var (
		cursor uint64
		count  = lockmod.DefaultListCount
	)
	msg := parseOptions(args[2:],
		opt{name: "cursor", value: true, once: true, set: func(v []byte) string {
			n, err := strconv.ParseUint(string(v), 10, 64)
			if err != nil {
				return "invalid cursor"
			}
			cursor = n
			return ""
		}},
		opt{name: "count", value: true, once: true, set: func(v []byte) (msg string) {
			count, msg = countArg(v)
			return msg
		}},
	)
	if msg != "" {
		c.out.Err(msg)
		return
	}
	next, entries := c.srv.locks.List(string(args[1]), cursor, count)
	c.out.Array(2)
	c.out.BulkUint(next)
	c.out.Array(len(entries))
	for _, e := range entries {
		c.out.Array(6)
		c.out.BulkString(e.Key)
		c.out.Int(int64(e.Fence))
		c.out.Int(msOrNone(e.TTL, e.Fence != 0 && !e.InProcess))
		c.out.Int(int64(e.Waiters))
		c.out.Int(int64(e.Holders))
		c.out.BulkString(e.Owner)
	}
}

// cmdLockRevoke is LOCK.REVOKE lock key [FENCE f]: it ends the key's live
// leases, or only the one with fence f, and replies how many it ended. The
// line the log keeps of each is written by the lock module's observer (see
// leaseObserver), as for MAXHOLD.
func cmdLockRevoke(c *conn, args [][]byte) {
	var fence uint64
	msg := parseOptions(args[3:], opt{name: "fence", value: true, once: true, set: func(v []byte) string {
		n, ok := parseInt(v)
		if !ok || n < 1 {
			return "fence must be a positive integer"
		}
		fence = uint64(n)
		return ""
	}})
	if msg != "" {
		c.out.Err(msg)
		return
	}
	c.out.Int(int64(c.srv.locks.RevokeFence(string(args[1]), string(args[2]), fence)))
}
