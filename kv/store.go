package kv

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// FsyncMode says when writes reach the disk (SPEC §6, --fsync).
type FsyncMode int

const (
	// FsyncEverysec syncs the WAL once a second when something was written:
	// a crash loses at most about a second of acknowledged writes.
	FsyncEverysec FsyncMode = iota
	// FsyncAlways acknowledges a write only once it is on disk; concurrent
	// writers share fsyncs.
	FsyncAlways
	// FsyncNo never syncs explicitly and leaves it to the OS (and Pebble's
	// own syncs when it switches WAL files). BumpEpoch and Close still sync.
	FsyncNo
)

// ParseFsyncMode reads "always", "everysec" or "no" (any case).
func ParseFsyncMode(s string) (FsyncMode, error) {
	switch strings.ToLower(s) {
	case "everysec":
		return FsyncEverysec, nil
	case "always":
		return FsyncAlways, nil
	case "no":
		return FsyncNo, nil
	}
	return 0, fmt.Errorf("fsync mode %q: want always, everysec or no", s)
}

// String returns the name ParseFsyncMode reads.
func (m FsyncMode) String() string {
	switch m {
	case FsyncEverysec:
		return "everysec"
	case FsyncAlways:
		return "always"
	case FsyncNo:
		return "no"
	}
	return fmt.Sprintf("FsyncMode(%d)", int(m))
}

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
	// first. 0: 262,144 (about 20 MB with short keys); negative: none.
	MetaCacheKeys int
}

const (
	numStripes           = 256
	defaultMetaCacheKeys = 1 << 18
	defaultSweepInterval = 100 * time.Millisecond
	defaultMaxValueLen   = 512 << 20
	everysecInterval     = time.Second
)

// stripe is one of the per-key-hash mutexes, with the metadata cache of
// the keys it guards, padded to its own cache line.
type stripe struct {
	sync.Mutex
	meta map[string]keyMeta // guarded by the mutex; see remember
	_    [48]byte
}

// keyMeta is what the store remembers of a key that is on disk: all a write
// needs to know of it when it does not need the value.
type keyMeta struct {
	expiry int64
	fence  uint64
}

// Store is the keyspace. Its methods are safe for concurrent use. Close must
// not be called while other calls are running; calls after Close return
// ErrClosed.
type Store struct {
	db            *pebble.DB
	dir           string
	fsync         FsyncMode
	log           *slog.Logger
	now           func() time.Time
	sweepInterval time.Duration
	maxValueLen   atomic.Int64
	metaPerStripe int // 0: no metadata cache

	stripes [numStripes]stripe

	epochMu sync.Mutex // serialises BumpEpoch's read-modify-write
	epoch   atomic.Uint64

	keys           atomic.Int64 // records on disk, expired-but-not-swept included
	keysWithExpiry atomic.Int64
	expiredTotal   atomic.Int64

	dirty  atomic.Bool // written since the everysec syncer last synced
	closed atomic.Bool
	// failed is the first write Pebble could not make (see commit): from
	// then on every write is refused with it.
	failed atomic.Pointer[error]
	// flushFailed is the error of the last flush while flushes fail (see
	// events): meanwhile writes are refused with it.
	flushFailed atomic.Pointer[error]
	stop        chan struct{}
	wg          sync.WaitGroup
}

