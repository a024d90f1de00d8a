// Package dashboard is tenure's live page of its locks (SPEC §14): every
// lock with its held keys (owner, fence, ttl left, held for, holders and
// limit, waiters; a key's holders and who waits in its line), a feed of grants, releases, expiries, revocations and
// losses, per-lock rates and hold and wait percentiles over the last
// minutes, and the node's role, epoch, leader and peers.
//
// It is an http.Handler over a Source (a *resp.Server): the page and its
// script and style are embedded (static/, plain HTML, CSS and JavaScript,
// no build step and nothing from outside the binary); the page reads
// JSON from /api/… and follows /api/stream, a stream of server-sent
// events. resp.Server.ServeHTTP serves it beside /metrics and puts basic
// auth and TLS in front of both; package tenure wires them (DB.ServeHTTP).
//
// What it is not for: it keeps no state of the lock module's own. The
// figures are the lock metrics (resp/lockmetrics.go), the feed is the
// audit (resp/audit.go), the keys are LOCK.LIST's walk. No lease id is
// ever in what it sends: none of its sources has one.
//
// It stays cheap with 100,000 held keys: a lock's keys are walked, sorted
// and filtered on the server, a walk reused for 20 times what it cost
// whoever asks, and sent a page at a time; the lock table has at most one row per lock
// label (1,000 names and _other); a stream sends at most streamBatch
// events per beat, skipping ahead when the store runs faster than a page
// can show.
package dashboard
