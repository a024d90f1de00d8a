package main

// (g) Observers (SPEC §13, LOCK-17, issue 33): beside the holders, clients
// follow some of the mutex keys with the Go SDK's Observe (sdk/locks),
// through the proxies like the holders, under every fault, and record each
// leader it yields. The holders hold with OWNER their client id, so that a
// leader names its holder. The check: no observer ever yields a fence
// smaller than one it yielded before, and every leader it yields (owner,
// fence) was a real holder at some moment: its grant is in the history
// (the proxy saw the server answer a LOCK.HOLD of the key with that fence
// and OWNER), and the observation does not come before that grant's send.

import (
	"context"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure/sdk/locks"
)

// evObserve is one leader an observer's Observe yielded: Client the
// observer, Key, Fence (0: none), Value its owner, Start when it was
// received.
const evObserve = "observe"

// runObserver follows key with Observe until ctx ends, again whenever the
// channel closes early (Observe gives up only on errors it cannot outlast),
// and emits each leader yielded. addrs and nodes are as newWorker's.
func runObserver(ctx context.Context, id string, addrs, nodes []string, key string, ttl time.Duration, emit func(Event)) {
	var store locks.Store
	if len(addrs) > 1 {
		ls := newLeaderStore(addrs, nodes, 2, true)
		defer ls.Close()
		store = ls
	} else {
		c := redis.NewClient(&redis.Options{
			Addr: addrs[0], ReadTimeout: time.Second, WriteTimeout: time.Second, DialTimeout: time.Second,
			PoolSize: 2, MaxRetries: -1,
		})
		defer c.Close()
		store = c
	}
	lock, err := locks.OpenLock(store, lockName, locks.TTL(ttl))
	if err != nil {
		emit(Event{Kind: evObserve, Client: id, Key: key, Start: mono(), Result: "err: " + err.Error()})
		return
	}
	for session := int64(1); ctx.Err() == nil; session++ {
		for ld := range lock.Observe(ctx, key) {
			emit(Event{Kind: evObserve, Client: id, Hold: session, Key: key, Fence: ld.Fence, Value: ld.Owner, Start: mono(), Result: "ok"})
		}
		sleep(ctx, 100*time.Millisecond)
	}
}

// checkObservers is (g). An observer's fences never go back, across its
// Observe sessions too (a new session starts from LOCK.INFO, which never
// answers an older lease than one already granted); every leader it
// yielded has a grant of its key, fence and owner whose request was first
// sent before it was observed. The first send of a request id counts, not
// the one the proxy saw answered: a HOLD whose reply was lost (a cut
// connection, a node killed after its log committed the grant) holds the
// lease all the same, which its retry is answered with later (LOCK-03).
// A leader whose grant no reply showed is one of its owner's HOLDs of the
// key that were never answered, if one was sent before it was observed
// and no other request was answered with its fence.
func checkObservers(r *Report, events []Event, violate func(string, ...any)) {
	type grantKey struct {
		key, owner string
		fence      int64
	}
	type keyOwner struct{ key, owner string }
	firstSend := map[string]int64{}    // request id -> its first LOCK.HOLD's send
	unanswered := map[keyOwner]int64{} // the first HOLD of key by owner never answered
	fenceGranted := map[int64]bool{}
	for _, e := range events {
		if e.Kind != evWire || len(e.Args) < 4 || !strings.EqualFold(e.Args[0], "lock.hold") {
			continue
		}
		if t, ok := firstSend[e.Args[3]]; !ok || e.Start < t {
			firstSend[e.Args[3]] = e.Start
		}
		if e.Result == "unknown" {
			ko := keyOwner{e.Args[2], ownerOf(e.Args)}
			if t, ok := unanswered[ko]; !ok || e.Start < t {
				unanswered[ko] = e.Start
			}
		}
	}
	sent := map[grantKey]int64{} // the earliest first send of a request granted it
	for _, e := range events {
		if e.Kind != evGrant {
			continue
		}
		fenceGranted[e.Fence] = true
		t := e.Start
		if f, ok := firstSend[e.ReqID]; ok {
			t = min(t, f)
		}
		g := grantKey{e.Key, e.Value, e.Fence}
		if o, ok := sent[g]; !ok || t < o {
			sent[g] = t
		}
	}
	type obsKey struct{ client, key string }
	top := map[obsKey]int64{}
	observers := map[obsKey]bool{}
	for _, e := range events {
		if e.Kind != evObserve {
			continue
		}
		if e.Result != "ok" {
			violate("observer %s of %s: %s", e.Client, e.Key, e.Result)
			continue
		}
		o := obsKey{e.Client, e.Key}
		observers[o] = true
		r.Observed++
		if e.Fence == 0 {
			r.ObservedNone++
			continue
		}
		if e.Fence < top[o] {
			violate("LOCK-17: observer %s of %s yielded fence %d (owner %q) after fence %d", e.Client, e.Key, e.Fence, e.Value, top[o])
		}
		top[o] = max(top[o], e.Fence)
		t, ok := sent[grantKey{e.Key, e.Value, e.Fence}]
		if !ok {
			if u, asked := unanswered[keyOwner{e.Key, e.Value}]; asked && u < e.Start && !fenceGranted[e.Fence] {
				r.ObservedUnanswered++
				continue
			}
		}
		switch {
		case !ok:
			violate("LOCK-17: observer %s of %s yielded leader %q with fence %d, which the server was never seen to grant", e.Client, e.Key, e.Value, e.Fence)
		case e.Start < t:
			violate("LOCK-17: observer %s of %s yielded leader %q with fence %d at %d, before its LOCK.HOLD was first sent at %d", e.Client, e.Key, e.Value, e.Fence, e.Start, t)
		}
	}
	r.Observers = len(observers)
}
