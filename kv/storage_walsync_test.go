package kv

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

var fsyncModes = []FsyncMode{FsyncAlways, FsyncEverysec, FsyncNo}

// processCrash is what a SIGKILL of the process leaves of fs: everything
// the store handed to the OS, synced or not, and nothing it kept in memory.
func processCrash(fs *vfs.MemFS) *vfs.MemFS {
	return fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 100, RNG: rand.New(rand.NewPCG(1, 2))})
}

// machineCrash is what a crash of the machine leaves of fs: what was synced.
func machineCrash(fs *vfs.MemFS) *vfs.MemFS { return fs.CrashClone(vfs.CrashCloneCfg{}) }

// crash is the files as a crash left them, and the writes answered before.
type crash struct {
	before []int64 // per writer: how many of its writes were answered
	fs     *vfs.MemFS
}

// crashesDuring runs writers goroutines that SET w:<writer>:<i> for i = 0,
// 1, … on s and, n times while they write, notes the writes answered so far
// and then takes the files with take.
func crashesDuring(t *testing.T, s *Store, writers, n int, take func() *vfs.MemFS) []crash {
	t.Helper()
	acked := make([]atomic.Int64, writers)
	stop := make(chan struct{})
	errs := make(chan error, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Appendf(nil, "w:%d:%d", w, i)
				if _, err := s.Set(key, key, SetOptions{}); err != nil {
					errs <- err
					return
				}
				acked[w].Store(int64(i + 1))
			}
		}()
	}
	var crashes []crash
	for range n {
		time.Sleep(time.Duration(2+rand.IntN(20)) * time.Millisecond)
		before := make([]int64, writers)
		for w := range acked {
			before[w] = acked[w].Load()
		}
		crashes = append(crashes, crash{before, take()})
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return crashes
}

// checkCrashes opens the files of each crash and fails the test for every
// write answered before it that is not there.
func checkCrashes(t *testing.T, mode FsyncMode, crashes []crash) {
	t.Helper()
	var total int
	for i, cr := range crashes {
		c := openOn(t, cr.fs, mode)
		var lost, n int
		for w, answered := range cr.before {
			for i := range answered {
				n++
				key := fmt.Sprintf("w:%d:%d", w, i)
				if v, ok := getOn(t, c, key); !ok || v != key {
					lost++
				}
			}
		}
		if lost != 0 {
			t.Errorf("crash %d: %d of the %d writes answered before it lost", i, lost, n)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		total += n
	}
	t.Logf("%d crashes, %d writes answered before them in all", len(crashes), total)
	if total == 0 {
		t.Fatal("no write was answered before any crash")
	}
}

// SPEC §6: in every fsync mode a write is answered only once the OS has it,
// so a crash of the process, which keeps what the OS has, loses no
// acknowledged write. Eight writers SET their own keys; the files are
// taken five times as a SIGKILL would leave them while the writes go on.
func TestProcessCrashLosesNoAcknowledgedWrite(t *testing.T) {
	for _, mode := range fsyncModes {
		t.Run(mode.String(), func(t *testing.T) {
			fs := vfs.NewCrashableMem()
			s := openOn(t, fs, mode)
			checkCrashes(t, mode, crashesDuring(t, s, 8, 5, func() *vfs.MemFS { return processCrash(fs) }))
		})
	}
}

// LOCK-12 across a crash of the process: a fenced write, answered, is
// there after it, and refuses an older fence.
func TestProcessCrashKeepsAFence_LOCK12(t *testing.T) {
	for _, mode := range fsyncModes {
		t.Run(mode.String(), func(t *testing.T) {
			fs := vfs.NewCrashableMem()
			s := openOn(t, fs, mode)
			if _, err := s.Set([]byte("k"), []byte("v"), SetOptions{Fence: 7}); err != nil {
				t.Fatal(err)
			}
			c := openOn(t, processCrash(fs), mode)
			if _, err := c.Set([]byte("k"), []byte("late"), SetOptions{Fence: 6}); !errors.Is(err, ErrFenced) {
				t.Errorf("after the crash, SET k late FENCE 6 = %v; want ErrFenced", err)
			}
			if v, ok := getOn(t, c, "k"); !ok || v != "v" {
				t.Errorf("after the crash, k = %q, %v; want the fenced write %q", v, ok, "v")
			}
		})
	}
}

// A write in FsyncNo or FsyncEverysec is handed to the OS, not fsynced:
// Sync fsyncs every write answered before it, even while other writers
// keep writing, though the fsync it causes may be made by any of their
// commits (see fsyncWAL). Eight Syncs in a stream of writes, each
// followed by a crash of the machine.
func TestSyncCoversWritesAnsweredBeforeIt(t *testing.T) {
	for _, mode := range []FsyncMode{FsyncEverysec, FsyncNo} {
		t.Run(mode.String(), func(t *testing.T) {
			fs := vfs.NewCrashableMem()
			s := openOn(t, fs, mode)
			checkCrashes(t, mode, crashesDuring(t, s, 4, 8, func() *vfs.MemFS {
				if err := s.Sync(); err != nil {
					t.Error(err)
				}
				return machineCrash(fs)
			}))
		})
	}
}

// walCloses records, for each WAL file closed, how many of the bytes
// written to it were not synced when it was closed.
type walCloses struct {
	mu       sync.Mutex
	unsynced []int64
}

func (w *walCloses) watch(f vfs.File) vfs.File { return &watchedWAL{File: f, closes: w} }

func (w *walCloses) list() []int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]int64(nil), w.unsynced...)
}

