package locks

import (
	"context"
	"testing"
	"time"
)

// Once Lost reports a loss, fn's context says so too: Err and Done
// of fn's context never lag behind the lease (SPEC §8, "cancels the
// function's work the moment the lease is lost"). The loss is made from
// another goroutine, as the keeper makes it, and read the moment Lost says
// so; a loss recorded before the context is cancelled is seen here.
func TestLostLeaseCancelsFnContextBeforeAnyoneSeesIt(t *testing.T) {
	l := &Lock{ttl: time.Second, margin: 100 * time.Millisecond}
	for i := range 2000 {
		lease := newLease(l, "k", grant{sent: time.Now(), left: l.ttl})
		ctx, cancel := context.WithCancelCause(context.Background())
		lease.cancel = cancel
		fnCtx := leaseContext{ctx, lease}
		go lease.lose(&LostError{Reason: ReasonRevoked})
		for lease.Lost() == nil { // on another CPU than the loss, if there is one
		}
		if err := fnCtx.Err(); err == nil {
			t.Fatalf("round %d: Lost() reported, fn's context Err() = nil", i)
		}
		select {
		case <-fnCtx.Done():
		default:
			t.Fatalf("round %d: Lost() reported, fn's context Done() still open", i)
		}
		cancel(nil)
	}
}
