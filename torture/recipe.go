package main

// The Redis lock recipe, as redsync, bsm/redislock and redis-py's
// Redis.lock() run it, against tenure under the same faults as LOCK.*
// (issue 31): SET key token NX PX ttl to acquire; the compare-and-pexpire
// script to extend and the compare-and-delete script to release, by
// EVALSHA (EVAL after NOSCRIPT: a restarted server has forgotten its
// scripts).
//
// What the recipe can guarantee, and so what the checker holds it to
// (check.go): a holder that got OK from its SET believes it holds from
// that reply until the moment it sent its release, or until its validity
// runs out, whichever comes first. Its validity, as Redlock and redsync
// compute it, is the time it sent the SET (or the last extension answered
// 1) plus ttl minus a drift of ttl/100 + 2 ms: the store's key lives for
// ttl from the moment it processed the command, no earlier than it was
// sent, on a clock that runs at the same rate as the client's (one
// machine here), and the drift covers the store rounding its deadline to
// a millisecond. No two such beliefs on one key overlap, across SIGKILLs
// too: the server runs with --fsync always, so the SET it acknowledged
// survives a kill, and its expiry is a wall-clock deadline that passes
// while the server is down (a cluster acknowledges a write once a
// majority has it). What the recipe cannot give, and is not checked: a
// fence (a frozen holder's late write to a resource is not refused, which
// is why the recipe's keys guard no counter here), or anything at all
// with an fsync that can lose an acknowledged SET.

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The recipe's scripts, as redsync ships them.
const (
	recipeRelease = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`
	recipeExtend  = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end`
)

// recipeKey is the store's key of a recipe lock.
func recipeKey(key string) string { return "recipe:" + key }

// recipeDrift is what the recipe takes off a holder's validity.
func recipeDrift(ttl time.Duration) int64 { return int64(ttl/100 + 2*time.Millisecond) }

// script runs src by EVALSHA, and by EVAL if the store does not know it.
func (w *worker) script(ctx context.Context, src string, key string, args ...any) (int64, error) {
	sum := sha1.Sum([]byte(src))
	sha := hex.EncodeToString(sum[:])
	n, err := w.locker.Do(ctx, append([]any{"EVALSHA", sha, 1, key}, args...)...).Int64()
	if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
		n, err = w.locker.Do(ctx, append([]any{"EVAL", src, 1, key}, args...)...).Int64()
	}
	return n, err
}

// recipeHold takes key by the recipe, retrying with redsync's delay (50 to
// 250 ms) for up to 8 ttls, then works under it a few times, extending it
// when a pause would take it past a third of its ttl left, and releases
// it. Its events are those of a lease's, with mode recipe and no fence:
// hold at the SET's reply, with the deadline of its validity; end at the
// release's send (or the holder's giving up), with the last deadline.
func (w *worker) recipeHold(ctx context.Context, n int64, key string) {
	rk := recipeKey(key)
	px := strconv.FormatInt(w.ttl.Milliseconds(), 10)
	drift := recipeDrift(w.ttl)
	start := mono()
	giveUp := start + int64(8*w.ttl)
	res := "not held"
	defer func() {
		w.emit(Event{Kind: evHeld, Client: w.id, Hold: n, Key: key, Mode: modeRecipe, Start: start, End: mono(), Result: res})
	}()
	var deadline int64
	token := fmt.Sprintf("%s#%d:%x", w.id, n, w.rng.Uint64())
	for {
		sent := mono()
		err := w.locker.Do(ctx, "SET", rk, token, "NX", "PX", px).Err()
		if err == nil {
			deadline = sent + int64(w.ttl) - drift
			break
		}
		if ctx.Err() != nil || mono() > giveUp {
			return
		}
		// A nil reply (held) or an error: either way, not held; a SET
		// whose reply was lost may have taken the key, which then runs
		// out at its PX with no one believing it holds.
		if !sleep(ctx, time.Duration(50+w.rng.IntN(200))*time.Millisecond) {
			return
		}
	}
	w.emit(Event{Kind: evHold, Client: w.id, Hold: n, Key: key, Mode: modeRecipe, Start: mono(), Deadline: deadline})
	res = "ok"
	end := func() {
		w.emit(Event{Kind: evEnd, Client: w.id, Hold: n, Key: key, Mode: modeRecipe, End: mono(), Deadline: deadline})
	}
	for range 1 + w.rng.IntN(4) {
		pause := time.Duration(w.rng.Int64N(int64(w.ttl / 2)))
		if left := time.Duration(deadline - mono()); left < pause+w.ttl/3 {
			sent := mono()
			ok, err := w.script(ctx, recipeExtend, rk, token, px)
			if err != nil || ok != 1 {
				// Lost, or not known to be extended: the holder stops.
				res = fmt.Sprintf("lost: extend returned %d, %v", ok, err)
				end()
				return
			}
			deadline = sent + int64(w.ttl) - drift
		}
		if mono() >= deadline {
			res = "lost: validity ran out"
			end()
			return
		}
		if !sleep(ctx, pause) {
			break
		}
	}
	end()
	// The release is sent after the holder has stopped believing: its
	// outcome changes nothing of what it believed.
	if ok, err := w.script(context.WithoutCancel(ctx), recipeRelease, rk, token); err != nil || ok != 1 {
		res = fmt.Sprintf("lost: release returned %d, %v", ok, err)
	}
}
