package kv

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Options configure Open. The zero value is ready to use.
type Options struct {
	// FS is where Pebble keeps its files. Nil: the real disk (vfs.Default).
	// Tests may pass vfs.NewMem() or vfs.NewCrashableMem().
	FS vfs.FS
	// Fsync says when writes are synced; the zero value is FsyncEverysec.
	Fsync FsyncMode
	// Logger receives Pebble's own log lines and the errors of kv's
	// background goroutines. Nil: slog.Default().
	Logger *slog.Logger
	// Now is the wall clock that expiry is measured on. Nil: time.Now.
	Now func() time.Time
	// SweepInterval is the period of the active expiry sweep. 0: 100ms.
	SweepInterval time.Duration
	// MaxValueLen bounds the strings APPEND and SETRANGE may make. 0: 512 MiB,
	// Redis's proto-max-bulk-len default.
	MaxValueLen int64
	// MetaCacheKeys bounds how many keys' metadata (present, deadline,
	// fence) the store remembers in memory, so that a write which does not
	// need the old value (SET, DEL, EXPIRE …) need not read it from Pebble
	// first. 0: 262,144 (about 30 MB with short keys); negative: none.
	MetaCacheKeys int
	// BlockCacheBytes bounds Pebble's cache of the blocks it reads from its
	// files (filled as blocks are read, never ahead). 0: 256 MiB. With
	// Pebble's own default, 8 MiB, the bench's HSET on 1,000 hashes of up
	// to 200 fields spent a third of the server's CPU reading blocks from
	// the files again.
	BlockCacheBytes int64
	// Replica says the keyspace is a copy of a replicated log (package
	// cluster): its own clock deletes nothing, neither at open nor in a
	// sweeper; expired keys go only by SweepAt, at the instant an entry
	// of the log names, so every copy deletes alike.
	Replica bool
}

const (
	numStripes           = 256
	defaultMetaCacheKeys = 1 << 18
	defaultBlockCache    = 256 << 20
	// bloomBitsPerKey sizes the Bloom filter of each of Pebble's files
	// (about 1% false positives), so that a point read of a key a file
	// does not hold (a new hash field or set member, a key being created)
	// skips the file without reading its index or data blocks.
	bloomBitsPerKey      = 10
	defaultSweepInterval = 100 * time.Millisecond
	defaultMaxValueLen   = 512 << 20
	everysecInterval     = time.Second
)

// Store is the keyspace. Its methods are safe for concurrent use. Close must
// not be called while other calls are running; calls after Close return
// ErrClosed.
//
// The Store that Tx passes to its function is a view of the same keyspace
// inside one transaction (see tx.go): its commands read what the
// transaction wrote so far, and their writes reach Pebble at the end, all
// in one batch.
type Store struct {
	*keyspace
	tx *txn // nil but in a transaction's view
}

// keyspace is what a Store and its transactions' views share.
type keyspace struct {
	db            *pebble.DB
	dir           string
	log           *slog.Logger
	now           func() time.Time
	sweepInterval time.Duration
	replica       bool
	maxValueLen   atomic.Int64
	metaPerStripe int // 0: no metadata cache

	stripes [numStripes]stripe

	epochMu sync.Mutex // serialises BumpEpoch's read-modify-write
	epoch   atomic.Uint64

	keys           atomic.Int64 // records on disk, expired-but-not-swept included
	keysWithExpiry atomic.Int64
	expiredTotal   atomic.Int64
	// deadlineSum is the sum of the deadlines of the keys with a TTL, each
	// less deadlineBase (the store's open time), for INFO's avg_ttl: kept
	// relative so that it holds billions of keys of hours-long TTLs.
	deadlineSum  atomic.Int64
	deadlineBase int64
	lookups      lookupStats
	lastSync     atomic.Int64 // unix seconds of the last WAL sync that succeeded
	unsettled    unsettled    // command commits a read may see before the WAL holds them (storage_readsettle.go)
	walGroup     walGroup     // the writers sharing a WAL sync (storage_walgroup.go)

	fsync  fsyncPolicy // the one reader of the fsync mode (storage_fsync.go)
	closed atomic.Bool
	// walRing makes the WAL's fdatasyncs when the kernel gives one and
	// the store is on the real disk; nil otherwise (storage_uring_linux.go).
	walRing atomic.Pointer[uring]

	// failed is the first write Pebble could not make (see commit): from
	// then on every write is refused with it.
	failed atomic.Pointer[error]
	// flushFailed is the error of the last flush while flushes fail (see
	// events): meanwhile writes are refused with it.
	flushFailed atomic.Pointer[error]
	stop        chan struct{}
	wg          sync.WaitGroup

	generation atomic.Uint64 // the last collection generation handed out (storage_reclaim.go)
	limits     atomic.Pointer[EncodingLimits]
	changes    atomic.Int64 // records written since Open or the last Save (Stats.ChangesSinceSave)

	keyHook atomic.Pointer[KeyHook] // SetKeyHook's (notify.go)
}

