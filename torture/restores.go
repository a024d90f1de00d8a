package main

// RESTORE under the nemesis: clients RESTORE … REPLACE whole string
// values, as Redis's DUMP serializes them (internal/dump), over a few keys
// and GET them, through the proxies. Each key is a register of
// linmodel.FencedRegister beside the counters (counterHistory): a
// RESTORE … REPLACE is a plain SET of its value (it keeps the fence), so
// check (d) holds of it across kills, restarts and failovers.

import (
	"context"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/tenure-db/tenure/internal/dump"
)

// restoredKey is the key of restore register i: a counter's key, so that
// the proxies track it (tracked), never one a lock client counts on.
func restoredKey(i int) string { return counterKey(fmt.Sprintf("restored:%d", i)) }

// runRestoreClients runs n RESTORE clients until ctx ends (runDataClients).
func runRestoreClients(ctx context.Context, wg *sync.WaitGroup, addrs []string, n int, seed uint64) []func() {
	return runDataClients(ctx, wg, addrs, n, seed, 2*time.Millisecond, func(c *redis.Client, rng *rand.Rand, i, n int) error {
		key := restoredKey(rng.IntN(3))
		if rng.IntN(2) == 0 {
			payload := dump.Encode(dump.Value{Kind: dump.String, Str: fmt.Appendf(nil, "r%d.%d", i, n)})
			return c.Do(ctx, "RESTORE", key, "0", payload, "REPLACE").Err()
		}
		return c.Get(ctx, key).Err()
	})
}

// historyArgs is what the history keeps of a request's arguments: a
// RESTORE's payload as hex, since a history file is JSON, whose strings
// would not keep its bytes.
func historyArgs(args []string) []string {
	if len(args) >= 4 && strings.EqualFold(args[0], "restore") {
		args = slices.Clone(args)
		args[3] = "hex:" + hex.EncodeToString([]byte(args[3]))
	}
	return args
}

// parseRestore reads a RESTORE key 0 payload REPLACE of a string on the
// wire as the plain SET of its value it is.
func parseRestore(e Event) (in registerSet, ok bool) {
	if e.Kind != evWire || len(e.Args) != 5 || !strings.EqualFold(e.Args[0], "restore") ||
		e.Args[2] != "0" || !strings.EqualFold(e.Args[4], "replace") || !strings.HasPrefix(e.Args[3], "hex:") {
		return in, false
	}
	payload, err := hex.DecodeString(strings.TrimPrefix(e.Args[3], "hex:"))
	if err != nil {
		return in, false
	}
	v, err := dump.Decode(payload)
	if err != nil || v.Kind != dump.String {
		return in, false
	}
	return registerSet{key: e.Args[1], value: string(v.Str)}, true
}

// registerSet is a write of a register's value, with no fence.
type registerSet struct{ key, value string }
