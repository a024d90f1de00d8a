package tenure_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure"
	"github.com/tenure-db/tenure/sdk/locks"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// open opens a store on a fresh directory, closed at the test's end.
func open(t *testing.T) *tenure.DB {
	t.Helper()
	db, err := tenure.Open(t.TempDir(), tenure.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// serve serves db on a loopback port and returns a RESP2 client of it.
func serve(t *testing.T, db *tenure.DB) *redis.Client {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- db.Serve(ln) }()
	t.Cleanup(func() {
		db.Close()
		if err := <-done; !errors.Is(err, tenure.ErrClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	c := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), Protocol: 2})
	t.Cleanup(func() { c.Close() })
	return c
}

// Do answers what a client of Serve is answered, errors included (SPEC §11).
func TestDoAnswersAsAConnection(t *testing.T) {
	db := open(t)
	client := serve(t, db)
	ctx := context.Background()
	for _, args := range [][]any{
		{"SET", "k", "v"},
		{"GET", "k"},
		{"GET", "missing"},
		{"INCR", "k"},
		{"NOSUCH", "a", "b"},
		{"GET"},
		{"SET", "k"},
		{"CONFIG", "GET", "maxclients"},
		{"LOCK.HOLD", "l", "k", "r1", "TTL", "999"},
		{"LOCK.RENEW", "00000000000000000000000000000000"},
	} {
		wantV, wantErr := client.Do(ctx, args...).Result()
		gotV, gotErr := db.Do(ctx, args...).Result()
		if !sameError(gotErr, wantErr) || !reflect.DeepEqual(gotV, wantV) {
			t.Errorf("%v: Do got (%v, %v), a client got (%v, %v)", args, gotV, gotErr, wantV, wantErr)
		}
	}
	if err := db.Do(ctx).Err(); err == nil {
		t.Errorf("Do with no arguments: no error")
	}
	// A grant, through Do: the lease id, a fence of this epoch, the ttl.
	g, err := db.Do(ctx, "LOCK.HOLD", "l", "k", "r2").Slice()
	if err != nil || len(g) != 3 {
		t.Fatalf("LOCK.HOLD: %v %v", g, err)
	}
	if fence := g[1].(int64); uint64(fence)>>32 != db.Epoch() {
		t.Errorf("fence %d is not of epoch %d", fence, db.Epoch())
	}
}

func sameError(a, b error) bool {
	if a == nil || b == nil {
		return a == b
	}
	var ra, rb redis.Error
	return a == b || (errors.As(a, &ra) && errors.As(b, &rb) && a.Error() == b.Error())
}

// A LOCK.HOLD through Do waits in line until its context ends, then leaves
// the line: the next holder over a socket is granted, not it.
func TestDoHoldHonoursContext(t *testing.T) {
	db := open(t)
	client := serve(t, db)
	first, err := db.Do(context.Background(), "LOCK.HOLD", "l", "k", "first").Slice()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = db.Do(ctx, "LOCK.HOLD", "l", "k", "waiter").Err()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a HOLD waiting past its context: %v", err)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Fatalf("it returned %v after its context ended", waited)
	}
	if err := db.Do(context.Background(), "LOCK.RELEASE", first[0]).Err(); err != nil {
		t.Fatal(err)
	}
	// The waiter's place lingers (SPEC §3) and is passed over.
	g, err := client.Do(context.Background(), "LOCK.HOLD", "l", "k", "next", "WAIT", "5000").Slice()
	if err != nil || len(g) != 3 || g[1].(int64) <= first[1].(int64) {
		t.Fatalf("the next holder over a socket: %v %v (first fence %v)", g, err, first[1])
	}
}

// Close ends Do and Serve with ErrClosed, never a panic.
func TestAfterClose(t *testing.T) {
	db, err := tenure.Open(t.TempDir(), tenure.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Do(context.Background(), "GET", "k").Err(); !errors.Is(err, tenure.ErrClosed) {
		t.Errorf("Do after Close: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Serve(ln); !errors.Is(err, tenure.ErrClosed) {
		t.Errorf("Serve after Close: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
	lk, err := locks.OpenLock(db, "summaries")
	if err != nil {
		t.Fatal(err)
	}
	ran := false
	err = lk.Hold(context.Background(), "k", func(context.Context, *locks.Lease) error { ran = true; return nil })
	if err == nil || ran {
		t.Errorf("Hold after Close: %v (fn ran: %v)", err, ran)
	}
}

// Serve takes any number of listeners, all on one store.
func TestServeManyListeners(t *testing.T) {
	db := open(t)
	a, b := serve(t, db), serve(t, db)
	ctx := context.Background()
	if err := a.Set(ctx, "k", "from a", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := b.Get(ctx, "k").Result(); err != nil || v != "from a" {
		t.Fatalf("GET on the second listener: %q %v", v, err)
	}
	if v, err := db.Do(ctx, "GET", "k").Text(); err != nil || v != "from a" {
		t.Fatalf("GET through Do: %q %v", v, err)
	}
}

// A *tenure.DB is the SDK's Store.
func TestDBIsAStore(t *testing.T) {
	db := open(t)
	lk, err := locks.OpenLock(db, "summaries")
	if err != nil {
		t.Fatal(err)
	}
	var fences []int64
	for range 2 {
		err := lk.Hold(context.Background(), "chat-1", func(ctx context.Context, l *locks.Lease) error {
			fences = append(fences, l.Fence)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if fences[1] <= fences[0] {
		t.Errorf("fences %v do not grow (LOCK-02)", fences)
	}
}

// Open on a directory another open holds (Pebble's lock), or on a path
// that cannot be a directory, answers a clear error and changes nothing.
func TestOpenRefuses(t *testing.T) {
	dir := t.TempDir()
	db, err := tenure.Open(dir, tenure.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	epoch := db.Epoch()
	if _, err := tenure.Open(dir, tenure.Options{Logger: quiet}); err == nil || !strings.Contains(err.Error(), "lock") {
		t.Errorf("a second Open of an open directory: %v", err)
	}
	if err := db.Do(context.Background(), "SET", "k", "v").Err(); err != nil {
		t.Errorf("the first open after a refused second: %v", err)
	}
	if db.Epoch() != epoch {
		t.Errorf("epoch moved from %d to %d", epoch, db.Epoch())
	}

	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := tenure.Open(filepath.Join(file, "data"), tenure.Options{Logger: quiet}); err == nil {
		t.Errorf("Open under a regular file: no error")
	}
	if b, _ := os.ReadFile(file); string(b) != "mine" {
		t.Errorf("the file was changed: %q", b)
	}
}