// Open opens (creating if needed) the store in dir, deletes the keys whose
// deadline has passed, counts the keys, and starts the expiry sweeper and,
// with FsyncEverysec, the syncer. It does not bump the epoch: call BumpEpoch
// before serving locks (LOCK-10).
func Open(dir string, o Options) (*Store, error) {
	s := &Store{
		dir:           dir,
		fsync:         o.Fsync,
		log:           o.Logger,
		now:           o.Now,
		sweepInterval: o.SweepInterval,
		stop:          make(chan struct{}),
	}
	switch o.Fsync {
	case FsyncEverysec, FsyncAlways, FsyncNo:
	default:
		return nil, fmt.Errorf("open %s: unknown fsync mode %d", dir, int(o.Fsync))
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.sweepInterval <= 0 {
		s.sweepInterval = defaultSweepInterval
	}
	s.SetMaxValueLen(o.MaxValueLen)
	switch {
	case o.MetaCacheKeys == 0:
		s.metaPerStripe = defaultMetaCacheKeys / numStripes
	case o.MetaCacheKeys > 0:
		s.metaPerStripe = max(1, o.MetaCacheKeys/numStripes)
	}
	for i := range s.stripes {
		s.stripes[i].meta = make(map[string]keyMeta)
	}
	fs := o.FS
	if fs == nil {
		fs = vfs.Default
	}
	fs = walGuard{FS: fs, s: s}
	db, err := pebble.Open(dir, &pebble.Options{
		FS:                 fs,
		Logger:             pebbleLogger{s.log},
		FormatMajorVersion: pebble.FormatNewest,
		EventListener:      s.events(),
	})
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	s.db = db
	if err := s.recover(); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	s.wg.Add(1)
	go s.runSweeper()
	if s.fsync == FsyncEverysec {
		s.wg.Add(1)
		go s.runSyncer()
	}
	return s, nil
}

// recover deletes what expired while the store was closed and initialises
// the in-memory counters.
func (s *Store) recover() error {
	if err := s.sweep(0); err != nil {
		return err
	}
	keys, err := s.countSpan([]byte{nsKey}, []byte{nsExpiry})
	if err != nil {
		return err
	}
	withExpiry, err := s.countSpan([]byte{nsExpiry}, []byte{nsEnd})
	if err != nil {
		return err
	}
	s.keys.Store(keys)
	s.keysWithExpiry.Store(withExpiry)
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
	err := s.syncWAL()
	if failed := s.failed.Load(); failed != nil {
		return s.closeFailed(*failed) // this last sync found the disk failing
	}
	if cerr := s.db.Close(); cerr != nil {
		err = errors.Join(err, cerr)
	}
	if err != nil {
		return fmt.Errorf("close %s: %w", s.dir, err)
	}
	return nil
}

// closeFailed closes a store whose disk failed a write. Pebble's commit
// pipeline may be wedged by it, and a goroutine caught inside never
// returns; Pebble's Close would wait for it forever. So it gets a moment,
// and then what is left open is left to the process's exit: what was
// acknowledged is on disk already, and the next open recovers the WAL.
func (s *Store) closeFailed(failed error) error {
	done := make(chan error, 1)
	go func() {
		s.wg.Wait()
		err := func() (err error) {
			defer s.recoverWrite(&err)
			return s.db.Close()
		}()
		done <- err
	}()
	select {
	case err := <-done:
		return fmt.Errorf("close %s: %w", s.dir, errors.Join(failed, err))
	case <-time.After(2 * time.Second):
		return fmt.Errorf("close %s: left open, as a write had failed: %w", s.dir, failed)
	}
}

// events watches Pebble's flushes. A flush that fails (a full disk, a
// read-only data directory) is retried at once and without end, and when the
// memtables are full Pebble stalls every write until one succeeds: a client
// would wait forever. So while flushes fail, writes are refused at once with
// the flush's error, and the first flush that succeeds lets them in again.
// Of Pebble's background errors, which repeat as fast as it retries, the
// first of a failing spell is logged.
func (s *Store) events() *pebble.EventListener {
	return &pebble.EventListener{
		FlushEnd: func(info pebble.FlushInfo) {
			// Pebble reports a flush that made no table as "empty table".
			if info.Err == nil || info.Err.Error() == "pebble: empty table" {
				if s.flushFailed.Swap(nil) != nil {
					s.log.Info("kv: a flush succeeded; writes are accepted again", "dir", s.dir)
				}
				return
			}
			failed := fmt.Errorf("%w while flushes fail: %w", ErrDiskFailed, info.Err)
			if s.flushFailed.Swap(&failed) == nil {
				s.log.Error("kv: a flush failed; refusing writes until one succeeds", "dir", s.dir, "err", info.Err)
			}
		},
		BackgroundError: func(err error) {
			if s.flushFailed.Load() == nil {
				s.log.Error("background error: "+err.Error(), "component", "pebble")
			}
		},
	}
}

// commit commits b. Pebble cannot go on after it failed to write or sync
// its WAL (a full disk, a read-only or failing data directory), so it never
// learns of such a failure (see walGuard): the first one is latched, the
// commit under way is reported failed, and from then on every write is
// refused with ErrDiskFailed without going near Pebble, while reads go on
// (SPEC §7: the server stays up, and loses nothing acknowledged). While
// flushes fail, writes are refused too (see events).
func (s *Store) commit(b *pebble.Batch, o *pebble.WriteOptions) (err error) {
	if err := s.refused(); err != nil {
		return err
	}
	defer s.recoverWrite(&err)
	if err := b.Commit(o); err != nil {
		return err
	}
	return s.failedSince()
}

// failedSince is the latched failure, if a WAL write or sync failed while
// a commit or sync was under way: Pebble was told all was well (see
// walGuard), so this is how the caller learns its write is in doubt.
func (s *Store) failedSince() error {
	if failed := s.failed.Load(); failed != nil {
		return *failed
	}
	return nil
}

// refused is the error every write is refused with now, or nil. Writes
// check it before they take their stripes too: a write caught in a wedged
// Pebble holds its stripe forever.
func (s *Store) refused() error {
	if failed := s.failed.Load(); failed != nil {
		return *failed
	}
	if failed := s.flushFailed.Load(); failed != nil {
		return *failed
	}
	return nil
}

// syncWAL is commit for an fsync of everything written so far.
func (s *Store) syncWAL() (err error) {
	if failed := s.failed.Load(); failed != nil {
		return *failed
	}
	defer s.recoverWrite(&err)
	if err := s.db.LogData(nil, pebble.Sync); err != nil {
		return err
	}
	return s.failedSince()
}

// failWAL latches the store as failed on an error writing a WAL file
// (see walGuard).
func (s *Store) failWAL(cause error) {
	failed := fmt.Errorf("%w until the server restarts: %w", ErrDiskFailed, cause)
	if s.failed.CompareAndSwap(nil, &failed) {
		s.log.Error("kv: a write to the WAL failed; refusing writes until the store is reopened", "dir", s.dir, "err", cause)
	}
}

// recoverWrite turns a panic of Pebble's write path into the latched
// ErrDiskFailed. It must be deferred directly.
func (s *Store) recoverWrite(err *error) {
	p := recover()
	if p == nil {
		return
	}
	cause, ok := p.(error)
	if !ok {
		cause = fmt.Errorf("%v", p)
	}
	failed := fmt.Errorf("%w until the server restarts: %w", ErrDiskFailed, cause)
	if s.failed.CompareAndSwap(nil, &failed) {
		s.log.Error("kv: a write to the disk failed; refusing writes until the store is reopened", "dir", s.dir, "err", cause)
	}
	*err = *s.failed.Load()
}

// Sync forces an fsync of everything written so far.
func (s *Store) Sync() error {
	if s.closed.Load() {
		return ErrClosed
	}
	if err := s.syncWAL(); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	return nil
}

// settle makes a write applied by this caller as durable as the fsync mode
// asks. It is called with no stripe held: with FsyncAlways, concurrent
// callers' syncs are grouped by Pebble's commit pipeline into shared fsyncs,
// and the sync of an empty LogData record covers every batch committed
// before it.
func (s *Store) settle() error {
	if s.fsync != FsyncAlways {
		return nil
	}
	if err := s.syncWAL(); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	return nil
}

func (s *Store) runSyncer() {
	defer s.wg.Done()
	t := time.NewTicker(everysecInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		if !s.dirty.Swap(false) || s.failed.Load() != nil {
			continue
		}
		if err := s.syncWAL(); err != nil {
			s.log.Error("kv: everysec fsync failed", "dir", s.dir, "err", err)
		}
	}
}

// BumpEpoch reads the epoch (0 if the store never had one), adds 1, writes
// it with an fsync and returns it (SPEC §2, LOCK-10, LOCK-02). A new data
// directory's first call returns 1.
func (s *Store) BumpEpoch() (uint64, error) {
	if s.closed.Load() {
		return 0, ErrClosed
	}
	s.epochMu.Lock()
	defer s.epochMu.Unlock()
	var cur uint64
	raw, closer, err := s.db.Get(metaEpoch)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
	case err != nil:
		return 0, fmt.Errorf("bump epoch: %w", err)
	default:
		if len(raw) != 8 {
			_ = closer.Close()
			return 0, fmt.Errorf("bump epoch: corrupt epoch record of %d bytes", len(raw))
		}
		cur = binary.BigEndian.Uint64(raw)
		_ = closer.Close()
	}
	next := cur + 1
	if next == 0 {
		return 0, fmt.Errorf("bump epoch: epoch %d cannot grow", cur)
	}
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], next)
	b := s.db.NewBatch()
	defer b.Close()
	_ = b.Set(metaEpoch, buf[:], nil)
	if err := s.commit(b, pebble.Sync); err != nil {
		return 0, fmt.Errorf("bump epoch: %w", err)
	}
	s.epoch.Store(next)
	return next, nil
}

