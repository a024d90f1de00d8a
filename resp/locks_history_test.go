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

	"github.com/tenure-db/tenure/resp"
	"github.com/tenure-db/tenure/resp/resptest"
)

// The lease lock as porcupine checks it: one (lock, key) is one partition,
// and its state is who holds it (a lease id, or nobody), with what fence,
// and the largest fence it ever granted.
type histState struct {
	holder    string
	fence     int64
	lastFence int64
}

type histKind uint8

const (
	histHold histKind = iota
	histRenew
	histRelease
	histInfo
)

type histInput struct {
	kind histKind
	key  string
	id   string // RENEW and RELEASE
	wait int64  // HOLD's WAIT, ms
}

type histOutput struct {
	granted bool   // HOLD: a grant; RENEW, RELEASE: :1 or ms left
	id      string // HOLD's lease id
	fence   int64  // HOLD's fence; INFO's fence (0: free)
	lost    string // RENEW, RELEASE: the -LOST reason
}

// histModel is the sequential specification of one key's lease lock with
// leases that do not run out in the test (TTL 60 s): LOCK-01 (a grant only
// of a free key, so never two holders), LOCK-02 (each grant's fence above
// every earlier one), LOCK-04/05 (only the holder's id renews; a released
// lease stays released), and LOCK.INFO showing the holder's fence.
var histModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Input.(histInput).key
			if byKey[k] == nil {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		sort.Strings(keys)
		var out [][]porcupine.Operation
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() any { return histState{} },
	Step: func(state, input, output any) (bool, any) {
		st, in, out := state.(histState), input.(histInput), output.(histOutput)
		switch in.kind {
		case histHold:
			if out.granted {
				// Only a free key is granted, with a fence above all before.
				if st.holder != "" || out.fence <= st.lastFence {
					return false, st
				}
				return true, histState{holder: out.id, fence: out.fence, lastFence: out.fence}
			}
			// Not granted within WAIT: the key was held (a free key has no
			// open waiter, so a request in line is granted the moment it is
			// freed).
			return st.holder != "", st
		case histRenew:
			if out.granted {
				return st.holder == in.id, st
			}
			// Nothing runs out or is revoked here: a lease that is not the
			// holder's was released.
			return st.holder != in.id && out.lost == "released", st
		case histRelease:
			// :1 for the live lease and again for one already released.
			if !out.granted {
				return false, st
			}
			if st.holder == in.id {
				return true, histState{lastFence: st.lastFence}
			}
			return true, st
		case histInfo:
			if out.fence == 0 {
				return st.holder == "", st
			}
			return st.holder != "" && st.fence == out.fence, st
		}
		return false, st
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(histInput), output.(histOutput)
		switch in.kind {
		case histHold:
			if out.granted {
				return fmt.Sprintf("hold(wait %d) -> %s…/%d", in.wait, out.id[:6], out.fence)
			}
			return fmt.Sprintf("hold(wait %d) -> null", in.wait)
		case histRenew, histRelease:
			name := map[histKind]string{histRenew: "renew", histRelease: "release"}[in.kind]
			if out.granted {
				return fmt.Sprintf("%s(%s…) -> ok", name, in.id[:6])
			}
			return fmt.Sprintf("%s(%s…) -> LOST %s", name, in.id[:6], out.lost)
		}
		return fmt.Sprintf("info -> fence %d", out.fence)
	},
	DescribeState: func(state any) string {
		st := state.(histState)
		if st.holder == "" {
			return fmt.Sprintf("free (last fence %d)", st.lastFence)
		}
		return fmt.Sprintf("%s…/%d", st.holder[:6], st.fence)
	},
}

// LOCK-01, LOCK-02, LOCK-04, LOCK-05, LOCK-08 under concurrency: 20 go-redis
// clients × 500 operations (HOLD with WAIT 0 or a short WAIT, RENEW and
// RELEASE of their own and each other's leases, LOCK.INFO) on three keys of
// one real server, checked for linearizability with porcupine against
// histModel. Leases have a 60 s TTL, so none runs out during the test and
// expiry stays out of the model. Besides, across keys, every grant's fence
// is above the fence of every grant that returned before it was asked for.
func TestLockHistoryLinearizable(t *testing.T) {
	const (
		clients = 20
		opsEach = 500
	)
	keys := []string{"k0", "k1", "k2"}
	s := resptest.Start(t, resp.Config{})
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
				in := histInput{key: key}
				var args []any
				switch p := rng.IntN(100); {
				case p < 35:
					in.kind = histHold
					if rng.IntN(2) == 1 {
						in.wait = 1 + rng.Int64N(15)
					}
					args = []any{"LOCK.HOLD", "L", key, fmt.Sprintf("c%d-%d", c, i), "TTL", 60000, "WAIT", in.wait}
				case p < 50:
					in.kind, in.id = histRenew, pick(rng, key)
					args = []any{"LOCK.RENEW", in.id}
				case p < 82:
					in.kind, in.id = histRelease, mine[key]
					if in.id == "" || rng.IntN(3) == 0 {
						in.id = pick(rng, key)
					}
					args = []any{"LOCK.RELEASE", in.id}
				default:
					in.kind = histInfo
					args = []any{"LOCK.INFO", "L", key}
				}
				if (in.kind == histRenew || in.kind == histRelease) && in.id == "" {
					in.kind = histInfo
					args = []any{"LOCK.INFO", "L", key}
				}
				call := time.Since(base).Nanoseconds()
				v, err := rdb.Do(ctx, args...).Result()
				ret := time.Since(base).Nanoseconds()
				out, err := histReply(in, v, err)
				if err != nil {
					errs <- fmt.Errorf("client %d op %d %v: %w", c, i, args, err)
					return
				}
				if in.kind == histHold && out.granted {
					mine[key] = out.id
					granted(key, out.id)
				}
				history[c] = append(history[c], porcupine.Operation{ClientId: c, Input: in, Output: out, Call: call, Return: ret})
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
	res, info := porcupine.CheckOperationsVerbose(histModel, ops, 60*time.Second)
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
		if err := porcupine.VisualizePath(histModel, info, file); err != nil {
			t.Logf("visualize: %v", err)
		}
		t.Fatalf("the history is not linearizable; see %s (set TENURE_HISTORY_DIR to keep it)", file)
	}
}

