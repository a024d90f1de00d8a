package resp_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure"
)

const execAbort = "EXECABORT Transaction discarded because of previous errors."

// transactionSteps are MULTI, EXEC, DISCARD, WATCH and UNWATCH as Redis
// 7.0.15 answers them (checked with TENURE_TEST_REDIS).
var transactionSteps = []step{
	{"EXEC", "ERR EXEC without MULTI"},
	{"DISCARD", "ERR DISCARD without MULTI"},
	// Queued; errors at exec time are elements of EXEC's array, and each
	// command sees what the ones before it wrote.
	{"MULTI", "OK"},
	{"MULTI", "ERR MULTI calls can not be nested"},
	{"WATCH k", "ERR WATCH inside MULTI is not allowed"},
	{"SET k 1", "QUEUED"},
	{"INCR k", "QUEUED"},
	{"SET s text", "QUEUED"},
	{"INCR s", "QUEUED"},
	{"GET k", "QUEUED"},
	{"EXEC", []any{"OK", 2, "OK", "ERR value is not an integer or out of range", "2"}},
	// Errors while queueing (but not nested MULTI or WATCH above) discard it.
	{"MULTI", "OK"},
	{"SET k 3", "QUEUED"},
	{"NOSUCH a", "ERR unknown command 'NOSUCH', with args beginning with: 'a' "},
	{"GET", "ERR wrong number of arguments for 'get' command"},
	{"EXEC", execAbort},
	{"GET k", "2"},
	{"MULTI", "OK"},
	{"SET k 3", "QUEUED"},
	{"SHUTDOWN", "ERR Command not allowed inside a transaction"},
	{"EXEC", execAbort},
	{"GET k", "2"},
	{"MULTI", "OK"},
	{"SET k 4", "QUEUED"},
	{"DISCARD", "OK"},
	{"GET k", "2"},
	{"EXEC", "ERR EXEC without MULTI"},
	{"MULTI", "OK"},
	{"EXEC", []any{}},
	// RESET is not queued: it ends the transaction.
	{"MULTI", "OK"},
	{"SET k 5", "QUEUED"},
	{"RESET", "RESET"},
	{"EXEC", "ERR EXEC without MULTI"},
	{"GET k", "2"},
	// FLUSHALL inside: later commands see the empty keyspace.
	{"MULTI", "OK"},
	{"SET a 1", "QUEUED"},
	{"FLUSHALL", "QUEUED"},
	{"GET a", "QUEUED"},
	{"SET b 2", "QUEUED"},
	{"DBSIZE", "QUEUED"},
	{"EXEC", []any{"OK", "OK", nil, "OK", 1}},
	{"GET k", nil},
	// Every family runs inside, each command seeing the ones before.
	{"MULTI", "OK"},
	{"SET src ohmytext", "QUEUED"},
	{"COPY src dst", "QUEUED"},
	{"APPEND dst 2", "QUEUED"},
	{"LCS src dst", "QUEUED"},
	{"SETBIT c 7 1", "QUEUED"},
	{"BITCOUNT c", "QUEUED"},
	{"EXPIREAT c 4102444800", "QUEUED"},
	{"EXPIRETIME c", "QUEUED"},
	{"TOUCH src dst c d", "QUEUED"},
	{"OBJECT ENCODING src", "QUEUED"},
	{"MGET src dst", "QUEUED"},
	{"DEL src dst c", "QUEUED"},
	{"RANDOMKEY", "QUEUED"},
	{"EXEC", []any{"OK", 1, 9, "ohmytext", 0, 1, 1, 4102444800, 3, "embstr", []any{"ohmytext", "ohmytext2"}, 3, "b"}},

	// WATCH: the connection's own write before MULTI aborts EXEC too.
	{"SET k 5", "OK"},
	{"WATCH k", "OK"},
	{"SET k 6", "OK"},
	{"MULTI", "OK"},
	{"SET k 7", "QUEUED"},
	{"EXEC", nil},
	{"GET k", "6"},
	// EXEC, run or not, unwatches.
	{"SET k 8", "OK"},
	{"MULTI", "OK"},
	{"GET k", "QUEUED"},
	{"EXEC", []any{"8"}},
	{"WATCH k", "OK"},
	{"SET k 9", "OK"},
	{"UNWATCH", "OK"},
	{"MULTI", "OK"},
	{"GET k", "QUEUED"},
	{"EXEC", []any{"9"}},
	// DISCARD unwatches.
	{"WATCH k", "OK"},
	{"SET k 10", "OK"},
	{"MULTI", "OK"},
	{"DISCARD", "OK"},
	{"MULTI", "OK"},
	{"GET k", "QUEUED"},
	{"EXEC", []any{"10"}},
	// UNWATCH inside MULTI is queued.
	{"WATCH k", "OK"},
	{"MULTI", "OK"},
	{"UNWATCH", "QUEUED"},
	{"EXEC", []any{"OK"}},
	// A write that changes nothing touches nothing.
	{"WATCH k nokey", "OK"},
	{"SET k x NX", nil},
	{"DEL nokey", 0},
	{"EXPIRE nokey 10", 0},
	{"MULTI", "OK"},
	{"GET k", "QUEUED"},
	{"EXEC", []any{"10"}},
	// EXPIRE that takes is a write.
	{"WATCH k", "OK"},
	{"EXPIRE k 100", 1},
	{"MULTI", "OK"},
	{"EXEC", nil},
	// FLUSHALL touches a watched key that exists, not one that does not.
	{"WATCH k", "OK"},
	{"FLUSHALL", "OK"},
	{"MULTI", "OK"},
	{"PING", "QUEUED"},
	{"EXEC", nil},
	{"WATCH nokey", "OK"},
	{"FLUSHDB", "OK"},
	{"MULTI", "OK"},
	{"PING", "QUEUED"},
	{"EXEC", []any{"PONG"}},
	{"WATCH", "ERR wrong number of arguments for 'watch' command"},
}

