// Package kv is tenure's keyspace: Redis 7 string and key commands, on
// typed records that Redis's other types will share, with expiry, fences
// on keys (LOCK-12) and the store's epoch (LOCK-10), kept in Pebble.
//
// It is for the RESP server: a handler parses a command, calls one method of
// [Store], and turns the Go result or one of the sentinel errors into a reply.
// It is not a network server, knows nothing of RESP, and does not parse
// command arguments (EX seconds, option words); callers pass absolute expiry
// times in unix milliseconds and already-parsed numbers. It does not keep
// leases; lockmod does, and only asks kv for a durable epoch.
//
// # Files
//
// The type rules and the commands, one file per family; a command's
// method reads and writes keys through the storage files' update, view
// and change, and asks types.go whether the key's type is the one it
// takes:
//
//	types.go     the types, their codes, WRONGTYPE decided (Type.check)
//	collection.go  what every collection type shares: members, size, scans
//	strings.go   GET, SET and the other string commands
//	hashes.go    HSET, HGET and the other hash commands
//	sets.go      SADD, SMEMBERS, SINTER… and the other set commands
//	zsets.go     ZADD, ZSCORE, ZRANK… : member→score records and a score
//	             index; what each command costs (ranks are walks of the index);
//	             zsets_ranges.go the ranges, zsets_pops.go ZPOP*, ZRANDMEMBER
//	             and ZSCAN, zsets_combine.go ZUNION, ZINTER, ZDIFF, …STORE
//	lists.go     LPUSH, LRANGE, LINSERT… : elements by position under a
//	             head; what each command costs
//	bits.go      SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP
//	lcs.go       LCS
//	keys.go      DEL, EXISTS, EXPIRE…, TTL, TYPE, KEYS, SCAN, RENAME, COPY, OBJECT …
//	tx.go        MULTI/EXEC (Tx)            watch.go    WATCH
//	epoch.go     the epoch (LOCK-10)        errors.go   the sentinel errors
//	replica.go   a keyspace under a replicated log; snapshot.go its snapshots
//	store.go     Options, Open, Close, Stats, DBSIZE, FLUSHALL
//	notify.go    SetKeyHook: keys made and expired, for keyspace notifications
//
// The storage mechanics, in storage_*.go: how a command's reads and
// writes reach Pebble, and what is kept in memory to make them fast.
// None of them knows a command; a new type's commands need none changed.
//
//	storage_encoding.go    the bytes of keys and records (the Layout below)
//	storage_format.go      the format version; what Open checks and upgrades
//	storage_write.go       a command's writes under its stripes: update, change
//	storage_read.go        a read: view, the hit and miss counters
//	storage_metacache.go   the per-stripe metadata cache and value cache;
//	storage_metatable.go   its hash table
//	storage_pipeline.go    a connection's pipeline of commands in one batch
//	storage_readsettle.go  a read waits for the WAL to hold what it saw
//	storage_walsync.go     the WAL syncs writers share; the everysec syncer
//	storage_walgroup.go    the rounds of writers that share one sync
//	storage_walguard.go    the file system that keeps WAL errors from Pebble
//	storage_uring_linux.go the WAL's fdatasync through an io_uring
//	storage_diskfail.go    a failed disk: writes refused, reads go on
//	storage_fsync.go       the fsync modes, and the policy that reads them
//	storage_expire.go      the background goroutine: active expiry
//	storage_reclaim.go     collections' generations; reclaim of stale members
//
// # Layout
//
// Every Pebble key starts with a one-byte namespace, so that no user key can
// ever name internal data, whatever its bytes:
//
//	0x00 name                         internal metadata ("epoch", "format",
//	                                  "applied": uint64 BE; see storage_format.go)
//	0x01 xxhash64(key) BE (8) key     a user key's metadata record, of any type
//	0x02 expireAt ms BE (8) key       the expiry index: one entry per key with a TTL
//	0x03 generation BE (8) member     a collection's member (hash field, set
//	                                  member, …): one record each
//	0x04 generation BE (8)            the reclaim index: a generation whose
//	                                  members are stale (storage_reclaim.go)
//
// User keys are stored under their 64-bit hash, not in key order, because the
// hash is what makes SCAN's cursor work: the cursor is the hash to resume from
// (a uint64, as clients expect), a key keeps its hash for its whole life, so
// a key present for a whole walk is met exactly once whatever is inserted or
// deleted around it, and whole groups of equal hashes are returned together so
// that collisions lose nothing. Looking a key up costs one hash. KEYS, SCAN and
// FLUSHALL only ever touch the user namespaces 0x01 to 0x04, never 0x00:
// FLUSHALL keeps the epoch, and deletes the rest with one range deletion.
//
// A metadata record is one Pebble value: the type's code (0x01 string,
// 0x02 hash, 0x03 set, 0x04 zset, 0x05 list: see types.go), a flags byte
// (bit 0: an expiry follows, bit 1: a fence follows, bit 2: the string was
// changed in place, for OBJECT ENCODING), the expiry as int64 unix ms BE
// and the fence as uint64 BE when their flags are set, then the payload. A
// string's payload is its bytes, inline: a GET is one Pebble lookup and a
// SET one put, and a key without TTL or fence costs two bytes of header. A
// collection's payload is its header, the generation and the size (uint64
// BE each), then what its type keeps of its own; its members are records
// of their own under the generation, so a write of one member never
// rewrites the collection. Format 1, before types, had strings alone, with
// the same bytes: a format 1 directory opens as it stands.
//
// A generation is handed out once per collection made, never twice. DEL,
// UNLINK, expiry, and SET or RENAME over a collection delete its metadata
// record and put its generation in the reclaim index, in the same batch:
// O(1) whatever its size; as no record names the generation again, its
// members are never read again, and the background goroutine deletes them
// with a range deletion (storage_reclaim.go). RENAME moves the metadata
// record alone; COPY copies the members under a new generation.
//
// # A new type
//
// A collection type (hash, set, zset, list) plugs in without touching
// the storage files, nor DEL, EXPIRE, RENAME, COPY, TYPE, SCAN … TYPE,
// FLUSHALL or expiry, which work on any collection's metadata record:
//
//  1. Its code and name are in types.go already (TypeZSet, TypeList).
//  2. Its members are records under the generation, at sub-keys it
//     chooses (collection.go): a member in the hashed space spaceMembers
//     (memberSub: space, xxhash64(member), member) gets point lookups,
//     HSCAN-style cursors (collRead.scan) and random picks
//     (collRead.random, randomMembers) for free; other spaces are its own
//     (spaceScores: a zset's index, sub = space, score as order-preserving
//     bytes, member; spaceElements: a list's elements, sub = space,
//     position BE), read in order with collRead.each/eachReverse.
//  3. Anything it keeps of the whole collection beyond generation and size
//     (a list's head and tail positions, an encoding flag) goes in the
//     header's ext bytes (header.ext), written by finish with the size.
//  4. A write command runs in update (or updateMany), opens the key with
//     openColl (WRONGTYPE from Type.check; an empty collection if missing)
//     or freshColl (a STORE form's dst), puts and deletes sub-keys with
//     coll.put/del, which see the command's own earlier writes through
//     coll.get, keeps coll.size itself (only the type knows which records
//     are members: a zset's index entries are not), and calls finish: the
//     header goes in the same batch as the members, and a collection left
//     empty is deleted, its generation reclaimed.
//  5. A read command uses readColl (one key) or readColls (several, from
//     one snapshot); a size is the header's (collSize), never a count.
//  6. OBJECT ENCODING names come from collectionEncoders (keys.go), a
//     function of the header, so of size and ext; EncodingLimits holds the
//     configured sizes.
//  7. Errors of its own go in errors.go's list and wrap's; resp's rows
//     follow resp/table.go's rules.
//
// # Expiry
//
// Expiry is an absolute unix time in milliseconds, so it survives restarts as
// Redis's does. A key is expired once now > expireAt (Redis's rule); setting a
// deadline at or before now deletes the key at once. Expired keys are treated
// as missing by every command and deleted when met (lazy expiry), and a
// goroutine deletes keys whose deadline passed, walking the expiry index in
// deadline order with bounded work per pass (active expiry), so that expired
// keys do not stay on disk. Open runs that sweep to the end before returning.
//
// # Concurrency and durability
//
// Commands that read then write a key hold one of 256 striped mutexes chosen
// by the key's hash; multi-key commands take their stripes in ascending order.
// In every mode a write returns only once its batch is in the operating
// system's hands, so a crash of the process loses nothing acknowledged (see
// storage_walsync.go). Batches are applied to Pebble without sync
// while a stripe is held, and the caller then waits, with no stripe held,
// for a WAL sync that covers its batch: with [FsyncAlways] an fsync,
// otherwise a write(2) of the WAL. Concurrent writers share it, as Redis's
// event loop writes and fsyncs its AOF once for a turn's clients. Reads do
// not lock (except to delete an expired key). A GET, EXISTS, TTL and the
// like, or an EXEC, that may have seen a batch whose sync is still under way
// waits for a sync itself before it answers (storage_readsettle.go); KEYS, SCAN,
// RANDOMKEY, LCS, DBSIZE and INFO do not, and may show a write whose
// writer is still waiting for it.
//
// A transaction (Tx, for MULTI/EXEC) holds every stripe, in ascending
// order, from its first command to its commit: its commands write into one
// indexed batch that they read through, and it commits once, so that on
// disk and to readers it is all there or not at all; the metadata cache
// learns of its writes only once that commit succeeded. WATCH (Watch)
// keeps a list of watchers in each stripe, touched under the stripe as a
// write is made, and checked by Tx with every stripe held.
//
// Each stripe also remembers, for up to Options.MetaCacheKeys keys in all,
// what a write needs to know of a key besides its value: that it is on disk,
// its type, its deadline and its fence, and the value itself when it is
// short (a collection's header always is: a DEL needs its generation).
// Every write goes through a stripe, so the cache is exact for the keys it
// holds, and a write that does not need the old value (a plain SET keeps
// the fence and drops the old deadline's index entry; DEL and EXPIRE need
// only the deadline) skips reading Pebble for them, and a GET of a short
// value is answered from it. When full it forgets an arbitrary key; a key
// it does not hold is read as before.
//
// DBSIZE is a counter kept in memory. Open initialises it by iterating over
// the user keys (keys only; no values are decoded), which takes time
// proportional to the number of keys. Like Redis's DBSIZE it counts keys that
// have expired but have not been swept yet.
package kv