// histReply turns a go-redis reply into the model's output; an error is a
// reply the model has no place for.
func histReply(in histInput, v any, err error) (histOutput, error) {
	var rerr redis.Error
	switch {
	case errors.Is(err, redis.Nil):
		if in.kind == histHold || in.kind == histInfo {
			return histOutput{}, nil
		}
	case errors.As(err, &rerr):
		if reason, ok := strings.CutPrefix(err.Error(), "LOST "); ok && (in.kind == histRenew || in.kind == histRelease) {
			return histOutput{lost: reason}, nil
		}
		return histOutput{}, err
	case err != nil:
		return histOutput{}, err
	}
	switch in.kind {
	case histHold:
		a, ok := v.([]any)
		if ok && len(a) == 3 {
			id, ok1 := a[0].(string)
			fence, ok2 := a[1].(int64)
			if ok1 && ok2 {
				return histOutput{granted: true, id: id, fence: fence}, nil
			}
		}
	case histRenew, histRelease:
		if n, ok := v.(int64); ok && n > 0 {
			return histOutput{granted: true}, nil
		}
	case histInfo:
		if a, ok := v.([]any); ok && len(a) == 10 && a[0] == "fence" {
			if f, ok := a[1].(int64); ok {
				return histOutput{fence: f}, nil // 0 for a free key with lingering places
			}
		}
	}
	return histOutput{}, fmt.Errorf("unexpected reply %v", v)
}

func histGrants(ops []porcupine.Operation) int {
	n := 0
	for _, op := range ops {
		if op.Input.(histInput).kind == histHold && op.Output.(histOutput).granted {
			n++
		}
	}
	return n
}

// checkFencesAcrossKeys checks LOCK-02 across partitions: fences are
// unique, and a grant asked for after another returned has a larger fence.
func checkFencesAcrossKeys(t *testing.T, ops []porcupine.Operation) {
	t.Helper()
	var grants []porcupine.Operation
	seen := map[int64]bool{}
	for _, op := range ops {
		if op.Input.(histInput).kind == histHold && op.Output.(histOutput).granted {
			f := op.Output.(histOutput).fence
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
			maxDone = max(maxDone, byReturn[j].Output.(histOutput).fence)
			j++
		}
		if f := g.Output.(histOutput).fence; f <= maxDone {
			t.Fatalf("fence %d granted after fence %d had been (LOCK-02)", f, maxDone)
		}
	}
}

// The model itself refuses what the store must never do, so that a pass of
// TestLockHistoryLinearizable means something.
func TestLockHistoryModelRejects(t *testing.T) {
	op := func(call, ret int64, in histInput, out histOutput) porcupine.Operation {
		in.key = "k"
		return porcupine.Operation{Input: in, Output: out, Call: call, Return: ret}
	}
	hold := histInput{kind: histHold}
	a := histOutput{granted: true, id: "aaaaaaaa", fence: 10}
	b := histOutput{granted: true, id: "bbbbbbbb", fence: 11}
	for _, tc := range []struct {
		name string
		ops  []porcupine.Operation
		ok   bool
	}{
		{"grant, release, grant", []porcupine.Operation{
			op(0, 1, hold, a), op(2, 3, histInput{kind: histRelease, id: a.id}, histOutput{granted: true}), op(4, 5, hold, b),
		}, true},
		{"concurrent release and grant", []porcupine.Operation{
			op(0, 1, hold, a), op(2, 5, histInput{kind: histRelease, id: a.id}, histOutput{granted: true}), op(3, 4, hold, b),
		}, true},
		{"double grant", []porcupine.Operation{op(0, 1, hold, a), op(2, 3, hold, b)}, false},
		{"fence goes back", []porcupine.Operation{
			op(0, 1, hold, b), op(2, 3, histInput{kind: histRelease, id: b.id}, histOutput{granted: true}), op(4, 5, hold, a),
		}, false},
		{"null on a free key", []porcupine.Operation{op(0, 1, hold, histOutput{})}, false},
		{"renew by another id", []porcupine.Operation{
			op(0, 1, hold, a), op(2, 3, histInput{kind: histRenew, id: b.id}, histOutput{granted: true}),
		}, false},
		{"renew after release", []porcupine.Operation{
			op(0, 1, hold, a), op(2, 3, histInput{kind: histRelease, id: a.id}, histOutput{granted: true}),
			op(4, 5, histInput{kind: histRenew, id: a.id}, histOutput{granted: true}),
		}, false},
		{"info shows another fence", []porcupine.Operation{op(0, 1, hold, a), op(2, 3, histInput{kind: histInfo}, histOutput{fence: 9})}, false},
		{"info shows a held key free", []porcupine.Operation{op(0, 1, hold, a), op(2, 3, histInput{kind: histInfo}, histOutput{})}, false},
	} {
		if got := porcupine.CheckOperations(histModel, tc.ops); got != tc.ok {
			t.Errorf("%s: linearizable = %v, want %v", tc.name, got, tc.ok)
		}
	}
}
