// Package locks is the Go SDK of tenure's lock module: leases with fencing
// tokens over a go-redis client. The user writes a function; the SDK waits
// in line for the key, keeps the lease while the function runs, cancels the
// function's context the moment the lease is lost, lets the key go when the
// function returns or panics, and tells the truth about what happened.
//
// # Install
//
// It is a package of the tenure module, on go-redis v9 and nothing else:
//
//	go get github.com/tenure-db/tenure/sdk/locks
//
// or, from a checkout of the repository, a replace directive in your go.mod:
//
//	go mod edit -require github.com/tenure-db/tenure@v0.0.0 -replace github.com/tenure-db/tenure=/path/to/tenure
//
// make sdks does the latter in a throwaway module and runs the example
// below there (sdk/day-one/main.go).
//
// # The seed's example
//
//	store := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
//	summaries, err := locks.OpenLock(store, "summaries", locks.TTL(30*time.Second))
//
//	err = summaries.Hold(ctx, chatID, func(ctx context.Context, lease *locks.Lease) error {
//		text, err := model.Summarize(ctx, messages) // ctx ends when the lease is lost
//		if err != nil {
//			return err
//		}
//		return saveSummary(ctx, chatID, text, lease.Fence)
//	})
//
// saveSummary writes with the fence, so that a holder that lost its lease
// cannot overwrite the next holder's summary: on tenure's own keys,
// store.Do(ctx, "SET", "summary:"+chatID, text, "FENCE", fence). Hold
// returns ErrLost if the lease was lost, even when fn returned nil, and
// ErrNotHeld (from TryHold, or a Wait that elapsed) when fn never ran.
//
// What it is for: making sure that, most of the time, one worker does a
// piece of work, and learning when that could not be made sure. What it is
// not for: a lease cannot stop code that ignores its context, nor a write
// already on the wire. A holder that froze past its ttl may still write after
// the next holder got the key. Whatever it writes to must check the fence:
// tenure's own keys do with SET … FENCE (LOCK-12), other systems by
// comparing fences. A Lease's Fence is larger than every fence granted
// before it (LOCK-02), restarts of the store included.
//
// # TLS and auth
//
// OpenLock takes the client as the user made it, and with it its TLS, its
// user and password, its pool and timeouts: the SDK sends commands with its
// Do, and reads its ReadTimeout (for the wait chunks) without changing it. Against a tenure started with --tls-cert, --tls-key and
// --users (SPEC §5):
//
//	store := redis.NewClient(&redis.Options{
//		Addr:      "db.internal:6379",
//		Username:  "app",
//		Password:  os.Getenv("TENURE_PASSWORD"),
//		TLSConfig: &tls.Config{RootCAs: pool}, // or redis.ParseURL("rediss://app:…@db.internal:6379")
//	})
//
// Holding needs a user with the write role: a read user's Hold returns the
// store's NOPERM error at once, naming the hold.
//
// # On a cluster
//
// For a tenure cluster (SPEC §10, docs/cluster.md), pass a
// *redis.ClusterClient (any redis.UniversalClient will do): a tenure cluster
// looks to go-redis like a Redis Cluster of one shard led by the leader, and
// the client follows -MOVED to it. A short ClusterStateReloadInterval finds a
// new leader sooner. A failover is a restart (LOCK-10, LOCK-14): the new
// leader holds no lease, so a Hold whose leader dies is lost ("expired" or
// "unknown lease") and fn's context cancelled; the next Hold's fence is
// larger, from a newer epoch.
//
// # When the network or the store fails
//
// Every request is retried with the same id, on whatever connection the
// client hands out, so a cut connection, a lost reply or a store back in
// time costs only a retry: the store answers a retried HOLD with the lease
// it already gave (LOCK-03), and renewals that fail are tried again, at
// least every ttl/10, until the holder's deadline. When the deadline passes
// without a renewal (the store down, the network cut, this process paused)
// the lease is lost by the holder's own clock, a margin before the store
// could give the key to anyone else: fn's context is cancelled and Hold
// returns a *LostError with reason "expired". A store that restarted forgot
// every lease: the next renewal is answered "unknown lease", and that is
// the reason. A Hold still waiting in line retries until a ttl passes with
// no answer, then returns "locks: hold … no answer for <ttl>" wrapping the
// last error. An error reply no retry cures (a
// read-only user's NOPERM) ends it at once.
//
// # When fn's context is cancelled
//
// fn's context is a child of Hold's ctx, and is cancelled:
//
//   - when a renewal is answered -LOST: the store restarted ("unknown lease"),
//     an admin revoked the lease ("revoked by admin"), it ran out ("expired")
//     or reached MAXHOLD ("revoked maxhold");
//   - when the holder's deadline passes without a successful renewal
//     ("expired"), or MaxHold less the margin is reached ("revoked maxhold");
//   - when ctx is cancelled (then its cause is ctx's, and the lease is not lost);
//   - after fn returns.
//
// In the first two cases context.Cause is the *LostError, Lease.Done is
// closed and Lease.Lost returns it, and once fn returns Hold returns ErrLost
// even if fn returned nil: another holder may have run beside it. Done, Err
// and Lease.Lost compare the holder's deadline with the clock on every call,
// so a process that wakes from a pause past its deadline sees the loss at
// once, before its timers run. (Contexts derived from fn's learn of it when
// the SDK's timer does, a moment later.)
//
// # Keeping a lease (SPEC §8)
//
// Each Hold draws one request id, 128 random bits, and sends it with every
// HOLD it makes: a network error or a lost reply is retried with the same
// id, on whatever connection the client hands out, and the store answers the
// lease it already gave rather than a second one (LOCK-03). Waiting in line
// is a sequence of HOLDs with that id, each waiting a chunk of half the
// client's ReadTimeout (read from its options, never changed; a client with
// none waits 10 s chunks), so no read times out.
//
// The id is kept only while the store surely remembers it (the reqid
// window): the store remembers an id for at least the lease's ttl after the
// lease ends, and a grant to it came no earlier than the send of the oldest
// HOLD not yet answered null or "superseded" (T0, the HOLD whose reply was
// lost), so a HOLD with the id goes only while now < T0 + ttl - margin on
// the local monotonic clock. Past that Hold starts over with a fresh id,
// joining the line anew; a lease the lost reply may have carried is never
// renewed and runs out (nobody works under it). Chunks follow each other
// within the window too, and a Hold that stops waiting (ctx ended) sends no
// probe past it. go-redis's own retries (MaxRetries) resend a HOLD at a
// time Hold does not choose, after up to a ReadTimeout, which a paused
// process can push past the window: set MaxRetries to -1 on the client
// you hand OpenLock for exactly one grant per id.
//
// The chunks overlap, so that the place in line holds (LOCK-08): once a
// quarter of a chunk has passed, the next HOLD goes out on another
// connection and supersedes the blocked one, which the store answers
// "superseded" (the SDK ignores that for its own earlier chunk). Were each chunk sent only after
// the previous one's WAIT ran out, the place would linger in between,
// passed over, and a release at that moment would serve a later waiter
// first. Whichever reply carries the grant wins; a HOLD with the same id
// that reaches the store after the grant is answered the same lease, and a
// grant that reaches a HOLD after Hold stopped waiting is released. The last
// chunk of a bounded Wait has no successor. When ctx ends while waiting, a
// HOLD with the same id and WAIT 0 supersedes the waiting one at once, and a
// grant that raced in is released.
//
// The holder's deadline is the send time of the last HOLD or RENEW that
// succeeded (for the grant: of the HOLD whose reply granted), plus the ttl
// the store answered, less a margin (default min(ttl/10, 2 s)), capped at
// the grant + MaxHold - margin; all on the local monotonic clock. The holder
// gives up before the store does. A HOLD that waited in line long is renewed
// before fn starts, since its send time is far behind its grant.
//
// When fn returns after the holder gave the lease up by its own clock
// ("expired", "revoked maxhold"), the RELEASE the SDK still sends may be
// answered "unknown lease": the store forgets an ended lease a ttl after its
// end. That reason stands; the store's answer replaces it only when it tells
// more: "revoked by admin", or "unknown lease" from a store whose epoch
// (INFO locks) is newer than the lease's (Fence >> 32): it restarted.
//
// A goroutine per Hold renews the lease while fn runs: at the latest ttl/3
// after the last success; after a failure, again at least every ttl/10, on
// any connection (an attempt whose reply is lost does not hold up the next),
// until the holder's deadline. When fn returns or panics, renewal stops and
// the lease is released with its id, retried until the deadline; then Hold
// returns, or the panic goes on. Hold waits for every goroutine it started.
//
// # Errors
//
// Hold returns ErrNotHeld when fn did not run because the key was not held
// (TryHold on a held key, Wait elapsed, ctx ended while waiting), and a
// *LostError (errors.Is ErrLost) when the lease was lost before fn returned.
// When fn returned an error as well, Hold returns errors.Join(fnErr,
// lostErr): errors.Is and errors.As find both. The reason travels in
// LostError.Reason, spelled as the store spells it (SPEC §4).
//
// # Semaphores, readers and owners (SPEC §12)
//
// A Lock opened with Limit(n) is a semaphore: each key admits up to n
// holders at once, each with a lease of its own (its own fence, renewal
// and loss), so a holder that dies returns its permit within a ttl, and a
// permit revoked by its fence (LOCK.REVOKE lock key FENCE f) cancels that
// holder alone. Every holder of a key must agree on n while it is in use
// (LOCK-15): a Hold with another limit fails without running fn.
//
//	llm, err := locks.OpenLock(store, "llm", locks.Limit(5)) // 5 calls at once
//	err = llm.Hold(ctx, "openai", func(ctx context.Context, lease *locks.Lease) error { … })
//
// On a Lock without Limit, HoldShared and TryHoldShared hold a key as a
// reader: readers share it, a Hold (a writer) has it alone. The line stays
// one and FIFO (LOCK-08): a reader that comes while a writer waits waits
// behind it, so no writer starves.
//
// Every lease carries an owner text, shown by LOCK.INFO, LOCK.LIST and
// LOCK.HOLDERS: Owner(text), or "hostname:pid" by default (LOCK-16). It is
// information, never a credential.
//
// Everything above of a Hold — renewal, loss, cancellation, lost even if
// fn succeeded, retries with one reqid, release on return, error or panic,
// and holding in the store's own process — holds of a permit and of a
// reader too.
//
// # Elections (SPEC §12)
//
// An election is a lock: its leader holds the key, its value is the
// lease's owner, its term is the lease's fence.
//
//	err = sched.Campaign(ctx, "cron", "node-a:8080", func(ctx context.Context, lease *locks.Lease) error {
//		return runScheduler(ctx, lease.Fence) // ctx ends when leadership is lost
//	})
//	ld, err := sched.Leader(ctx, "cron")      // *Leader{Owner, Fence}, or nil
//	for ld := range sched.Observe(ctx, "cron") { … } // none or the leader, then every change
//
// Campaign is Hold with the value as owner and no wait limit: resigning is
// fn returning, and a leader that loses its lease is cancelled as any
// holder. Observe runs LOCK.WATCH in a loop, each watch one chunk long,
// watching again with the last fence through cut connections, restarts
// and failovers (a new epoch shows as none, then the new leader); the
// terms it yields only increase. Unlike etcd's Observe it reports a
// resignation (none) and never yields an older leader after a newer one.
// On a *tenure.DB all three work in process.
//
// # Options, and why these
//
// TTL, MaxHold, Wait, Limit and Owner are the lock module's own. Margin is the one knob a
// user of etcd's concurrency or bsm/redislock would miss: it is how much the
// holder distrusts its clock and its pauses. There is no retry strategy
// (redislock's RetryStrategy): the store keeps a FIFO line and the SDK waits
// in it, rather than polling. There is no OnLost hook and no logger: the loss
// arrives as fn's context cause, Lease.Done and Hold's error, and a failed
// renewal that mattered is in LostError.Err. Per-call bounds come from ctx
// (a deadline while waiting gives ErrNotHeld wrapping it). etcd's
// Session.Done is Lease.Done; its Mutex revision is Lease.Fence.
//
// # In the store's own process
//
// OpenLock given a *tenure.DB (the store opened in this process, SPEC
// §11) holds its keys in process (LOCK-13). It tells the DB from a go-redis
// client by a method the DB has whose types are internal to this module
// (internal/inprocess.Holder), so no other Store can pass for one. Such a
// lease has no ttl and no renewal, and nothing above about deadlines,
// chunks or renewals applies: the key is let go when fn returns or panics,
// or with the process. The store tells the holder in the step that ends
// the lease, so fn's context is cancelled at once: MAXHOLD ("revoked
// maxhold") and LOCK.REVOKE ("revoked by admin") as over a connection, and
// the store's Close ("unknown lease", LostError.Err the store's ErrClosed).
// Hold returns as it does over a connection, with the same errors. Waiting
// is in the same line as network waiters, in join order (LOCK-08), fences
// from one counter (LOCK-02); a ctx that ends while waiting leaves a
// lingering place, as a closed connection does. Lease.Deadline is zero.
//
// # Connections
//
// A Hold waiting in line keeps one of the client's connections busy for
// each chunk, and a second one for a moment each quarter chunk, when the
// next chunk overlaps it; renewals need one now and then. Give the client's pool
// (PoolSize) room for two connections per waiter and one per holder: a
// next chunk that waits for a free connection past the previous chunk's
// WAIT leaves the place lingering, and a later waiter may be served first.
package locks