// Epoch returns the value BumpEpoch last returned, 0 before the first call.
func (s *Store) Epoch() uint64 { return s.epoch.Load() }

// SetMaxValueLen changes Options.MaxValueLen (CONFIG SET
// proto-max-bulk-len); n <= 0 restores the default.
func (s *Store) SetMaxValueLen(n int64) {
	if n <= 0 {
		n = defaultMaxValueLen
	}
	s.maxValueLen.Store(n)
}

// MaxValueLen returns the longest string APPEND and SETRANGE may make.
func (s *Store) MaxValueLen() int64 { return s.maxValueLen.Load() }

// Stats are the numbers INFO shows.
type Stats struct {
	Keys           int64  // keys on disk (as DBSize)
	KeysWithExpiry int64  // keys that have a TTL
	ExpiredTotal   int64  // keys deleted because they expired, since Open (lazily or by the sweep)
	DiskUsage      uint64 // bytes of Pebble files on disk
}

// Stats returns the current counters and Pebble's disk usage.
func (s *Store) Stats() Stats {
	st := Stats{
		Keys:           s.keys.Load(),
		KeysWithExpiry: s.keysWithExpiry.Load(),
		ExpiredTotal:   s.expiredTotal.Load(),
	}
	if !s.closed.Load() {
		st.DiskUsage = s.db.Metrics().DiskSpaceUsage()
	}
	return st
}

