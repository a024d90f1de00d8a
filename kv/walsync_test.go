package kv

import (
	"errors"
	"fmt"
	"math/rand/v2"
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

// writers runs n goroutines that SET w:<writer>:<i> for i = 0, 1, … until
// stop is closed; acked[w] is one more than the last i answered OK.
func writers(t *testing.T, s *Store, n int, stop <-chan struct{}) (acked []atomic.Int64, wait func()) {
	acked = make([]atomic.Int64, n)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for w := range n {
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
	return acked, func() {
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
}

// missing counts the writes of snapshot (acked counts per writer) that c
// does not have.
func missing(t *testing.T, c *Store, snapshot []int64) (lost, total int) {
	t.Helper()
	for w, n := range snapshot {
		for i := range n {
			total++
			key := fmt.Sprintf("w:%d:%d", w, i)
			if v, ok := getOn(t, c, key); !ok || v != key {
				lost++
			}
		}
	}
	return lost, total
}

// crash is the files as a crash left them, and the writes answered before.
type crash struct {
	before []int64 // acked counts per writer
	fs     *vfs.MemFS
}

func snapshot(acked []atomic.Int64) []int64 {
	out := make([]int64, len(acked))
	for i := range acked {
		out[i] = acked[i].Load()
	}
	return out
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
			stop := make(chan struct{})
			acked, wait := writers(t, s, 8, stop)
			var crashes []crash
			for range 5 {
				time.Sleep(time.Duration(5+rand.IntN(20)) * time.Millisecond)
				before := snapshot(acked)
				crashes = append(crashes, crash{before, processCrash(fs)})
			}
			close(stop)
			wait()
			for i, cr := range crashes {
				c := openOn(t, cr.fs, mode)
				lost, total := missing(t, c, cr.before)
				t.Logf("crash %d: %d writes acknowledged before it, %d lost", i, total, lost)
				if lost != 0 {
					t.Errorf("crash %d: %d of %d acknowledged writes lost in a crash of the process", i, lost, total)
				}
				if err := c.Close(); err != nil {
					t.Fatal(err)
				}
			}
			if last := crashes[len(crashes)-1].before; last[0] == 0 {
				t.Fatalf("writer 0 had no write answered before the last crash: %v", last)
			}
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
			stop := make(chan struct{})
			acked, wait := writers(t, s, 4, stop)
			var crashes []crash
			for range 8 {
				time.Sleep(time.Duration(1+rand.IntN(10)) * time.Millisecond)
				before := snapshot(acked)
				if err := s.Sync(); err != nil {
					t.Fatal(err)
				}
				crashes = append(crashes, crash{before, machineCrash(fs)})
			}
			close(stop)
			wait()
			var total int
			for i, cr := range crashes {
				c := openOn(t, cr.fs, mode)
				lost, n := missing(t, c, cr.before)
				total += n
				if lost != 0 {
					t.Errorf("crash %d after Sync: %d of %d writes answered before the Sync lost", i, lost, n)
				}
				if err := c.Close(); err != nil {
					t.Fatal(err)
				}
			}
			if total == 0 {
				t.Fatal("no write was answered before any Sync")
			}
		})
	}
}

// walCloseWatcher wraps an FS and records, for each WAL file closed, how
// many of the bytes written to it were not synced when it was closed.
type walCloseWatcher struct {
	vfs.FS
	mu       sync.Mutex
	unsynced []int64
}

func (fs *walCloseWatcher) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil || !isWAL(name) {
		return f, err
	}
	return &watchedWAL{File: f, fs: fs}, nil
}

func (fs *walCloseWatcher) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, c)
	return fs.wrap(name, f, err)
}

func (fs *walCloseWatcher) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, c)
	return fs.wrap(newname, f, err)
}

func (fs *walCloseWatcher) closed() []int64 {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return append([]int64(nil), fs.unsynced...)
}

type watchedWAL struct {
	vfs.File
	fs              *walCloseWatcher
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
	f.fs.mu.Lock()
	f.fs.unsynced = append(f.fs.unsynced, f.written.Load()-f.synced.Load())
	f.fs.mu.Unlock()
	return f.File.Close()
}

// Pebble fsyncs a WAL it closes, when it switches to a new one, so that
// after a crash of the machine only the last WAL can have an unclean tail;
// that fsync must stay one in every mode, though a commit's sync is not.
func TestClosedWALIsFsynced(t *testing.T) {
	for _, mode := range fsyncModes {
		t.Run(mode.String(), func(t *testing.T) {
			fs := &walCloseWatcher{FS: vfs.NewMem()}
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
			closed := fs.closed()
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
