package locks_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure/sdk/locks"
)

// summarize stands in for a slow model call that honours its context.
func summarize(ctx context.Context, messages []string) (string, error) {
	select {
	case <-time.After(2 * time.Second):
		return strings.Join(messages, " / "), nil
	case <-ctx.Done():
		return "", context.Cause(ctx) // the lease was lost, or the caller gave up
	}
}

// One worker at a time summarizes a chat. The summary is saved with the
// lease's fence, so a worker that lost its lease while the model ran cannot
// overwrite a newer summary.
func Example() {
	store := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer store.Close()

	summaries, err := locks.OpenLock(store, "summaries", locks.TTL(30*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	chatID := "chat-42"
	messages := []string{"hello", "are we shipping friday?", "yes"}

	err = summaries.Hold(ctx, chatID, func(ctx context.Context, lease *locks.Lease) error {
		text, err := summarize(ctx, messages) // ctx ends when the lease is lost
		if err != nil {
			return err
		}
		return store.Do(ctx, "SET", "summary:"+chatID, text, "FENCE", lease.Fence).Err()
	})
	var lost *locks.LostError
	switch {
	case errors.As(err, &lost):
		// Another worker may have run beside this one: the fence kept the
		// store right; the caller may want to check or retry.
		log.Printf("summary of %s: lease lost (%s)", chatID, lost.Reason)
	case err != nil:
		log.Printf("summary of %s: %v", chatID, err)
	}
}

// TryHold does the work only if nobody else is doing it now.
func ExampleLock_TryHold() {
	store := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer store.Close()
	reports, err := locks.OpenLock(store, "reports", locks.TTL(10*time.Second))
	if err != nil {
		log.Fatal(err)
	}

	err = reports.TryHold(context.Background(), "daily", func(ctx context.Context, lease *locks.Lease) error {
		fmt.Println("building the daily report with fence", lease.Fence)
		return nil
	})
	if errors.Is(err, locks.ErrNotHeld) {
		fmt.Println("another worker is building it")
	}
}

// A fenced write: SET … FENCE f refuses any write with a smaller fence than
// the largest one that wrote the key (LOCK-12), so a holder that lost its
// lease and wakes up late cannot undo the next holder's work.
func Example_fencedWrite() {
	store := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer store.Close()
	accounts, err := locks.OpenLock(store, "accounts", locks.TTL(5*time.Second), locks.MaxHold(time.Minute))
	if err != nil {
		log.Fatal(err)
	}

	err = accounts.Hold(context.Background(), "alice", func(ctx context.Context, lease *locks.Lease) error {
		balance, err := store.Get(ctx, "balance:alice").Int64()
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		err = store.Do(ctx, "SET", "balance:alice", balance+10, "FENCE", lease.Fence).Err()
		if err != nil && strings.HasPrefix(err.Error(), "FENCED") {
			return fmt.Errorf("a newer holder wrote first: %w", err)
		}
		return err
	})
	if err != nil {
		log.Print(err)
	}
}

// One node of several runs the scheduler; its term, the lease's fence,
// goes with every job it enqueues, so that a scheduler that lost its
// leadership without noticing cannot enqueue beside its successor.
func ExampleLock_Campaign() {
	store := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer store.Close()
	sched, err := locks.OpenLock(store, "scheduler", locks.TTL(10*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	for ctx.Err() == nil {
		err := sched.Campaign(ctx, "cron", "node-a:8080", func(ctx context.Context, lease *locks.Lease) error {
			for {
				select {
				case <-ctx.Done(): // leadership lost, or ctx ended
					return nil
				case <-time.After(time.Minute):
					job := fmt.Sprintf("report-%d", time.Now().Unix())
					if err := store.Do(ctx, "SET", "job:"+job, "queued", "FENCE", lease.Fence).Err(); err != nil {
						return err // FENCED: a newer leader has written
					}
				}
			}
		})
		if errors.Is(err, locks.ErrLost) {
			log.Printf("lost leadership: %v", err)
		}
	}
}

// Everyone else follows who leads.
func ExampleLock_Observe() {
	store := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer store.Close()
	sched, err := locks.OpenLock(store, "scheduler")
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	for ld := range sched.Observe(ctx, "cron") {
		if ld.None() {
			log.Print("no scheduler right now")
			continue
		}
		log.Printf("the scheduler is %s, term %d", ld.Owner, ld.Fence)
	}
}
