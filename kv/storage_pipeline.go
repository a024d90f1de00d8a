package kv

// Pipelines: the commands of one read batch of a connection (a client's
// pipeline of SETs, say) commit to Pebble in one batch, with one sync,
// instead of one commit and one WAL write(2) each.

// Pipeline gathers the writes of a run of commands into one batch, which
// Commit commits. Its commands run on View as they would on the store, each
// on its own: each sees what the ones before it wrote, one that fails
// leaves the batch as it was, and each judges expiry at its own instant.
// Unlike Tx, a pipeline is not atomic: Commit may commit it in parts.
//
// While it has writes pending it holds the stripes of the keys they touch,
// so that no other write falls in between, and readers elsewhere see none
// of its writes until they are committed. It never waits for a stripe while it holds one: when a
// stripe it needs is taken, it commits what it has, lets its stripes go and
// then waits. So a pipeline's writes must reach Commit soon: the caller
// commits before anything that may block (reading from its client, a
// blocking command, a command not run on View) and before it tells anyone
// of a pipelined write's outcome.
//
// Only the keyspace's plain reads and writes run on View (GET, SET, INCR,
// DEL, MSET …); Tx, Watch, FlushAll, DBSize, scans and MGET of several keys
// must run on the store itself.
type Pipeline struct {
	view Store
	t    txn
	held [numStripes / 64]uint64 // the stripes the pipeline holds
	owed bool                    // a part committed before Commit, not yet settled
	err  error                   // a part's commit that failed before Commit
}

// NewPipeline returns an empty pipeline of s.
func (s *Store) NewPipeline() *Pipeline {
	p := &Pipeline{}
	p.t.pipe = p
	p.view = Store{keyspace: s.keyspace, tx: &p.t}
	return p
}

// View is the store that the pipeline's commands run on.
func (p *Pipeline) View() *Store { return &p.view }

// Pending reports whether the pipeline holds writes not yet committed.
func (p *Pipeline) Pending() bool { return p.t.b != nil || p.err != nil }

// Commit commits what the pipeline wrote, lets its stripes go (it may
// hold some with nothing pending: a command that read, or wrote nothing,
// holds its keys' too), and then
// waits for the fsync mode's durability (at most one WAL sync for the
// whole pipeline, shared with other writers: see Store.settle). An error means some of its writes may not have
// reached the disk; the pipeline is empty afterwards either way.
func (p *Pipeline) Commit() error {
	p.commitPart()
	// Only now, between commands: a part committed early (acquire) is in
	// the middle of one, whose item's data key is in the scratch still.
	keepScratch(&p.t.scratch.dks)
	keepScratch(&p.t.scratch.vals)
	err := p.err
	if err == nil && p.owed {
		err = p.view.settle()
	}
	p.err, p.owed = nil, false
	if err != nil {
		return wrap("pipeline", err)
	}
	return nil
}

// maxKeptScratch is the most room for data keys (and for values kept for
// the metadata cache) a pipeline keeps from one commit to the next.
const maxKeptScratch = 64 << 10

// commitPart commits the batch, with its stripes held, and then lets them
// go. A failure is kept for Commit to report.
func (p *Pipeline) commitPart() {
	t, s := &p.t, &p.view
	if t.b != nil {
		if err := t.commit(s); err != nil && p.err == nil {
			p.err = err
		}
		p.owed = p.owed || t.wrote
		_ = t.b.Close()
	}
	forStripes(&p.held, func(n int) { s.stripes[n].Unlock() })
	p.held = [numStripes / 64]uint64{}
	clear(t.items)
	clear(t.touched)
	t.b, t.items, t.wrote = nil, t.items[:0], false
	t.counts = change{}
}

// keepScratch empties buf for the next commit, keeping its room unless
// that is more than maxKeptScratch.
func keepScratch(buf *[]byte) {
	if cap(*buf) <= maxKeptScratch {
		*buf = (*buf)[:0]
	} else {
		*buf = nil
	}
}

// acquire takes the stripes in need that the pipeline does not hold yet.
// When one is taken by someone else, it first commits the pipeline's
// writes and lets its stripes go, and then waits for them in ascending
// order, as updateMany does. The caller's items must be loaded after it.
func (p *Pipeline) acquire(need *[numStripes / 64]uint64) error {
	s, held := &p.view, &p.held
	var missing [numStripes / 64]uint64
	any := false
	for w := range need {
		missing[w] = need[w] &^ held[w]
		any = any || missing[w] != 0
	}
	if !any {
		return nil
	}
	free := true
	forStripes(&missing, func(n int) {
		if free && !s.stripes[n].TryLock() {
			free = false
			return
		}
		if free {
			held[n/64] |= 1 << (n % 64)
		}
	})
	if free {
		return nil
	}
	p.commitPart()
	forStripes(need, func(n int) { s.stripes[n].Lock() })
	*held = *need
	return p.err
}
