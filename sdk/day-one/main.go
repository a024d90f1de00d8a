// Command day-one is the Go SDK's example of SPEC §8 as a user writes it on
// day one: make sdks copies it into a fresh Go module that requires
// github.com/tenure-db/tenure (replaced by this repository) and runs it
// against a real server. It holds a chat's key while a stand-in model
// summarizes, saves the summary with the lease's fence, then shows the two
// errors a user handles: TryHold on a held key (ErrNotHeld) and a lease
// revoked while its function runs (ErrLost, with the store's reason).
//
//	go run . 127.0.0.1:6379
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure/sdk/locks"
)

// model stands in for the user's slow call, which honours its context.
type model struct{}

func (model) Summarize(ctx context.Context, messages []string) (string, error) {
	select {
	case <-time.After(50 * time.Millisecond):
		return strings.Join(messages, " / "), nil
	case <-ctx.Done():
		return "", context.Cause(ctx)
	}
}

func main() {
	if len(os.Args) != 2 {
		log.Fatal("usage: day-one host:port")
	}
	store := redis.NewClient(&redis.Options{Addr: os.Args[1]})
	defer store.Close()
	ctx := context.Background()
	chatID, messages := "chat-42", []string{"hi", "hello"}
	saveSummary := func(ctx context.Context, chatID, text string, fence int64) error {
		return store.Do(ctx, "SET", "summary:"+chatID, text, "FENCE", fence).Err()
	}

	// The seed's example, as SPEC §8 has it.
	summaries, err := locks.OpenLock(store, "summaries", locks.TTL(30*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	var model model
	err = summaries.Hold(ctx, chatID, func(ctx context.Context, lease *locks.Lease) error {
		text, err := model.Summarize(ctx, messages) // ctx ends when the lease is lost
		if err != nil {
			return err
		}
		return saveSummary(ctx, chatID, text, lease.Fence)
	})
	if err != nil {
		log.Fatalf("hold: %v", err)
	}
	saved, err := store.Get(ctx, "summary:"+chatID).Result()
	if err != nil || saved != "hi / hello" {
		log.Fatalf("summary:%s is %q (%v), want %q", chatID, saved, err, "hi / hello")
	}
	fmt.Println("go: held, saved with the fence:", saved)

	// TryHold on a key this process holds: ErrNotHeld, fn not run.
	err = summaries.Hold(ctx, chatID, func(ctx context.Context, lease *locks.Lease) error {
		return summaries.TryHold(ctx, chatID, func(context.Context, *locks.Lease) error {
			return errors.New("ran on a held key")
		})
	})
	if !errors.Is(err, locks.ErrNotHeld) {
		log.Fatalf("TryHold on a held key: %v, want ErrNotHeld", err)
	}
	fmt.Println("go: TryHold on a held key:", err)

	// An admin's revoke ends the function's context; Hold says ErrLost even
	// though the function returned nil.
	err = summaries.Hold(ctx, chatID, func(ctx context.Context, lease *locks.Lease) error {
		if err := store.Do(ctx, "LOCK.REVOKE", "summaries", chatID).Err(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(20 * time.Second):
			return errors.New("not cancelled after the revoke")
		}
	})
	var lost *locks.LostError
	if !errors.As(err, &lost) || !errors.Is(err, locks.ErrLost) || lost.Reason != locks.ReasonRevoked {
		log.Fatalf("hold revoked: %v, want a LostError %q", err, locks.ReasonRevoked)
	}
	fmt.Println("go: revoked while held:", err)
}
