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
//   - LOCK-01: at most one live lease per (lock, key), at every instant of store
//     time. Lock keys are their own namespace, unrelated to kv keys.
//   - LOCK-02: fences are epoch<<32 + n, n counting grants in the epoch from 1
//     across all locks and keys; before n would reach 2^32 the epoch is bumped
//     through the EpochBumper, synchronously. Every fence is larger than every
//     earlier one.
//   - LOCK-03: one grant per request id. A retry is answered with the lease
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
//   - LOCK-08: lines are FIFO by the time a reqid first joined. A request whose
//     WAIT ran out or that was abandoned leaves a lingering place for
//     Config.Linger: it is passed over, never granted, and a retry with the same
//     reqid resumes it.
//   - LOCK-10: a new Manager holds no lease and no waiter.
//
// # Time
//
// Store time comes from the Clock in Config. Every timed thing — deadlines,
// MAXHOLD, WAIT, lingers, forgetting old records — is an event in one heap;
// one clock timer is armed for the earliest. Each method also runs the events
// already due before it looks at anything, so a late timer never shows an
// ended lease as live. Tests use FakeClock and Advance it; nothing sleeps.
//
// One mutex guards a Manager. Ticket Done channels are closed under it.
package lockmod
