package kv

import (
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// gatedWAL is a WAL file whose writes, once the gate is shut, wait for it
// to open. A write is what hands
// a commit to the OS, before any fsync of it (FsyncAlways) or as all the
// sync there is (the other modes, see storage_walsync.go).
type gatedWAL struct {
	vfs.File
	g *syncGate
}

type syncGate struct {
	mu   sync.Mutex
	shut chan struct{} // nil while open
	held chan struct{} // closed at the first write held
	once sync.Once
}

// waitHeld waits until a write is held at the gate.
func waitHeld(t *testing.T, g *syncGate) {
	t.Helper()
	<-g.held
}

func (g *syncGate) close() {
	g.mu.Lock()
	g.shut = make(chan struct{})
	g.mu.Unlock()
}

func (g *syncGate) open() {
	g.mu.Lock()
	if g.shut != nil {
		close(g.shut)
		g.shut = nil
	}
	g.mu.Unlock()
}

func (g *syncGate) wait() {
	g.mu.Lock()
	shut := g.shut
	g.mu.Unlock()
	if shut != nil {
		g.once.Do(func() { close(g.held) })
		<-shut
	}
}

func (f *gatedWAL) Write(p []byte) (int, error) { f.g.wait(); return f.File.Write(p) }

// openGated opens a store whose WAL writes pass through a gate, open for
// now. Shutting it holds them until it opens again; the test's cleanup
// opens it before the store's Close, which a held write would stall.
func openGated(t *testing.T, mode FsyncMode) (*Store, *syncGate) {
	t.Helper()
	gate := &syncGate{held: make(chan struct{})}
	fs := walWrapper{FS: vfs.NewMem(), wrap: func(f vfs.File) vfs.File { return &gatedWAL{File: f, g: gate} }}
	s := openOn(t, fs, mode)
	t.Cleanup(gate.open)
	return s, gate
}

// LOCK-12, SPEC §6 (--fsync always): a read never answers a value its
// writer's fsync has not yet made durable. Pebble shows a batch to readers
// before its WAL sync is done; a GET that answered it then, and a crash
// before the sync, would have shown a value that never was (the torture
// harness's counters found one). While the writer's fsync is held, the GET
// must not answer; once it ends, the GET answers the new value.
func TestReadWaitsForTheWriteItSees(t *testing.T) {
	for _, mode := range fsyncModes {
		t.Run(mode.String(), func(t *testing.T) {
			s, gate := openGated(t, mode)
			s.set(t, "k", "old")

			gate.close()
			wrote := make(chan error, 1)
			go func() {
				_, err := s.Set([]byte("k"), []byte("new"), SetOptions{})
				wrote <- err
			}()
			waitHeld(t, gate) // the SET's WAL write is held: it is visible in the memtable, not in the OS's hands
			read := make(chan string, 1)
			go func() {
				v, _ := getOn(t, s, "k")
				read <- v
			}()
			select {
			case v := <-read:
				if v == "new" {
					t.Fatalf("GET answered %q while the SET that wrote it was not yet in the WAL's hands", v)
				}
				// "old" is a read ordered before the SET: allowed.
				return
			case <-time.After(200 * time.Millisecond):
			}
			gate.open()
			if err := <-wrote; err != nil {
				t.Fatal(err)
			}
			if v := <-read; v != "new" {
				t.Fatalf("GET after the SET's sync = %q, want new", v)
			}
		})
	}
}

// The review of issue 38: KEYS, SCAN, RANDOMKEY, DBSIZE and LCS read as
// GET does (LOCK-12, SPEC §6): none answers a key, or a count, that a
// write still waiting for its WAL write put there. While the SET's write
// is held, each either answers what was before it or waits; once the
// write is let go, it answers the new key.
func TestWholeKeyspaceReadsWaitForTheWriteTheySee(t *testing.T) {
	reads := map[string]func(s *Store) (sawNew bool, err error){
		"KEYS": func(s *Store) (bool, error) {
			keys, err := s.Keys([]byte("*"))
			return len(keys) == 2, err
		},
		"KEYS one": func(s *Store) (bool, error) {
			keys, err := s.Keys([]byte("new"))
			return len(keys) == 1, err
		},
		"SCAN": func(s *Store) (bool, error) {
			_, keys, err := s.Scan(0, nil, 100, "")
			return len(keys) == 2, err
		},
		"RANDOMKEY": func(s *Store) (bool, error) {
			for range 50 {
				k, _, err := s.RandomKey()
				if err != nil || string(k) == "new" {
					return err == nil, err
				}
			}
			return false, nil
		},
		"DBSIZE": func(s *Store) (bool, error) {
			n, err := s.DBSize()
			return n == 2, err
		},
		"LCS": func(s *Store) (bool, error) {
			r, err := s.LCS([]byte("old"), []byte("new"), false, 0)
			return string(r.Seq) == "v", err
		},
	}
	for name, read := range reads {
		t.Run(name, func(t *testing.T) {
			s, gate := openGated(t, FsyncAlways)
			s.set(t, "old", "v")
			gate.close()
			wrote := make(chan error, 1)
			go func() {
				_, err := s.Set([]byte("new"), []byte("v"), SetOptions{})
				wrote <- err
			}()
			waitHeld(t, gate)
			type answer struct {
				saw bool
				err error
			}
			got := make(chan answer, 1)
			go func() {
				saw, err := read(s)
				got <- answer{saw, err}
			}()
			select {
			case a := <-got:
				if a.saw || a.err != nil {
					t.Fatalf("answered the new key (%v, %v) while the SET that wrote it was not in the WAL's hands", a.saw, a.err)
				}
				return // ordered before the SET: allowed
			case <-time.After(200 * time.Millisecond):
			}
			gate.open()
			if err := <-wrote; err != nil {
				t.Fatal(err)
			}
			if a := <-got; a.err != nil || !a.saw {
				t.Fatalf("after the SET's sync: saw the new key %v, %v; want true", a.saw, a.err)
			}
		})
	}
}
