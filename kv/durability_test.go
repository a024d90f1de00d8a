package kv

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// LOCK-10, LOCK-02: a new directory starts at epoch 1, and each open's bump
// is larger than the last.
func TestEpoch_LOCK10(t *testing.T) {
	dir := t.TempDir()
	for want := uint64(1); want <= 3; want++ {
		s, err := Open(dir, Options{Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		if s.Epoch() != 0 {
			t.Errorf("Epoch before BumpEpoch = %d; want 0", s.Epoch())
		}
		got, err := s.BumpEpoch()
		if err != nil || got != want {
			t.Fatalf("BumpEpoch = %d, %v; want %d", got, err, want)
		}
		if s.Epoch() != want {
			t.Errorf("Epoch = %d; want %d", s.Epoch(), want)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// openOn opens a Store on fs, closing it at the end of the test.
func openOn(t *testing.T, fs vfs.FS, mode FsyncMode) *Store {
	t.Helper()
	s, err := Open("db", Options{FS: fs, Fsync: mode, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !s.closed.Load() {
			_ = s.Close()
		}
	})
	return s
}

// LOCK-10, LOCK-02: the epoch is synced before BumpEpoch returns, so after a
// crash (only what was synced survives) the next epoch is still larger than
// every epoch handed out before the crash, whatever unsynced data survives
// with it.
func TestEpochSurvivesCrash_LOCK02(t *testing.T) {
	fs := vfs.NewCrashableMem()
	s := openOn(t, fs, FsyncNo)
	var highest uint64
	for range 3 {
		e, err := s.BumpEpoch()
		if err != nil {
			t.Fatal(err)
		}
		highest = e
		s.set(t, "k", fmt.Sprint(e)) // unsynced noise around the epoch
	}

	crashed := fs.CrashClone(vfs.CrashCloneCfg{})
	c := openOn(t, crashed, FsyncNo)
	e, err := c.BumpEpoch()
	if err != nil {
		t.Fatal(err)
	}
	if e <= highest {
		t.Fatalf("epoch after crash = %d; want > %d", e, highest)
	}

	// Crashes that keep some unsynced data must not go backwards either.
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 10 {
		clone := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(101), RNG: rng})
		c := openOn(t, clone, FsyncNo)
		e, err := c.BumpEpoch()
		if err != nil {
			t.Fatal(err)
		}
		if e <= highest {
			t.Fatalf("clone %d: epoch after crash = %d; want > %d", i, e, highest)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func (s *Store) set(t *testing.T, key, value string) {
	t.Helper()
	if _, err := s.Set([]byte(key), []byte(value), SetOptions{}); err != nil {
		t.Fatal(err)
	}
}

func getOn(t *testing.T, s *Store, key string) (string, bool) {
	t.Helper()
	v, ok, err := s.Get([]byte(key))
	if err != nil {
		t.Fatal(err)
	}
	return string(v), ok
}

// TestFsyncModesInACrash: with FsyncNo an acknowledged SET is lost in a
// crash that keeps only synced data; with FsyncAlways it survives; Sync
// makes FsyncNo's writes survive too.
func TestFsyncModesInACrash(t *testing.T) {
	for _, tc := range []struct {
		mode     FsyncMode
		sync     bool
		survives bool
	}{
		{FsyncNo, false, false},
		{FsyncNo, true, true},
		{FsyncAlways, false, true},
	} {
		t.Run(fmt.Sprintf("%v sync=%v", tc.mode, tc.sync), func(t *testing.T) {
			fs := vfs.NewCrashableMem()
			s := openOn(t, fs, tc.mode)
			s.set(t, "k", "acknowledged")
			if tc.sync {
				if err := s.Sync(); err != nil {
					t.Fatal(err)
				}
			}
			c := openOn(t, fs.CrashClone(vfs.CrashCloneCfg{}), tc.mode)
			v, ok := getOn(t, c, "k")
			if ok != tc.survives {
				t.Fatalf("after crash: %q, %v; want exists = %v", v, ok, tc.survives)
			}
		})
	}
}

// TestCloseSyncs: Close leaves nothing unsynced, even with FsyncNo.
func TestCloseSyncs(t *testing.T) {
	fs := vfs.NewCrashableMem()
	s := openOn(t, fs, FsyncNo)
	s.set(t, "k", "v")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	c := openOn(t, fs.CrashClone(vfs.CrashCloneCfg{}), FsyncNo)
	if v, ok := getOn(t, c, "k"); !ok || v != "v" {
		t.Fatalf("after Close and crash: %q, %v", v, ok)
	}
}

// walWrapper is an FS whose WAL files are wrapped by wrap as Pebble makes
// them.
type walWrapper struct {
	vfs.FS
	wrap func(vfs.File) vfs.File
}

func (fs walWrapper) wrapped(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return fs.wrap(f), nil
}

func (fs walWrapper) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, c)
	return fs.wrapped(name, f, err)
}

func (fs walWrapper) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, c)
	return fs.wrapped(newname, f, err)
}

// countedFile counts its syncs.
type countedFile struct {
	vfs.File
	syncs *atomic.Int64
}

func (f *countedFile) Sync() error     { f.syncs.Add(1); return f.File.Sync() }
func (f *countedFile) SyncData() error { f.syncs.Add(1); return f.File.SyncData() }

// TestFsyncAlwaysSharesFsyncs: with FsyncAlways, every write waits for an
// fsync, and concurrent writers share them: 32 writers make far fewer WAL
// fsyncs than writes. On the real disk, where an fsync takes time.
func TestFsyncAlwaysSharesFsyncs(t *testing.T) {
	if testing.Short() {
		t.Skip("writes to the real disk")
	}
	var walSyncs atomic.Int64
	fs := walWrapper{FS: vfs.Default, wrap: func(f vfs.File) vfs.File { return &countedFile{File: f, syncs: &walSyncs} }}
	s, err := Open(t.TempDir(), Options{FS: fs, Fsync: FsyncAlways, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	measure := func(name string, writers, each int) (writes, syncs int64) {
		before := walSyncs.Load()
		concurrently(t, writers, func(w int) error {
			for i := range each {
				key := fmt.Appendf(nil, "%s:%d:%d", name, w, i)
				if _, err := s.Set(key, key, SetOptions{}); err != nil {
					return err
				}
			}
			return nil
		})
		return int64(writers * each), walSyncs.Load() - before
	}

	seqWrites, seqSyncs := measure("alone", 1, 50)
	t.Logf("1 writer: %d writes, %d WAL fsyncs", seqWrites, seqSyncs)
	if seqSyncs < seqWrites {
		t.Errorf("a lone writer made %d fsyncs for %d writes: some write did not wait for its own", seqSyncs, seqWrites)
	}
	writes, syncs := measure("crowd", 32, 25)
	t.Logf("32 writers: %d writes, %d WAL fsyncs (%.1f writes per fsync)", writes, syncs, float64(writes)/float64(syncs))
	if syncs == 0 || syncs >= writes {
		t.Errorf("32 writers: %d fsyncs for %d writes; want fewer fsyncs than writes", syncs, writes)
	}
	if n, _ := s.DBSize(); n != seqWrites+writes {
		t.Errorf("DBSize = %d; want %d", n, seqWrites+writes)
	}
}

// TestFsyncEverysec: with FsyncEverysec an acknowledged write reaches the
// disk within about a second, without anyone asking.
func TestFsyncEverysec(t *testing.T) {
	fs := vfs.NewCrashableMem()
	s := openOn(t, fs, FsyncEverysec)
	s.set(t, "k", "v")
	start := time.Now()
	for {
		c, err := Open("db", Options{FS: fs.CrashClone(vfs.CrashCloneCfg{}), Fsync: FsyncNo, Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		_, ok := getOn(t, c, "k")
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if ok {
			t.Logf("synced after %v", time.Since(start).Round(time.Millisecond))
			return
		}
		if time.Since(start) > 3*everysecInterval {
			t.Fatalf("write not synced after %v", time.Since(start))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestOpenErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Open(file, Options{Logger: quietLogger()})
	if err == nil || !strings.HasPrefix(err.Error(), "open "+file+": ") {
		t.Errorf("Open on a file = %v; want an error starting %q", err, "open "+file+": ")
	}
	dir := t.TempDir()
	s, err := Open(dir, Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s2, err := Open(dir, Options{Logger: quietLogger()}); err == nil {
		s2.Close()
		t.Error("opened the same directory twice")
	}
	if _, err := Open(t.TempDir(), Options{Fsync: FsyncMode(9)}); err == nil {
		t.Error("Open accepted fsync mode 9")
	}
}

func TestParseFsyncMode(t *testing.T) {
	for _, m := range []FsyncMode{FsyncAlways, FsyncEverysec, FsyncNo} {
		got, err := ParseFsyncMode(strings.ToUpper(m.String()))
		if err != nil || got != m {
			t.Errorf("ParseFsyncMode(%q) = %v, %v", m.String(), got, err)
		}
	}
	if _, err := ParseFsyncMode("sometimes"); err == nil {
		t.Error("ParseFsyncMode accepted sometimes")
	}
	if FsyncMode(0) != FsyncEverysec {
		t.Error("the zero FsyncMode is not everysec")
	}
}