// Open opens (creating if needed) the store in dir, upgrades an older
// format (storage_format.go), deletes the keys whose deadline has passed, counts
// the keys, and starts the background goroutine (expiry sweeps but on a
// replica, reclaim of stale members) and, with FsyncEverysec, the syncer.
// It does not bump the epoch: call BumpEpoch before serving locks
// (LOCK-10).
func Open(dir string, o Options) (*Store, error) {
	s := &Store{keyspace: &keyspace{
		dir:           dir,
		log:           o.Logger,
		now:           o.Now,
		sweepInterval: o.SweepInterval,
		replica:       o.Replica,
		stop:          make(chan struct{}),
	}}
	if s.now == nil {
		s.now = time.Now
	}
	s.fsync.mode = o.Fsync
	s.deadlineBase = s.nowMs()
	s.lastSync.Store(s.now().Unix())
	if !o.Fsync.known() {
		return nil, fmt.Errorf("open %s: unknown fsync mode %d", dir, int(o.Fsync))
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.sweepInterval <= 0 {
		s.sweepInterval = defaultSweepInterval
	}
	if o.MaxValueLen <= 0 {
		o.MaxValueLen = defaultMaxValueLen
	}
	s.maxValueLen.Store(o.MaxValueLen)
	s.SetEncodingLimits(DefaultEncodingLimits)
	switch {
	case o.MetaCacheKeys == 0:
		s.metaPerStripe = defaultMetaCacheKeys / numStripes
	case o.MetaCacheKeys > 0:
		s.metaPerStripe = max(1, o.MetaCacheKeys/numStripes)
	}
	fs := o.FS
	if fs == nil {
		fs = vfs.Default
	}
	if err := checkWritable(fs, dir); err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	fs = walGuard{FS: fs, s: s}
	popts := &pebble.Options{
		FS:                 fs,
		Logger:             pebbleLogger{s.log},
		FormatMajorVersion: pebble.FormatNewest,
		EventListener:      s.events(),
		CacheSize:          cmp.Or(o.BlockCacheBytes, defaultBlockCache),
	}
	for i := range popts.Levels {
		popts.Levels[i].FilterPolicy = bloom.FilterPolicy(bloomBitsPerKey)
	}
	if o.FS == nil && useWALRing {
		ring, err := newURing()
		if err != nil {
			s.log.Info("the WAL is synced by fdatasync(2)", "why", err)
		}
		if ring != nil {
			s.walRing.Store(ring)
		}
	}
	db, err := pebble.Open(dir, popts)
	if err != nil {
		s.closeWALRing()
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	s.db = db
	if err := checkFormat(db); err != nil {
		_ = db.Close()
		s.closeWALRing()
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	if err := s.recover(); err != nil {
		_ = db.Close()
		s.closeWALRing()
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	s.wg.Add(1)
	go s.runSweeper()
	if s.fsync.fsyncsEverySecond() {
		s.wg.Add(1)
		go s.runSyncer()
	}
	return s, nil
}

// recover deletes what expired while the store was closed and initialises
// the in-memory counters.
func (s *Store) recover() error {
	if !s.replica {
		if err := s.sweep(0); err != nil {
			return err
		}
	}
	keys, err := s.countSpan([]byte{nsKey}, []byte{nsExpiry})
	if err != nil {
		return err
	}
	withExpiry, err := s.countSpan([]byte{nsExpiry}, []byte{nsMember}) // the expiry index alone, not the members after it
	if err != nil {
		return err
	}
	sum, err := s.sumDeadlines()
	if err != nil {
		return err
	}
	if err := s.initGeneration(); err != nil {
		return err
	}
	s.keys.Store(keys)
	s.keysWithExpiry.Store(withExpiry)
	s.deadlineSum.Store(sum)
	s.expiredTotal.Store(0)
	return nil
}

func (s *Store) countSpan(lower, upper []byte) (int64, error) {
	iter, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return 0, err
	}
	var n int64
	for valid := iter.First(); valid; valid = iter.Next() {
		n++
	}
	return n, errors.Join(iter.Error(), iter.Close())
}

// Close stops the sweeper and the syncer, syncs what was written, and closes
// Pebble.
func (s *Store) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return ErrClosed
	}
	close(s.stop)
	if failed := s.failed.Load(); failed != nil {
		return s.closeFailed(*failed)
	}
	s.wg.Wait()
	err := s.fsyncWAL()
	if failed := s.failed.Load(); failed != nil {
		return s.closeFailed(*failed) // this last sync found the disk failing
	}
	if cerr := s.db.Close(); cerr != nil {
		err = errors.Join(err, cerr)
	}
	s.closeWALRing()
	if err != nil {
		return fmt.Errorf("close %s: %w", s.dir, err)
	}
	return nil
}

// MaxValueLen returns the longest string APPEND and SETRANGE may make.
func (s *Store) MaxValueLen() int64 { return s.maxValueLen.Load() }

// Stats are the numbers INFO shows.
type Stats struct {
	Keys           int64  // keys on disk (as DBSize)
	KeysWithExpiry int64  // keys that have a TTL
	ExpiredTotal   int64  // keys deleted because they expired, since Open (lazily or by the sweep)
	DiskUsage      uint64 // bytes of Pebble files on disk
	KeyspaceHits   int64  // reads that found their key, since Open or ResetStats
	KeyspaceMisses int64  // reads that did not
	AvgTTL         int64  // ms left, on average, to the keys with a TTL; 0 when none
	LastSync       int64  // unix seconds of the last WAL fsync (LASTSAVE)
	// ChangesSinceSave counts the records written since Open or the last
	// Save (INFO's rdb_changes_since_last_save, Redis's dirty counter).
	ChangesSinceSave int64
	// WALSyncs counts the WAL syncs writers settled with, and
	// WALSyncWriters the writers they answered: their ratio is how many
	// writers shared a sync (storage_walgroup.go).
	WALSyncs, WALSyncWriters int64
	// WALFsync is how the WAL is fsynced: "io_uring" or "fdatasync"
	// (storage_uring_linux.go).
	WALFsync string
}

// Stats returns the current counters and Pebble's disk usage.
func (s *Store) Stats() Stats {
	st := Stats{
		Keys:             s.keys.Load(),
		KeysWithExpiry:   s.keysWithExpiry.Load(),
		ExpiredTotal:     s.expiredTotal.Load(),
		KeyspaceHits:     s.lookups.hits.Load(),
		KeyspaceMisses:   s.lookups.misses.Load(),
		AvgTTL:           s.avgTTL(),
		LastSync:         s.lastSync.Load(),
		ChangesSinceSave: s.changes.Load(),
		WALSyncs:         s.walGroup.syncs.Load(),
		WALSyncWriters:   s.walGroup.writers.Load(),
		WALFsync:         "fdatasync",
	}
	if s.walRing.Load() != nil {
		st.WALFsync = "io_uring"
	}
	if !s.closed.Load() {
		st.DiskUsage = s.db.Metrics().DiskSpaceUsage()
	}
	return st
}

// ResetStats zeroes the counters CONFIG RESETSTAT resets: keyspace hits
// and misses, and expired keys.
func (s *Store) ResetStats() {
	s.lookups.hits.Store(0)
	s.lookups.misses.Store(0)
	s.expiredTotal.Store(0)
}

// avgTTL is the mean of the milliseconds left to the keys with a TTL.
// Keys that expired and are not swept yet count as 0 left, so the mean
// is never negative.
func (s *Store) avgTTL() int64 {
	n := s.keysWithExpiry.Load()
	if n <= 0 {
		return 0
	}
	return max(0, s.deadlineSum.Load()/n+s.deadlineBase-s.nowMs())
}

// sumDeadlines adds up the deadlines in the expiry index, less
// deadlineBase, for Store.deadlineSum at open.
func (s *Store) sumDeadlines() (int64, error) {
	iter, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{nsExpiry}, UpperBound: []byte{nsEnd}})
	if err != nil {
		return 0, err
	}
	var sum int64
	for valid := iter.First(); valid; valid = iter.Next() {
		if k := iter.Key(); len(k) >= prefixLen {
			sum += int64(binary.BigEndian.Uint64(k[1:prefixLen])) - s.deadlineBase
		}
	}
	return sum, errors.Join(iter.Error(), iter.Close())
}

