package resp_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure"
	"github.com/tenure-db/tenure/internal/linmodel"
	"github.com/tenure-db/tenure/resp/resptest"
)

// LOCK-01, LOCK-02, LOCK-04, LOCK-05, LOCK-08 under concurrency: 20 go-redis
// clients × 500 operations (HOLD with WAIT 0 or a short WAIT, RENEW and
// RELEASE of their own and each other's leases, LOCK.INFO) on three keys of
// one real server, checked for linearizability with porcupine against
// linmodel.Leases, partitioned by key. Leases have a 60 s TTL, so none runs
// out during the test. Besides, across keys, every grant's fence is above
// the fence of every grant that returned before it was asked for. The
// model's own tests (internal/linmodel) show it refuses what the store must
// never do.
func TestLockHistoryLinearizable(t *testing.T) {
	const (
		clients = 20
		opsEach = 500
	)
	keys := []string{"k0", "k1", "k2"}
	s := resptest.Start(t, tenure.Options{})
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, PoolSize: clients, MinIdleConns: clients})
	t.Cleanup(func() { rdb.Close() })

	// Lease ids recently granted on each key, shared by all clients, so
	// that they renew and release each other's leases (LOCK-11).
	var mu sync.Mutex
	recent := map[string][]string{}
	pick := func(rng *rand.Rand, key string) string {
		mu.Lock()
		defer mu.Unlock()
		ids := recent[key]
		if len(ids) == 0 {
			return ""
		}
		return ids[rng.IntN(len(ids))]
	}
	granted := func(key, id string) {
		mu.Lock()
		defer mu.Unlock()
		ids := append(recent[key], id)
		if len(ids) > 4 {
			ids = ids[1:]
		}
		recent[key] = ids
	}

	base := time.Now()
	history := make([][]porcupine.Operation, clients)
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), 7))
			ctx := context.Background()
			mine := map[string]string{} // key -> the lease this client last got
			for i := range opsEach {
				key := keys[rng.IntN(len(keys))]
				in := linmodel.LeaseInput{Key: key}
				var args []any
				switch p := rng.IntN(100); {
				case p < 35:
					in.Cmd, in.ReqID, in.TTL = linmodel.Hold, fmt.Sprintf("c%d-%d", c, i), 60000
					if rng.IntN(2) == 1 {
						in.Wait = 1 + rng.Int64N(15)
					}
					args = []any{"LOCK.HOLD", "L", key, in.ReqID, "TTL", in.TTL, "WAIT", in.Wait}
				case p < 50:
					in.Cmd, in.ID = linmodel.Renew, pick(rng, key)
					args = []any{"LOCK.RENEW", in.ID}
				case p < 82:
					in.Cmd, in.ID = linmodel.Release, mine[key]
					if in.ID == "" || rng.IntN(3) == 0 {
						in.ID = pick(rng, key)
					}
					args = []any{"LOCK.RELEASE", in.ID}
				default:
					in.Cmd = linmodel.Info
					args = []any{"LOCK.INFO", "L", key}
				}
				if (in.Cmd == linmodel.Renew || in.Cmd == linmodel.Release) && in.ID == "" {
					in.Cmd = linmodel.Info
					args = []any{"LOCK.INFO", "L", key}
				}
				in.Call = time.Since(base).Nanoseconds()
				v, err := rdb.Do(ctx, args...).Result()
				in.Return = time.Since(base).Nanoseconds()
				out, err := histReply(in.Cmd, v, err)
				if err != nil {
					errs <- fmt.Errorf("client %d op %d %v: %w", c, i, args, err)
					return
				}
				if in.Cmd == linmodel.Hold && out.Outcome == linmodel.OK {
					mine[key] = out.ID
					granted(key, out.ID)
				}
				history[c] = append(history[c], linmodel.LeaseOp(c, in, out))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	ran := time.Since(base)

	var ops []porcupine.Operation
	for _, h := range history {
		ops = append(ops, h...)
	}
	checkFencesAcrossKeys(t, ops)
	start := time.Now()
	res, info := porcupine.CheckOperationsVerbose(linmodel.Leases, ops, 60*time.Second)
	t.Logf("%d operations in %v, %d grants, checked in %v: %v",
		len(ops), ran.Round(time.Millisecond), histGrants(ops), time.Since(start).Round(time.Millisecond), res)
	switch res {
	case porcupine.Ok:
	case porcupine.Unknown:
		t.Fatalf("porcupine could not decide within its timeout: the history is too large to check")
	default:
		file := filepath.Join(t.TempDir(), "history.html")
		if dir := os.Getenv("TENURE_HISTORY_DIR"); dir != "" {
			file = filepath.Join(dir, "history.html")
		}
		if err := porcupine.VisualizePath(linmodel.Leases, info, file); err != nil {
			t.Logf("visualize: %v", err)
		}
		t.Fatalf("the history is not linearizable; see %s (set TENURE_HISTORY_DIR to keep it)", file)
	}
}

