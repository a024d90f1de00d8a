package lockmod

// Leases held in the store's own process (LOCK-13): no ttl deadline and no
// renewal, since their holder cannot die apart from the store. What may
// still end one — Release, MAXHOLD, Revoke, Close — tells the holder at
// once through its Ending.

// Ending tells the holder of a lease held in process (HoldRequest.InProcess)
// the moment its lease ends, and why.
type Ending struct {
	done chan struct{}
	err  error // set before done is closed
}

// newEnding is the Ending of req if it asks to be held in process, else nil.
func newEnding(req HoldRequest) *Ending {
	if !req.InProcess {
		return nil
	}
	return &Ending{done: make(chan struct{})}
}

// Done is closed the moment the lease ends. The Manager closes it under its
// lock, in the step that ends the lease and grants the next in line.
func (e *Ending) Done() <-chan struct{} { return e.done }

// Err is nil while the lease lives. Once Done is closed it says why the
// lease ended: a *LostError with the reason of SPEC §4 ("released",
// "revoked maxhold", "revoked by admin"), or ErrClosed when the Manager
// closed with the lease live.
func (e *Ending) Err() error {
	select {
	case <-e.done:
		return e.err
	default:
		return nil
	}
}

// finish ends e. Called under the Manager's lock, once.
func (e *Ending) finish(err error) {
	e.err = err
	close(e.done)
}