// DBSize returns the number of keys, from a counter: like Redis, it includes
// keys that expired and have not been swept yet.
func (s *Store) DBSize() (int64, error) {
	if s.closed.Load() {
		return 0, ErrClosed
	}
	return s.keys.Load(), nil
}

// FlushAll deletes every user key. The internal namespace (the epoch) stays.
func (s *Store) FlushAll() error {
	if s.closed.Load() {
		return ErrClosed
	}
	for i := range s.stripes {
		s.stripes[i].Lock()
	}
	b := s.db.NewBatch()
	err := b.DeleteRange(userSpanStart, userSpanEnd, nil)
	if err == nil {
		err = s.commit(b, pebble.NoSync)
	}
	for i := range s.stripes {
		clear(s.stripes[i].meta) // after a failed commit too: the disk is in doubt
	}
	if err == nil {
		s.keys.Store(0)
		s.keysWithExpiry.Store(0)
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

func (s *Store) markDirty() {
	if s.fsync == FsyncEverysec && !s.dirty.Load() {
		s.dirty.Store(true)
	}
}

func (s *Store) nowMs() int64 { return s.now().UnixMilli() }

// getRecord looks a record up. When found, rec.value aliases Pebble's memory
// and the caller must close closer once done with it.
func getRecord(r pebble.Reader, dk []byte) (rec record, closer io.Closer, found bool, err error) {
	raw, closer, err := r.Get(dk)
	if errors.Is(err, pebble.ErrNotFound) {
		return record{}, nil, false, nil
	}
	if err != nil {
		return record{}, nil, false, err
	}
	rec, err = decodeRecord(raw)
	if err != nil {
		_ = closer.Close()
		return record{}, nil, false, err
	}
	return rec, closer, true, nil
}

// slot is a key's state as read under its stripe.
type slot struct {
	present bool // a record is on disk, expired or not
	live    bool // present and not expired
	rec     record
}

// item is one key of a command holding its stripe.
type item struct {
	key, dk []byte
	stripe  int // its stripe's index in Store.stripes
	st      *stripe
	cur     slot
}

func (s *Store) newItem(key []byte) item {
	h := hashKey(key)
	n := int(h % numStripes)
	return item{key: key, dk: dataKey(h, key), stripe: n, st: &s.stripes[n]}
}

// load reads it.cur, with its stripe held. The value is copied when
// withValue is set and left nil otherwise; without it, a key whose metadata
// the stripe remembers is not read from Pebble at all.
func (s *Store) load(it *item, now int64, withValue bool) error {
	if m, ok := it.st.meta[string(it.key)]; ok && !withValue {
		it.cur = slot{present: true, live: !expiredAt(m.expiry, now), rec: record{expiry: m.expiry, fence: m.fence}}
		return nil
	}
	rec, closer, found, err := getRecord(s.db, it.dk)
	if err != nil || !found {
		it.cur = slot{}
		return err
	}
	if withValue {
		rec.value = clone(rec.value)
	} else {
		rec.value = nil
	}
	_ = closer.Close()
	it.cur = slot{present: true, live: !expiredAt(rec.expiry, now), rec: rec}
	s.remember(it)
	return nil
}

// remember records it.cur, which is on disk, in its stripe's metadata
// cache; when the cache is full, an arbitrary key is forgotten to make room
// (Go's map iteration starts at a random place). The caller holds the
// stripe.
func (s *Store) remember(it *item) {
	m := it.st.meta
	if !it.cur.present {
		delete(m, string(it.key))
		return
	}
	km := keyMeta{expiry: it.cur.rec.expiry, fence: it.cur.rec.fence}
	if old, ok := m[string(it.key)]; ok {
		if old != km {
			m[string(it.key)] = km
		}
		return
	}
	if s.metaPerStripe == 0 {
		return
	}
	if len(m) >= s.metaPerStripe {
		for k := range m {
			delete(m, k)
			break
		}
	}
	m[string(it.key)] = km
}

// committed brings the metadata cache in step with it once the commit of
// its change returned: what was written is remembered; after a failed
// commit the key is forgotten, since what is on disk is in doubt. The
// caller holds its stripe.
func (s *Store) committed(it *item, err error) {
	if err != nil {
		delete(it.st.meta, string(it.key))
		return
	}
	s.remember(it)
}

// clone copies b; unlike bytes.Clone an empty b gives an empty, non-nil slice.
func clone(b []byte) []byte { return append(make([]byte, 0, len(b)), b...) }

// change gathers one command's writes into a batch and the counter changes
// to apply once it commits. The caller holds the stripes of every key it
// touches.
type change struct {
	db  *pebble.DB
	b   *pebble.Batch
	now int64

	writes                    int // puts and deletes asked by the command, not lazy-expiry deletes
	keys, withExpiry, expired int64
}

func (c *change) batch() *pebble.Batch {
	if c.b == nil {
		c.b = c.db.NewBatch()
	}
	return c.b
}

// put writes r as it.key's record, keeping the expiry index in step.
func (c *change) put(it *item, r record) {
	b := c.batch()
	op := b.SetDeferred(len(it.dk), r.encodedLen())
	copy(op.Key, it.dk)
	r.encodeTo(op.Value)
	_ = op.Finish() // only fails for indexed batches
	old := it.cur
	if old.present && old.rec.expiry != 0 && old.rec.expiry != r.expiry {
		_ = b.Delete(expiryKey(old.rec.expiry, it.key), nil)
	}
	if r.expiry != 0 && (!old.present || old.rec.expiry != r.expiry) {
		_ = b.Set(expiryKey(r.expiry, it.key), nil, nil)
	}
	if !old.present {
		c.keys++
	}
	if old.present && !old.live {
		c.expired++
	}
	if old.present && old.rec.expiry != 0 {
		c.withExpiry--
	}
	if r.expiry != 0 {
		c.withExpiry++
	}
	c.writes++
	it.cur = slot{present: true, live: true, rec: r}
}

// del deletes it.key's record and its expiry index entry.
func (c *change) del(it *item) {
	c.writes++
	c.drop(it)
}

// drop is del for lazy expiry: it does not count as the command's write.
func (c *change) drop(it *item) {
	old := it.cur
	if !old.present {
		return
	}
	b := c.batch()
	_ = b.Delete(it.dk, nil)
	if old.rec.expiry != 0 {
		_ = b.Delete(expiryKey(old.rec.expiry, it.key), nil)
		c.withExpiry--
	}
	c.keys--
	if !old.live {
		c.expired++
	}
	it.cur = slot{}
}

// apply commits c without sync and applies its counters. The caller holds
// the stripes of every key in c. It reports whether the command wrote.
func (s *Store) apply(c *change) (wrote bool, err error) {
	if c.b == nil {
		return false, nil
	}
	if err := s.commit(c.b, pebble.NoSync); err != nil {
		return false, err
	}
	s.keys.Add(c.keys)
	if c.withExpiry != 0 {
		s.keysWithExpiry.Add(c.withExpiry)
	}
	if c.expired != 0 {
		s.expiredTotal.Add(c.expired)
	}
	s.markDirty()
	return c.writes > 0, nil
}

func (c *change) close() {
	if c.b != nil {
		_ = c.b.Close()
		c.b = nil
	}
}

// update runs fn on key's current state with key's stripe held. An expired
// record is deleted first, so fn sees it missing. What fn writes into c is
// committed before the stripe is released; then, with no stripe held, the
// caller waits for the fsync mode's durability.
func (s *Store) update(key []byte, withValue bool, fn func(c *change, it *item) error) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if err := s.refused(); err != nil {
		return err
	}
	it := s.newItem(key)
	c := change{db: s.db, now: s.nowMs()}
	it.st.Lock()
	err := s.load(&it, c.now, withValue)
	if err == nil {
		if it.cur.present && !it.cur.live {
			c.drop(&it)
		}
		err = fn(&c, &it)
	}
	var wrote bool
	if err == nil {
		wrote, err = s.apply(&c)
		s.committed(&it, err)
	}
	it.st.Unlock()
	c.close()
	if err == nil && wrote {
		err = s.settle()
	}
	return err
}

// updateMany is update for several keys. Repeated keys share one item; idx
// maps each position in keys to its item.
func (s *Store) updateMany(keys [][]byte, withValue bool, fn func(c *change, items []item, idx []int) error) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if err := s.refused(); err != nil {
		return err
	}
	items := make([]item, 0, len(keys))
	idx := make([]int, len(keys))
	seen := make(map[string]int, len(keys))
	var stripes [numStripes / 64]uint64
	for i, k := range keys {
		if j, ok := seen[string(k)]; ok {
			idx[i] = j
			continue
		}
		seen[string(k)] = len(items)
		idx[i] = len(items)
		it := s.newItem(k)
		items = append(items, it)
		n := it.stripe
		stripes[n/64] |= 1 << (n % 64)
	}
	c := change{db: s.db, now: s.nowMs()}
	// Ascending order, so that multi-key commands never deadlock.
	forStripes(&stripes, func(n int) { s.stripes[n].Lock() })
	var err error
	for i := range items {
		if err = s.load(&items[i], c.now, withValue); err != nil {
			break
		}
		if items[i].cur.present && !items[i].cur.live {
			c.drop(&items[i])
		}
	}
	if err == nil {
		err = fn(&c, items, idx)
	}
	var wrote bool
	if err == nil {
		wrote, err = s.apply(&c)
		for i := range items {
			s.committed(&items[i], err)
		}
	}
	forStripes(&stripes, func(n int) { s.stripes[n].Unlock() })
	c.close()
	if err == nil && wrote {
		err = s.settle()
	}
	return err
}

func forStripes(set *[numStripes / 64]uint64, f func(n int)) {
	for w, bits := range set {
		for b := 0; b < 64; b++ {
			if bits&(1<<b) != 0 {
				f(w*64 + b)
			}
		}
	}
}

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
