package resp

import (
	"time"

	"github.com/tenure-db/tenure/kv"
)

// Read batches: the writes of the requests that arrived in one read of a
// connection (a client's pipeline) reach Pebble in one commit, and with
// --fsync always one fsync, instead of one each (kv.Pipeline). Each
// request still runs on its own and gets its own reply; the replies of the
// batch are written only once its writes are committed (flush calls
// endBatch first), and a request that is not batched commits what the
// ones before it wrote before it runs.
//
// This file is the one place where requests are batched; batchFor, called
// by run before a request is dispatched, batches the rows whose effect
// says effBatch (table.go: point reads and writes of named keys, which
// never block), and nothing in a cluster, whose writes go through its log.

// batch is a connection's pipeline and what its replies are.
type batch struct {
	pipe *kv.Pipeline // nil until the connection runs a batched request
	// wrote is set once a request of the batch wrote: from, the reply
	// buffer's length before it, and replies, how many replies from there
	// on tell of what the pipeline holds uncommitted.
	wrote   bool
	from    int
	replies int
	// events are the keyspace notifications of the batch's requests,
	// published once their writes are committed (notify.go).
	events []batchEvent
}

// batchEvent is a keyspace notification waiting for its batch's commit.
type batchEvent struct {
	class notifyClass
	event string
	key   string
}

// batchFor readies the connection's store for the request args: the
// pipeline's view for a batched command on a socket, the server's store
// (with what the pipeline holds committed first) for any other.
func (c *conn) batchFor(args [][]byte) {
	// In a cluster, writes go through its log (resp/routing.go), never a
	// pipeline.
	if c.srv.cluster != nil || c.ctx != nil {
		c.endBatch()
		return
	}
	cmd := lookup(c.srv.table, args[0])
	c.looked = cmd
	if cmd == nil || cmd.Effect&effBatch == 0 {
		c.endBatch()
		return
	}
	if c.batch.pipe == nil {
		c.batch.pipe = c.srv.store.NewPipeline()
	}
	c.store = c.batch.pipe.View()
}

// batched notes, after a request ran, whether its reply tells of a write
// the pipeline holds; mark is the reply buffer's length before it. A
// request that readied keys clients are blocked on (a pipelined RPUSH
// under a BLPOP) ends the batch: its push is committed and those clients
// are served (endBatch) before the next request runs, as Redis serves
// them between two commands, so the requests after it see the list as
// Redis's would. With nobody blocked, c.ready notes nothing.
func (c *conn) batched(mark int) {
	b := &c.batch
	if !b.wrote && b.pipe != nil && c.store == b.pipe.View() && b.pipe.Pending() {
		b.wrote, b.from, b.replies = true, mark, 0
	}
	b.replied()
	if len(c.readyKeys) > 0 {
		c.endBatch()
	}
}

// replied counts a reply written while the batch holds writes.
func (b *batch) replied() {
	if b.wrote {
		b.replies++
	}
}

// endBatch commits what the pipeline holds and puts the server's store
// back, and publishes the keyspace notifications of the batch's writes.
// If the commit fails, every reply from the first write of the batch on
// is replaced by the error: those requests' writes are in doubt, and the
// reads after them may have seen them; their notifications are dropped.
//
// Then, with the pipeline's stripes let go, it serves the clients blocked
// on the keys its pushes readied (blocking.go): serveReady skips them
// while a push is the pipeline's alone, so a BLPOP waiter is woken once,
// by what is committed, before the pusher's replies are written.
func (c *conn) endBatch() {
	if c.commitBatch() {
		c.serveReady()
	}
}

// commitBatch is endBatch's commit; it reports whether the connection was
// on its pipeline.
func (c *conn) commitBatch() bool {
	b := &c.batch
	if b.pipe == nil || c.store != b.pipe.View() {
		return false
	}
	c.store = c.srv.store
	c.lastEnd = time.Time{} // the commit is no request's time
	wrote, from, replies := b.wrote, b.from, b.replies
	b.wrote, b.from, b.replies = false, 0, 0
	err := b.pipe.Commit()
	events := b.events
	b.events = b.events[:0]
	if err == nil {
		for _, e := range events {
			c.srv.notify(e.class, e.event, []byte(e.key))
		}
	}
	clear(events)
	if err == nil || !wrote {
		return true
	}
	c.srv.log.Error("store failed", "err", err, "replies", replies)
	c.out.truncate(from)
	for range replies {
		c.out.Err("store failed: " + err.Error())
	}
	return true
}
