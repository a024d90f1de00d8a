package locks

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Elections (SPEC §12) are locks: the leader of (lock, key) is its holder,
// the value it proclaims is the lease's OWNER, and its term is the lease's
// fence, larger for every later leader, across restarts and failovers
// (LOCK-02). Campaign is Hold with the value as owner and no wait limit;
// Leader reads LOCK.INFO; Observe runs LOCK.WATCH in a loop.

// Leader is who leads an election: the value it campaigned with and its
// term, the fence of its lease. The zero Leader, Fence 0, is "none": no
// one holds the key.
type Leader struct {
	Owner string
	Fence int64
}

// None reports whether ld is "none": nobody leads.
func (ld Leader) None() bool { return ld.Fence == 0 }

func (ld Leader) String() string {
	if ld.None() {
		return "none"
	}
	return fmt.Sprintf("%q (term %d)", ld.Owner, ld.Fence)
}

// Campaign waits, without a limit but ctx, until it leads the election
// key, then runs fn as its leader: value (1 to 256 bytes; its address,
// say) is what Leader and Observe show of it, and lease.Fence is its term.
// It is Hold with value as the lease's owner: fn's context is cancelled
// the moment the leadership is lost (revoked, expired, the store
// restarted), and Campaign then returns an error that errors.Is ErrLost,
// even if fn succeeded; when fn returns the key is let go, which is
// resigning, and the next candidate in line leads at once. A Wait option
// of the Lock does not apply: a candidate waits its turn.
//
// Whatever a leader writes to a resource that others may write after it
// should carry its term (SET … FENCE, or the resource's own check of the
// fence), so that a leader that lost its lease without noticing (a
// paused process) cannot overwrite its successor's work.
func (l *Lock) Campaign(ctx context.Context, key, value string, fn func(ctx context.Context, lease *Lease) error) error {
	if len(value) == 0 || len(value) > maxOwnerLen {
		return fmt.Errorf("locks: campaign %s %q: value must be 1 to %d bytes", l.name, key, maxOwnerLen)
	}
	c := *l
	c.owner, c.hasOwner = value, true
	c.wait, c.hasWait = 0, false
	return c.hold(ctx, key, fn, false, false)
}

// Leader is the election key's leader now, or nil when no one leads. On a
// key held SHARED or with a Limit it is the newest of its holders.
func (l *Lock) Leader(ctx context.Context, key string) (*Leader, error) {
	v, err := l.store.Do(ctx, "LOCK.INFO", l.name, key).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("locks: leader of %s %q: %w", l.name, key, err)
	}
	ld, err := leaderOf(v)
	if err != nil {
		return nil, fmt.Errorf("locks: leader of %s %q: %w", l.name, key, err)
	}
	if ld.None() {
		return nil, nil
	}
	return &ld, nil
}

// leaderOf reads the fence and owner of a LOCK.INFO-shaped reply: a map
// (RESP3), a flat array of field and value (RESP2, and a store in this
// process), or nil (free).
func leaderOf(v any) (Leader, error) {
	var pairs []any
	switch v := v.(type) {
	case nil:
		return Leader{}, nil
	case map[any]any:
		for f, x := range v {
			pairs = append(pairs, f, x)
		}
	case []any:
		pairs = v
	default:
		return Leader{}, fmt.Errorf("a reply of %T, want LOCK.INFO's fields", v)
	}
	var ld Leader
	seen := 0
	for i := 0; i+1 < len(pairs); i += 2 {
		name, _ := pairs[i].(string)
		switch name {
		case "fence":
			n, ok := pairs[i+1].(int64)
			if !ok {
				return Leader{}, fmt.Errorf("fence is %T", pairs[i+1])
			}
			ld.Fence = n
			seen++
		case "owner":
			s, ok := pairs[i+1].(string)
			if !ok {
				return Leader{}, fmt.Errorf("owner is %T", pairs[i+1])
			}
			ld.Owner = s
			seen++
		}
	}
	if seen != 2 {
		return Leader{}, errors.New("a reply without fence and owner")
	}
	return ld, nil
}

// Observe follows the election key: it yields the current leader (or
// none) first, then every change the store reports (LOCK.WATCH), until
// ctx ends; then the channel is closed. A receiver that is slow sees the
// latest leader, not every one that came and went meanwhile.
//
// The fences of the leaders it yields only increase: it never yields a
// term older than one it yielded. It outlives cut connections, store
// restarts and cluster failovers by watching again with the last fence it
// saw: a new epoch shows as none, then the new leader. It also closes the
// channel when the store refuses LOCK.WATCH for good (a user that may not
// read, a store without the command); errors it may outlast (the network,
// -TRYAGAIN, -CLUSTERDOWN) it retries, every 50 ms to 1 s.
func (l *Lock) Observe(ctx context.Context, key string) <-chan Leader {
	out := make(chan Leader)
	go l.observe(ctx, key, out)
	return out
}

// watched is one LOCK.WATCH's outcome.
type watched struct {
	ld  Leader
	err error
}

func (l *Lock) observe(ctx context.Context, key string, out chan<- Leader) {
	defer close(out)
	var (
		fence   int64  // what the next LOCK.WATCH waits to change
		last    Leader // the last one yielded
		yielded bool
		top     int64 // the largest fence yielded
		backoff time.Duration
	)
	yield := func(ld Leader) bool {
		select {
		case out <- ld:
			last, yielded = ld, true
			top = max(top, ld.Fence)
			return true
		case <-ctx.Done():
			return false
		}
	}
	// Each LOCK.WATCH runs in its own goroutine, so that the channel
	// closes as ctx ends, not when a watch blocked on the network answers
	// (within a chunk: its TIMEOUT).
	answers := make(chan watched, 1)
	for {
		go func() {
			ld, err := l.watch(ctx, key, fence)
			answers <- watched{ld, err}
		}()
		var w watched
		select {
		case w = <-answers:
		case <-ctx.Done():
			return
		}
		if w.err != nil {
			if ctx.Err() != nil || !outlasts(w.err) {
				return
			}
			backoff = min(max(2*backoff, 50*time.Millisecond), time.Second)
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return
			}
			continue
		}
		backoff = 0
		ld := w.ld
		fence = ld.Fence
		switch {
		case yielded && ld == last:
			continue // TIMEOUT: nothing changed
		case !ld.None() && ld.Fence <= top:
			continue // an older term than one yielded (LOCK-02): never yield it
		case !ld.None() && yielded && !last.None() && ld.Fence>>32 > last.Fence>>32:
			// A new epoch: the last leader's lease ended with the old
			// one, even if no one saw the key free in between.
			if !yield(Leader{}) {
				return
			}
		}
		if !yield(ld) {
			return
		}
	}
}

// watch sends one LOCK.WATCH, waiting at most one chunk.
func (l *Lock) watch(ctx context.Context, key string, fence int64) (Leader, error) {
	v, err := l.store.Do(ctx, "LOCK.WATCH", l.name, key, "FENCE", strconv.FormatInt(fence, 10),
		"TIMEOUT", max(ms(l.chunk), 1)).Result()
	if errors.Is(err, redis.Nil) {
		return Leader{}, nil
	}
	if err != nil {
		return Leader{}, err
	}
	return leaderOf(v)
}

// outlasts reports whether Observe may outlast err by trying again: all
// but the store's refusals that no retry changes.
func outlasts(err error) bool {
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
	}
	msg := rerr.Error()
	for _, p := range []string{"NOPERM", "NOAUTH", "WRONGPASS", "ERR unknown command", "ERR syntax", "ERR wrong number"} {
		if strings.HasPrefix(msg, p) {
			return false
		}
	}
	return true
}
