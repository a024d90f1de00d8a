package resp

import (
	"github.com/tenure-db/tenure/kv"
)

// Transactions (SPEC §6): MULTI, EXEC, DISCARD, WATCH, UNWATCH, with Redis
// 7's semantics. Inside MULTI, dispatch queues each admitted request and
// answers +QUEUED; a request it refuses (unknown, wrong arity, a role the
// connection lacks, a command not allowed inside) is answered at once and
// makes EXEC answer -EXECABORT. EXEC runs the queue in one kv transaction
// (kv.Store.Tx): every command through the usual dispatch, its reply an
// element of EXEC's array, its writes in the one batch the transaction
// commits. A command that fails there is one error in the array, as in
// Redis; nothing is rolled back.
//
// LOCK.* commands run there in order like the others, LOCK.HOLD as WAIT 0
// (never blocking, as Redis runs a blocking command inside EXEC). They act
// on the lock module at once, not at the commit, and no failure of the
// transaction undoes them. "One instant" means: no other client's write
// to the keyspace falls between the commands of an EXEC (kv holds every
// stripe from the first command to the commit), and kv judges expiry for
// all of them at the time EXEC started. Other clients' LOCK.* commands may
// still run between them: so `MULTI; LOCK.RENEW id; SET k v FENCE f; EXEC`
// writes k only with the fence checked against a keyspace nobody else
// wrote since the renewal, and the renewal, which extended the lease,
// leaves no moment at which another holder could have been granted.

// maxQueuedBytes bounds what a connection may queue between MULTI and EXEC
// (SPEC §7: the server never grows without bound); Redis has no such cap.
const maxQueuedBytes = 512 << 20

// txState is a connection's transaction: the queue between MULTI and EXEC
// and its watched keys.
type txState struct {
	queueing  bool       // between MULTI and EXEC or DISCARD
	executing bool       // running the queue, inside EXEC
	discarded bool       // a request was refused while queueing: EXEC answers EXECABORT
	queued    [][][]byte // the requests, copied: the reader's buffer moves on
	bytes     int64
	watch     kv.Watch
}

// refused is dispatch's word that it refused a request.
func (t *txState) refused() {
	if t.queueing {
		t.discarded = true
	}
}

// queue keeps a copy of args for EXEC, in one allocation. It is false,
// keeping nothing, when the queue would grow over maxQueuedBytes.
func (t *txState) queue(args [][]byte) bool {
	n := 0
	for _, a := range args {
		n += len(a)
	}
	if t.bytes+int64(n) > maxQueuedBytes {
		return false
	}
	t.bytes += int64(n)
	buf := make([]byte, 0, n)
	kept := make([][]byte, len(args))
	for i, a := range args {
		buf = append(buf, a...)
		kept[i] = buf[len(buf)-len(a):]
	}
	t.queued = append(t.queued, kept)
	return true
}

// endTx leaves MULTI and unwatches every key: what EXEC, DISCARD, RESET
// and the connection's end do.
func (c *conn) endTx() {
	c.tx.queueing, c.tx.discarded = false, false
	c.tx.queued, c.tx.bytes = nil, 0
	if c.tx.watch.Len() > 0 {
		c.srv.store.Unwatch(&c.tx.watch)
	}
}

func cmdMulti(c *conn, args [][]byte) {
	if c.tx.queueing {
		c.out.Err("MULTI calls can not be nested") // Redis does not discard the transaction for it
		return
	}
	c.tx.queueing = true
	c.out.OK()
}

func cmdDiscard(c *conn, args [][]byte) {
	if !c.tx.queueing {
		c.out.Err("DISCARD without MULTI")
		return
	}
	c.endTx()
	c.out.OK()
}

func cmdWatch(c *conn, args [][]byte) {
	if c.tx.queueing {
		c.out.Err("WATCH inside MULTI is not allowed")
		return
	}
	for _, k := range args[1:] {
		if err := c.store.Watch(&c.tx.watch, k); err != nil {
			c.storeError(err)
			return
		}
	}
	c.out.OK()
}

// cmdUnwatch is UNWATCH. Queued, as Redis queues it, it does nothing at
// EXEC time but answer: EXEC unwatches everything once it has run.
func cmdUnwatch(c *conn, args [][]byte) {
	if !c.tx.executing {
		c.endTx()
	}
	c.out.OK()
}

func cmdExec(c *conn, args [][]byte) {
	if !c.tx.queueing {
		c.out.Err("EXEC without MULTI")
		return
	}
	queued := c.tx.queued
	if c.tx.discarded {
		c.endTx()
		c.out.Error("EXECABORT", "Transaction discarded because of previous errors.")
		return
	}
	c.tx.queueing, c.tx.queued = false, nil
	var w *kv.Watch
	if c.tx.watch.Len() > 0 {
		w = &c.tx.watch
	}
	mark := c.out.Len()
	ran, err := c.srv.store.Tx(w, func(tx *kv.Store) {
		c.store, c.tx.executing = tx, true
		defer func() { c.store, c.tx.executing = c.srv.store, false }()
		c.out.Array(len(queued))
		for _, q := range queued {
			c.exec(q)
		}
	})
	c.endTx()
	switch {
	case err != nil:
		// The commit failed: nothing the replies tell of happened.
		c.out.truncate(mark)
		c.storeError(err)
	case !ran:
		c.out.NullArray()
	}
}