func TestCompatTransactions(t *testing.T) {
	compatTranscript(t, start(t), transactionSteps)
}

// TestWatchOtherClient: a write by another client to a watched key makes
// EXEC answer null and run nothing; a write to another key does not.
func TestWatchOtherClient(t *testing.T) {
	s := start(t)
	a, b := s.Client().Conn(), s.Client()
	defer a.Close()
	transcript(t, a, []step{{"SET k 1", "OK"}, {"WATCH k", "OK"}})
	transcript(t, b, []step{{"SET other 1", "OK"}})
	transcript(t, a, []step{{"MULTI", "OK"}, {"INCR k", "QUEUED"}, {"EXEC", []any{2}}, {"WATCH k", "OK"}})
	transcript(t, b, []step{{"SET k 10", "OK"}})
	transcript(t, a, []step{{"MULTI", "OK"}, {"INCR k", "QUEUED"}, {"EXEC", nil}, {"GET k", "10"}})
}

// TestWatchExpiry: a key live when watched that expires before EXEC
// aborts it, deleted or not yet; a key already expired when watched does
// not, as in Redis 7.
func TestWatchExpiry(t *testing.T) {
	s := start(t)
	c := s.Client().Conn()
	defer c.Close()
	transcript(t, c, []step{{"SET w 1 PX 50", "OK"}, {"WATCH w", "OK"}})
	time.Sleep(60 * time.Millisecond) // the expiry itself is what is tested
	transcript(t, c, []step{{"MULTI", "OK"}, {"PING", "QUEUED"}, {"EXEC", nil}})
	transcript(t, c, []step{{"SET w 1 PX 1", "OK"}})
	time.Sleep(5 * time.Millisecond)
	transcript(t, c, []step{{"WATCH w", "OK"}, {"GET w", nil}, {"MULTI", "OK"}, {"PING", "QUEUED"}, {"EXEC", []any{"PONG"}}})
}