// histReply turns a go-redis reply into the model's output; an error is a
// reply the model has no place for.
func histReply(cmd linmodel.LeaseCmd, v any, err error) (linmodel.LeaseOutput, error) {
	var rerr redis.Error
	switch {
	case errors.Is(err, redis.Nil):
		if cmd == linmodel.Hold || cmd == linmodel.Info {
			return linmodel.LeaseOutput{Outcome: linmodel.Null}, nil
		}
	case errors.As(err, &rerr):
		if reason, ok := strings.CutPrefix(err.Error(), "LOST "); ok && (cmd == linmodel.Renew || cmd == linmodel.Release) {
			return linmodel.LeaseOutput{Outcome: linmodel.Lost, Reason: reason}, nil
		}
		return linmodel.LeaseOutput{}, err
	case err != nil:
		return linmodel.LeaseOutput{}, err
	}
	switch cmd {
	case linmodel.Hold:
		a, ok := v.([]any)
		if ok && len(a) == 3 {
			id, ok1 := a[0].(string)
			fence, ok2 := a[1].(int64)
			left, ok3 := a[2].(int64)
			if ok1 && ok2 && ok3 {
				return linmodel.LeaseOutput{Outcome: linmodel.OK, ID: id, Fence: fence, Left: left}, nil
			}
		}
	case linmodel.Renew, linmodel.Release:
		if n, ok := v.(int64); ok && n > 0 {
			return linmodel.LeaseOutput{Outcome: linmodel.OK, Left: n}, nil
		}
	case linmodel.Info:
		if m, err := lockInfoFields(v); err == nil {
			return linmodel.LeaseOutput{Outcome: linmodel.OK, Fence: m["fence"]}, nil // 0 for a free key with lingering places
		}
	}
	return linmodel.LeaseOutput{}, fmt.Errorf("unexpected reply %v", v)
}

func histGrants(ops []porcupine.Operation) int {
	n := 0
	for _, op := range ops {
		if isGrant(op) {
			n++
		}
	}
	return n
}

func isGrant(op porcupine.Operation) bool {
	return op.Input.(linmodel.LeaseInput).Cmd == linmodel.Hold && op.Output.(linmodel.LeaseOutput).Outcome == linmodel.OK
}

// checkFencesAcrossKeys checks LOCK-02 across partitions: fences are
// unique, and a grant asked for after another returned has a larger fence.
func checkFencesAcrossKeys(t *testing.T, ops []porcupine.Operation) {
	t.Helper()
	var grants []porcupine.Operation
	seen := map[int64]bool{}
	for _, op := range ops {
		if isGrant(op) {
			f := op.Output.(linmodel.LeaseOutput).Fence
			if seen[f] {
				t.Fatalf("fence %d granted twice", f)
			}
			seen[f] = true
			grants = append(grants, op)
		}
	}
	byReturn := append([]porcupine.Operation(nil), grants...)
	sort.Slice(byReturn, func(i, j int) bool { return byReturn[i].Return < byReturn[j].Return })
	sort.Slice(grants, func(i, j int) bool { return grants[i].Call < grants[j].Call })
	var maxDone int64
	j := 0
	for _, g := range grants {
		for j < len(byReturn) && byReturn[j].Return < g.Call {
			maxDone = max(maxDone, byReturn[j].Output.(linmodel.LeaseOutput).Fence)
			j++
		}
		if f := g.Output.(linmodel.LeaseOutput).Fence; f <= maxDone {
			t.Fatalf("fence %d granted after fence %d had been (LOCK-02)", f, maxDone)
		}
	}
}
