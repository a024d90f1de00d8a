package main

// A queue under the nemesis (SPEC §13, issue 35): producers LPUSH unique
// items onto two lists, consumers take them off with BRPOP (of both),
// RPOP, and now and then LMOVE one from a list to the other's head (a
// move, not a delivery), all through the proxies, whose wire events are
// the history; after the run the lists are read (LRANGE). The check:
//
//   - no item is delivered twice: every item appears at most once among
//     the pops' replies the server sent (whether or not the client got
//     them) and the lists' final contents together;
//   - an acknowledged push is never lost: its item was delivered or is in
//     a list at the end, but for as many items as there were pops whose
//     outcome is unknown (no reply, or an error that may follow a pop
//     done: the server may have popped and sent it into a cut connection,
//     "possibly delivered"), each such pop still running after the item's
//     push was sent (a BRPOP blocked before the push takes it);
//   - nothing is delivered that no LPUSH sent.
//
// An LPUSH whose reply never came may or may not have pushed: its item may
// be anywhere, or nowhere, but never twice.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

const queuePrefix = "queue:"

// evQueueFinal is a list read after the run: Key, and Value its items,
// head first, space-separated.
const evQueueFinal = "queue-final"

// queueKeys are the lists of the queue.
var queueKeys = []string{queuePrefix + "0", queuePrefix + "1"}

// queueTracked says whether a request is one of the queue's: it then goes
// into the raw command history.
func queueTracked(args []string) bool {
	if len(args) < 2 || !strings.HasPrefix(args[1], queuePrefix) {
		return false
	}
	switch strings.ToLower(args[0]) {
	case "lpush", "rpop", "brpop", "lmove":
		return true
	}
	return false
}

// runQueueClients runs producers and consumers until ctx ends, each
// through addrs (the proxies), moving to the next address when one fails.
func runQueueClients(ctx context.Context, wg *sync.WaitGroup, addrs []string, producers, consumers int, seed uint64) []func() {
	var closers []func()
	for i := range producers + consumers {
		clients, closeClients := proxyClients(addrs)
		closers = append(closers, closeClients)
		producer := i < producers
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			at := 0
			for n := 0; ctx.Err() == nil; n++ {
				c := clients[at%len(clients)]
				key := queueKeys[rng.IntN(len(queueKeys))]
				var err error
				pause := time.Millisecond
				switch op := rng.IntN(10); {
				case producer:
					pause = 4 * time.Millisecond // consumers keep up: the lists stay short
					err = c.LPush(ctx, key, fmt.Sprintf("q%d.%d", i, n)).Err()
				case op < 6:
					err = c.BRPop(ctx, time.Second, queueKeys...).Err()
				case op < 9:
					err = c.RPop(ctx, key).Err()
				default:
					err = c.LMove(ctx, key, queueKeys[0], "RIGHT", "LEFT").Err()
					if key == queueKeys[0] {
						err = c.LMove(ctx, key, queueKeys[1], "RIGHT", "LEFT").Err()
					}
				}
				if err != nil && !errors.Is(err, redis.Nil) {
					at++
					pause = 20 * time.Millisecond
				}
				if !sleep(ctx, pause) {
					return
				}
			}
		}()
	}
	return closers
}

// readQueues reads the lists on s after the run, as evQueueFinal events.
func readQueues(s *server, add func(Event)) error {
	rdb := redis.NewClient(&redis.Options{Addr: s.address(), MaxRetries: 3})
	defer rdb.Close()
	for _, key := range queueKeys {
		deadline := time.Now().Add(10 * time.Second)
		for {
			start := mono()
			items, err := rdb.LRange(context.Background(), key, 0, -1).Result()
			var rerr redis.Error
			if err == nil {
				add(Event{Kind: evQueueFinal, Client: "harness", Key: key, Value: strings.Join(items, " "), Start: start, End: mono(), Result: "ok"})
				break
			}
			if !errors.As(err, &rerr) || time.Now().After(deadline) {
				return fmt.Errorf("LRANGE %s after the run: %w", key, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

// checkQueue is the queue's check (see the top of the file).
func checkQueue(r *Report, events []Event, violate func(string, ...any)) {
	pushSent := map[string]int64{} // item -> its LPUSH's send
	acked := map[string]bool{}     // item -> its LPUSH was answered
	seen := map[string][]string{}  // item -> where it came out: a pop's reply, a final list
	var lostPops []int64           // ends of pops whose outcome is unknown (MaxInt64: never answered)
	finals := 0
	for _, e := range events {
		switch {
		case e.Kind == evQueueFinal:
			finals++
			for _, it := range strings.Fields(e.Value) {
				seen[it] = append(seen[it], "left in "+e.Key)
				r.QueueLeft++
			}
		case e.Kind == evWire && queueTracked(e.Args):
			name := strings.ToLower(e.Args[0])
			redirected := e.Result == "error" && (strings.HasPrefix(e.Reply, "MOVED ") || strings.HasPrefix(e.Reply, "CLUSTERDOWN"))
			switch name {
			case "lpush":
				r.QueuePushes++
				for _, it := range e.Args[2:] {
					pushSent[it] = e.Start
					if e.Result == "ok" {
						acked[it] = true
						r.QueueAcked++
					}
				}
			case "rpop", "brpop":
				r.QueuePops++
				item := e.Reply
				if name == "brpop" {
					_, item, _ = strings.Cut(e.Reply, " ")
				}
				switch {
				case e.Result == "ok":
					seen[item] = append(seen[item], fmt.Sprintf("%s at %d", name, e.End))
					r.QueueDelivered++
				case e.Result == "nil" || redirected:
				default:
					// Never answered, or answered with an error that may
					// follow a pop done (a write not known committed): it
					// may have taken any item pushed before it ended, a
					// blocked BRPOP one pushed after it was sent.
					end := e.End
					if e.Result == "unknown" || end == 0 {
						end = math.MaxInt64
					}
					lostPops = append(lostPops, end)
				}
			case "lmove":
				r.QueueMoves++
			}
		}
	}
	if finals == 0 {
		return // no queue in this history
	}
	for it, where := range seen {
		if _, ok := pushSent[it]; !ok {
			violate("queue: item %s came out (%s) but no LPUSH sent it", it, strings.Join(where, ", "))
		}
		if len(where) > 1 {
			violate("queue: item %s delivered twice: %s", it, strings.Join(where, ", "))
		}
	}
	// The acknowledged items missing, each to be explained by a distinct
	// pop of unknown outcome that ended after its push was sent (Hall's
	// condition: the k-th latest push has k such pops ending after it).
	var missing []int64
	for it := range acked {
		if len(seen[it]) == 0 {
			missing = append(missing, pushSent[it])
		}
	}
	r.QueueMissing, r.QueueLostPops = len(missing), len(lostPops)
	slices.Sort(lostPops)
	slices.SortFunc(missing, func(a, b int64) int { return cmp.Compare(b, a) }) // the latest first
	for k, sent := range missing {
		i, _ := slices.BinarySearch(lostPops, sent+1)
		if after := len(lostPops) - i; after < k+1 {
			violate("queue: %d acknowledged pushes lost: neither delivered nor left in a list, and only %d pops of unknown outcome ended after the latest %d of them were sent",
				len(missing), after, k+1)
			break
		}
	}
}
