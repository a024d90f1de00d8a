package tenure_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/tenure-db/tenure"
	"github.com/tenure-db/tenure/sdk/locks"
)

// The store in a program's own process: open it, hold a key with the SDK,
// and write under the lease's fence, all without a socket.
func Example() {
	dir, err := os.MkdirTemp("", "tenure-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	db, err := tenure.Open(dir, tenure.Options{Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	summaries, err := locks.OpenLock(db, "summaries")
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	err = summaries.Hold(ctx, "chat-1", func(ctx context.Context, lease *locks.Lease) error {
		return db.Do(ctx, "SET", "summary:chat-1", "a short summary", "FENCE", lease.Fence).Err()
	})
	if err != nil {
		log.Fatal(err)
	}
	text, err := db.Do(ctx, "GET", "summary:chat-1").Text()
	fmt.Println(text, err)
	// Output: a short summary <nil>
}