// TestTransactionRolesAtQueueTime: a command the connection's role does
// not allow is refused when queued, and the transaction is discarded
// (SPEC §5, §6).
func TestTransactionRolesAtQueueTime(t *testing.T) {
	s := startWithUsers(t, tenure.Options{})
	c := s.Client().Conn()
	defer c.Close()
	transcript(t, c, []step{
		{"AUTH reader reader-pass", "OK"},
		{"MULTI", "OK"},
		{"GET k", "QUEUED"},
		{"SET k v", "NOPERM this user has no permissions to run the 'set' command"},
		{"EXEC", execAbort},
		{"MULTI", "OK"},
		{"GET k", "QUEUED"},
		{"EXEC", []any{nil}},
	})
}

// TestLocksInMulti: LOCK.* run at EXEC in order; LOCK.HOLD there never
// blocks, whatever its WAIT; a renewal and a fenced write go at one
// instant.
func TestLocksInMulti(t *testing.T) {
	s := start(t)
	holder, other := s.Client(), s.Client().Conn()
	defer other.Close()
	lease := lkHold(t, holder, "jobs", "k", "req-1", "TTL", "10000")
	fence := strconv.FormatInt(lease.Fence, 10)
	transcript(t, other, []step{
		{"MULTI", "OK"},
		{"LOCK.RENEW " + lease.ID + " TTL 20000", "QUEUED"},
		{"SET k v FENCE " + fence, "QUEUED"},
		{"SET k old FENCE " + strconv.FormatInt(lease.Fence-1, 10), "QUEUED"},
		{"GET k", "QUEUED"},
		{"EXEC", []any{intBetween(19000, 20000), "OK", "FENCED a newer fence has written this key", "v"}},
	})
	start := time.Now()
	transcript(t, other, []step{
		{"MULTI", "OK"},
		{"LOCK.HOLD jobs k req-2 WAIT 60000", "QUEUED"},
		{"LOCK.HOLD jobs free req-3", "QUEUED"},
		{"EXEC", []any{nil, arrayOf(3, func(any) string { return "" })}},
	})
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("LOCK.HOLD WAIT 60000 inside EXEC blocked for %v", d)
	}
}

// TestTransactionsUnderConcurrency: 50 clients increment 5 counters with
// WATCH, GET, MULTI, SET, EXEC for a while; each counter ends equal to the
// number of EXECs that ran on it, so no two transactions interleaved and
// none ran on a stale read.
func TestTransactionsUnderConcurrency(t *testing.T) {
	s := start(t)
	const clients, keys = 50, 5
	run := 5 * time.Second
	if testing.Short() {
		run = time.Second
	}
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: 2, PoolSize: clients})
	defer rdb.Close()
	ctx := context.Background()
	var committed [keys]atomic.Int64
	var aborted atomic.Int64
	deadline := time.Now().Add(run)
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; time.Now().Before(deadline); n++ {
				k := (i + n) % keys
				key := "counter:" + strconv.Itoa(k)
				err := rdb.Watch(ctx, func(tx *redis.Tx) error {
					v, err := tx.Get(ctx, key).Int64()
					if err != nil && !errors.Is(err, redis.Nil) {
						return err
					}
					_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
						p.Set(ctx, key, v+1, 0)
						return nil
					})
					return err
				}, key)
				switch {
				case err == nil:
					committed[k].Add(1)
				case errors.Is(err, redis.TxFailedErr):
					aborted.Add(1)
				default:
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	total := int64(0)
	for k := range keys {
		got, err := rdb.Get(ctx, "counter:"+strconv.Itoa(k)).Int64()
		if err != nil {
			t.Fatal(err)
		}
		if want := committed[k].Load(); got != want {
			t.Errorf("counter:%d = %d, but %d EXECs on it succeeded", k, got, want)
		}
		total += got
	}
	if total == 0 || aborted.Load() == 0 {
		t.Fatalf("%d EXECs succeeded and %d aborted: the test did not contend", total, aborted.Load())
	}
	t.Logf("%d EXECs succeeded, %d aborted by WATCH", total, aborted.Load())
}
