// Package linmodel holds the sequential specifications that tenure's
// histories are checked against for linearizability with porcupine: the
// lease lock of one (lock, key) (Leases) and a string key written with
// SET … FENCE (FencedRegister). The lock tests of package resp and the
// torture harness share them. They are models for a checker, not an
// implementation: nothing in the server runs them.
//
// Both models are honest about what a history cannot tell:
//
//   - An operation whose reply was lost (a cut connection, a killed
//     server) has the outcome Unknown. It is given to porcupine with
//     Return = math.MaxInt64, so it may take effect at any point after its
//     call, or never: placed after every other operation it changes
//     nothing anyone saw (a caller may bound it earlier, see LeaseOp). The
//     models accept an unknown outcome in every state: they apply the
//     operation if the store could have, and otherwise leave the state as
//     it is. A lease granted by a reply nobody saw is the one exception,
//     kept apart from the holder: see Leases.
//   - Leases run out in real time. Operations carry their call and return
//     times, on the clock the store's deadlines are read from (on Linux
//     CLOCK_MONOTONIC, shared by every process of the machine), and the
//     state carries bounds of the holder's deadline. A step that needs the
//     lease to have run out is allowed if the operation could have been
//     processed at or after the earliest deadline; one that needs it live,
//     if it could have been processed before the latest. No more slack
//     than Slack is allowed.
//
// What they are not for: they know one (lock, key) or one string key at a
// time (a Partition function splits a history by Key), nothing of the
// line's FIFO order (LOCK-08), MAXHOLD or LOCK.REVOKE, and nothing of a
// store that restarts. Lease state dies with the store (LOCK-10), so a
// history that spans restarts is split by epoch too, by the caller, into
// one Key per (lock, key, epoch); a key written with --fsync always keeps
// its value across restarts, so FencedRegister may span them.
package linmodel