type watchedWAL struct {
	vfs.File
	closes          *walCloses
	written, synced atomic.Int64
}

func (f *watchedWAL) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	f.written.Add(int64(n))
	return n, err
}

func (f *watchedWAL) Sync() error { return f.sync(f.File.Sync) }

func (f *watchedWAL) SyncData() error { return f.sync(f.File.SyncData) }

// sync runs sync and, if it succeeds, marks what was written before it as
// synced.
func (f *watchedWAL) sync(sync func() error) error {
	n := f.written.Load()
	err := sync()
	if err == nil {
		f.synced.Store(n)
	}
	return err
}

func (f *watchedWAL) Close() error {
	f.closes.mu.Lock()
	f.closes.unsynced = append(f.closes.unsynced, f.written.Load()-f.synced.Load())
	f.closes.mu.Unlock()
	return f.File.Close()
}

// Pebble fsyncs a WAL it closes, when it switches to a new one, so that
// after a crash of the machine only the last WAL can have an unclean tail;
// that fsync must stay one in every mode, though a commit's sync is not.
func TestClosedWALIsFsynced(t *testing.T) {
	for _, mode := range fsyncModes {
		t.Run(mode.String(), func(t *testing.T) {
			var closes walCloses
			fs := walWrapper{FS: vfs.NewMem(), wrap: closes.watch}
			s, err := Open("db", Options{FS: fs, Fsync: mode, Logger: quietLogger()})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 100 {
				s.set(t, fmt.Sprint("k", i), "v")
			}
			if err := s.db.Flush(); err != nil { // a new memtable, and a new WAL
				t.Fatal(err)
			}
			s.set(t, "after", "v")
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			closed := closes.list()
			if len(closed) < 2 {
				t.Fatalf("%d WALs closed; want the one switched from, and the last", len(closed))
			}
			for i, n := range closed {
				if n != 0 {
					t.Errorf("WAL %d of %d closed with %d bytes not fsynced", i+1, len(closed), n)
				}
			}
		})
	}
}

// countedWAL counts the writes made to a WAL file.
type countedWAL struct {
	vfs.File
	writes *atomic.Int64
}

func (f countedWAL) Write(p []byte) (int, error) {
	f.writes.Add(1)
	return f.File.Write(p)
}

func (f countedWAL) WriteAt(p []byte, off int64) (int, error) {
	f.writes.Add(1)
	return f.File.WriteAt(p, off)
}

// SPEC §6: writers on connections served in the same turn share the WAL
// write (and with FsyncAlways the fsync) that makes their commands
// durable, as Redis's event loop writes its AOF once a turn: each settles
// only after the others ready to run have committed, and none syncs again
// what a sync already covered. On one P, eight writers' SETs need about a
// WAL write for every eight; each asking its own sync would be one a SET.
func TestConcurrentWritersShareWALWrites(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, mode := range fsyncModes {
		t.Run(mode.String(), func(t *testing.T) {
			var writes atomic.Int64
			s := openOn(t, walWrapper{FS: vfs.NewMem(), wrap: func(f vfs.File) vfs.File { return countedWAL{f, &writes} }}, mode)
			const writers, each = 8, 200
			var wg sync.WaitGroup
			start := writes.Load()
			for w := range writers {
				wg.Go(func() {
					for i := range each {
						key := fmt.Appendf(nil, "w:%d:%d", w, i)
						if _, err := s.Set(key, key, SetOptions{}); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			n := writes.Load() - start
			t.Logf("%d WAL writes for %d SETs", n, writers*each)
			if n > writers*each/3 {
				t.Fatalf("%d WAL writes for %d SETs of %d concurrent writers: they do not share them", n, writers*each, writers)
			}
			for w := range writers {
				key := fmt.Sprintf("w:%d:%d", w, each-1)
				if v, ok := getOn(t, s, key); !ok || v != key {
					t.Fatalf("GET %s = %q, %v", key, v, ok)
				}
			}
		})
	}
}

// SPEC §6: an EXEC whose WATCH a write broke answers only once that write
// is in the WAL's hands, as a GET that saw it would (see
// TestReadWaitsForTheWriteItSees): else a client could act on a write that
// a crash of the process then takes back.
func TestBrokenWatchWaitsForTheWriteThatBrokeIt(t *testing.T) {
	for _, mode := range fsyncModes {
		t.Run(mode.String(), func(t *testing.T) {
			s, gate := openGated(t, mode)
			var w Watch
			if err := s.Watch(&w, []byte("k")); err != nil {
				t.Fatal(err)
			}
			gate.close()
			wrote := make(chan error, 1)
			go func() {
				_, err := s.Set([]byte("k"), []byte("v"), SetOptions{})
				wrote <- err
			}()
			waitHeld(t, gate) // a WAL write is held: the SET's, or one it queues behind
			// The SET has broken the watch and its commit is counted.
			for !w.dirty.Load() || s.unsettled.committing.Load() != 0 {
				time.Sleep(time.Millisecond)
			}
			ran := make(chan bool, 1)
			go func() {
				r, err := s.Tx(&w, func(*Store) {})
				if err != nil {
					t.Error(err)
				}
				ran <- r
			}()
			select {
			case <-ran:
				t.Fatal("EXEC answered before the SET that broke its WATCH was in the WAL's hands")
			case <-time.After(200 * time.Millisecond):
			}
			gate.open()
			if err := <-wrote; err != nil {
				t.Fatal(err)
			}
			if <-ran {
				t.Fatal("EXEC ran with a broken WATCH")
			}
		})
	}
}