// DBSize returns the number of keys, from a counter: like Redis, it includes
// keys that expired and have not been swept yet.
func (s *Store) DBSize() (int64, error) {
	if s.closed.Load() {
		return 0, ErrClosed
	}
	if s.tx != nil {
		return s.tx.dbSize(s), nil
	}
	n := s.keys.Load()
	if err := s.settleRead(); err != nil {
		return 0, wrap("dbsize", err)
	}
	return n, nil
}

// FlushAll deletes every user key. The internal namespace (the epoch) stays.
func (s *Store) FlushAll() error {
	if s.closed.Load() {
		return ErrClosed
	}
	if s.tx != nil {
		return wrap("flushall", s.tx.flushAll(s))
	}
	for i := range s.stripes {
		s.stripes[i].Lock()
	}
	b := s.db.NewBatch()
	hits, err := s.flushWatched(s.db)
	if err == nil {
		err = b.DeleteRange(userSpanStart, userSpanEnd, nil)
	}
	if err == nil {
		err = s.commitCommand(b)
	}
	for i := range s.stripes {
		s.stripes[i].meta.reset() // after a failed commit too: the disk is in doubt
	}
	if err == nil {
		touchFlushed(hits)
		s.keys.Store(0)
		s.keysWithExpiry.Store(0)
		s.deadlineSum.Store(0)
		s.markDirty()
	}
	for i := range s.stripes {
		s.stripes[i].Unlock()
	}
	_ = b.Close()
	if err == nil {
		err = s.settle()
	}
	if err != nil {
		return fmt.Errorf("flushall: %w", err)
	}
	return nil
}

func (s *Store) markDirty() { s.fsync.written() }

// nowMs is the time expiry is judged at: now, or inside a transaction the
// instant it started (a pipeline's commands judge at their own).
func (s *Store) nowMs() int64 {
	if s.tx != nil && s.tx.pipe == nil {
		return s.tx.now
	}
	return s.now().UnixMilli()
}

// expiredNow is expiredAt(at, s.nowMs()), reading the clock only for a
// record with a deadline: most have none, and a clock read costs about as
// much as the rest of a GET's own work.
func (s *Store) expiredNow(at int64) bool { return at != 0 && expiredAt(at, s.nowMs()) }

// pebbleLogger adapts slog to Pebble's Logger.
type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) Infof(format string, args ...any) {
	p.l.Info(fmt.Sprintf(format, args...), "component", "pebble")
}

func (p pebbleLogger) Errorf(format string, args ...any) {
	p.l.Error(fmt.Sprintf(format, args...), "component", "pebble")
}

// Fatalf logs and panics: Pebble calls it when it cannot go on, and does not
// expect it to return. A library does not exit the process for its caller.
func (p pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	p.l.Error(msg, "component", "pebble", "fatal", true)
	panic("pebble: " + msg)
}
