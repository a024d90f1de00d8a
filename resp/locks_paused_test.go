package resp_test

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure/kv"
	"github.com/tenure-db/tenure/lockmod"
	"github.com/tenure-db/tenure/resp"
)

// LOCK-14, SPEC §10: a cluster node pauses its lock module the moment it
// stops leading, before its routing learns it does not lead. A LOCK.*
// command that meets the paused module in that window is told to try
// again, as a follower's or a new leader's would be, not that the server
// is shutting down; once the module resumes in a new epoch, it grants.
func TestLockCommandsMeetingAPausedLockModuleAreToldToTryAgain_LOCK14(t *testing.T) {
	store, err := kv.Open(t.TempDir(), kv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	locks := lockmod.New(lockmod.Config{Epoch: 1})
	log := slog.New(slog.DiscardHandler)
	srv := resp.New(resp.Config{Logger: log}, resp.Backends{Store: store, Locks: locks, Metrics: resp.NewMetrics(log)})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Shutdown(context.Background())
	rdb := redis.NewClient(&redis.Options{Addr: ln.Addr().String()})
	defer rdb.Close()
	ctx := context.Background()

	held, err := rdb.Do(ctx, "LOCK.HOLD", "l", "k", "r1", "TTL", 60000).Slice()
	if err != nil {
		t.Fatal(err)
	}
	leaseID := held[0].(string)
	locks.Pause()
	for _, cmd := range [][]any{
		{"LOCK.HOLD", "l", "k", "r2", "WAIT", 0},
		{"LOCK.RENEW", leaseID},
		{"LOCK.RELEASE", leaseID},
	} {
		if err := rdb.Do(ctx, cmd...).Err(); err == nil || !strings.HasPrefix(err.Error(), "TRYAGAIN ") {
			t.Errorf("%v on a paused lock module: %v, want -TRYAGAIN", cmd[0], err)
		}
	}
	locks.Resume(2)
	if err := rdb.Do(ctx, "LOCK.RENEW", leaseID).Err(); err == nil || err.Error() != "LOST unknown lease" {
		t.Errorf("the old epoch's lease renewed after Resume: %v", err)
	}
	g, err := rdb.Do(ctx, "LOCK.HOLD", "l", "k", "r2", "WAIT", 0).Slice()
	if err != nil || g[1].(int64) != 2<<32+1 {
		t.Fatalf("HOLD after Resume: %v %v, want the new epoch's first fence", g, err)
	}
}
