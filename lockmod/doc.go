// Package lockmod is tenure's lock module: leases with fencing tokens, the
// lines of waiters in front of held keys, and the expiry that moves a key from
// one holder to the next. It is the lease logic apart from the server, in the
// manner of etcd's lessor: it knows nothing of RESP, connections, roles or
// Pebble. The resp package parses and range-checks LOCK.* commands, calls a
// Manager, and turns its results and errors into replies.
//
// What it is not for: it does not store the epoch (the store makes each new
// epoch durable and hands it over in Config.Epoch and through EpochBumper),
// it does not check fences on writes (SET … FENCE is the kv package's, LOCK-12),
// and it does not watch connections: resp calls Ticket.Abandon when a waiting
// client goes away.
//
// # Invariants
//
//   - LOCK-01: a (lock, key) has, at every instant of store time, at most
//     one live lease, exclusive; or any number of SHARED ones and no
//     exclusive one; or, held with LIMIT n, at most n. Each is a lease of
//     its own: its id, fence, ttl, MAXHOLD, reqid and linger. Lock keys
//     are their own namespace, unrelated to kv keys.
//   - LOCK-02: fences are epoch<<32 + n, n counting grants in the epoch from 1
//     across all locks and keys; before n would reach 2^32 the epoch is bumped
//     through the EpochBumper, synchronously. Every fence is larger than every
//     earlier one.
//   - LOCK-03: one grant per request id within an epoch (a Manager is one
//     open of the store: it starts knowing no reqid). A retry is answered with the lease
//     already given, the reason it ended, or takes over its place in line. A
//     reqid is remembered while it waits, while its lease lives, and for the
//     longest ttl the lease had after it ends; then it is forgotten.
//   - LOCK-04: only the lease id, 128 bits from crypto/rand, renews or releases.
//   - LOCK-05: an ended lease is never renewed; its id and the reason it ended
//     are remembered as long as its reqid.
//   - LOCK-06, LOCK-07: a lease ends at its deadline (grant or last renewal +
//     ttl, never past grant + MAXHOLD), and in the same critical section the
//     first open request in line is granted, with a fresh fence, re-checked at
//     the moment of grant (etcd#11456).
//   - LOCK-08: one line per key, FIFO by the time a reqid first joined.
//     Whenever room is made (a lease ends, a waiting request leaves) the
//     line grants from its head, in one step, as many open requests as now
//     fit, and stops at the first that does not: no request overtakes an
//     earlier one still waiting (a waiting writer holds back the readers
//     behind it; a freed permit goes to the first in line). A newcomer is
//     granted at once only if it fits and no open request waits ahead. A
//     request whose WAIT ran out or that was abandoned leaves a lingering
//     place for Config.Linger: it is passed over, never granted, and a
//     retry with the same reqid resumes it.
//   - LOCK-15: while a key has a live lease or a place in line, its LIMIT
//     (1 for none) is in its keyState, or is 1 when it has none; a request
//     with another is refused with a *LimitError before anything else is
//     looked at but its reqid's key, a retry included, and changes nothing.
//   - LOCK-16: each request keeps the OWNER text it was made with; a retry
//     of its reqid does not change it. Info, List and Holders show it,
//     never a lease id.
//   - LOCK-10: a new Manager holds no lease and no waiter.
//   - LOCK-13: a lease held in process (HoldRequest.InProcess) has no ttl
//     deadline and is never renewed; only Release, MAXHOLD, Revoke and Close
//     end it, and its Ending is told in the same step. It waits in the same
//     lines and takes fences from the same counter as any other.
//
// # Time
//
// Store time comes from the Clock in Config. Every timed thing — deadlines,
// MAXHOLD, WAIT, lingers, forgetting old records — is an event in one heap;
// one clock timer is armed for the earliest. Each method also runs the events
// already due of what it reads before it looks at it, so a late timer never
// shows an ended lease as live. The timer runs what is due in steps of
// DefaultSweepStep events, letting the mutex go and pausing between them
// (a yield, and every half millisecond a short park so that a process on
// one CPU polls the network: see pacer), so that a million leases falling
// due at once do not hold the mutex, or the CPU, for the whole sweep. A
// method that comes between two steps and reads one key (Hold, Renew,
// Release, Info) runs only the due events of that key and of the request
// it reads, and answers; the rest stays the timer's (see catchUp). One
// that reads everything (Stats, List, Revoke, Abandon) runs the rest
// itself, in steps too, letting the mutex go between them so that the
// timer's steps still run. A sweep that lags behind ends the due leases
// whose keys have a line first (see contestedLease), so that their
// waiters are granted in its first step; a waiter whose WAIT ran out before
// its holder's deadline lingers rather than being granted. Tests use
// FakeClock and Advance it; nothing sleeps on store time (the pacer's
// parks are the machine's time, and decide nothing).
//
// One mutex guards a Manager. Ticket Done channels are closed under it, and
// the EpochBumper is called with it held, so it must not call back.
//
// # Where SPEC is silent
//
//   - A lease ends at its deadline inclusive: a RENEW at exactly the deadline
//     is "-LOST expired". At one instant, leases end before WAITs run out, so
//     a waiter whose WAIT runs out at the very deadline ahead of it is granted.
//   - MAXHOLD shorter than TTL: the first deadline is already capped, and the
//     lease ends "revoked maxhold". A lease whose deadline falls exactly on its
//     MAXHOLD deadline ends "revoked maxhold" too.
//   - RENEW with an explicit TTL sets this deadline only; the next RENEW
//     without one uses the ttl the lease was granted with. The longest ttl used
//     sets how long the ended lease and its reqid are remembered.
//   - A retry with the same reqid answers with the lease as it is (its own
//     TTL, WAIT and MAXHOLD are not applied). A retry of a place in line
//     brings its own TTL, WAIT and MAXHOLD for the grant to come. A retry with
//     WAIT 0 of a place on a held key is not granted, and the place lingers
//     from now.
//   - A free key with only lingering places is granted at once to a newcomer:
//     lingering places are passed over.
//   - A grant that fails (epoch bump or random source) answers that request
//     with the error; it leaves the line and its reqid is not remembered.
//
// # Keys with more than one lease
//
// The keys table files each held key's newest live lease. A key that may
// have more than one (held SHARED or with LIMIT), or that has a line, has
// a keyState besides (Manager.states): its line, its LIMIT, whether its
// leases are shared, and its live leases in grant order, a 16-byte entry
// each. A plain mutex with nobody waiting has none, and costs what it cost
// before there were other kinds. The contested heap files every live lease
// of a key with a line; dueOf and Revoke walk a key's holders.
//
// # Memory
//
// No goroutine or timer per lease, and at most one allocation: a plain live
// lease is one 88-byte place in a slab of requests, one string holding its
// key's name, its owner (after a one-byte length) and its reqid (an SDK's
// 32-hex-character reqid kept as its 16 bytes), an 8-byte slot in each of
// three hash tables (keys, reqids, lease ids) that name requests by a
// 32-bit ref into the slab, a 4-byte ref in the event heap, and a 16-byte
// entry in the order that List walks. A permit or a reader adds its entry
// among its key's holders and a share of its keyState
// (TestMemoryPerLivePermit). What that
// comes to is measured by TestMemoryPerLiveLease and given once, in
// docs/operating.md; it was a quarter to a half more with Go maps, a heap
// allocation per request and the reqid kept as text. A HOLD
// granted at once allocates nothing else — no Ticket, no lease id string —
// so a store filling up makes little garbage, and the process's RSS stays
// close to its live heap (see slab, table, Ticket, Grant.AppendLeaseID).
// Hold copies the strings it keeps, so callers may pass strings that alias
// their buffers. What a peak takes is kept: the slab's chunks and the
// tables' shards are reused by later requests but never given back, about
// 125 bytes per lease of the peak (the Go maps before kept ~80), and the
// collector scans the slab whole.
//
// # Listing
//
// List walks one lock's held and waited-for keys like SCAN: the cursor is a
// 32-bit hash of the key, under a random seed, so a key listed for the whole
// walk is met once whatever else comes and goes, and a step costs
// O(count + log n). Keys that share a hash come in one step.
//
// # Watching
//
// Watch (LOCK.WATCH, LOCK-17) files a watcher in its key's watch set;
// grant and end note the key (touch), and the step's unlock answers the
// set once its newest lease's fence is another, with the key's state as
// the step leaves it, shared by every watcher of the set, then calls
// their wakes without the lock. A watcher has no goroutine, timer or
// event of its own; Pause answers every watcher "free", Close ErrClosed.
//
// # Observing
//
// Config.Observer hears of each grant (with the time the request waited)
// and each end of a lease (with its reason and how long it was held), under
// the Manager's lock; the server turns them into metrics and log lines.
// Lock events (events.go) are for feeds that come and go — pub/sub's
// __lock@0__ channels, the dashboard, an audit ring: each EventSink added
// with AddEventSink is told every grant, end, -LOST answer and new epoch
// in the same critical section as the change, so in order; with no sink
// no Event is built. A sink must not block: Feed queues on a bounded
// channel and drops (and counts) what a slow reader has no room for.
// Events never carry a lease id.
package lockmod
