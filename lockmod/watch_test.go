package lockmod

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// watch watches (lock, key) from fence and counts its wakes.
func (h *harness) watch(lock, key string, fence uint64) (*Watcher, *atomic.Int32) {
	var wakes atomic.Int32
	return h.m.Watch(lock, key, fence, func() { wakes.Add(1) }), &wakes
}

// mustAnswer insists that w is answered, with its one wake, and returns
// its answer.
func mustAnswer(t *testing.T, w *Watcher, wakes *atomic.Int32) (KeyInfo, bool) {
	t.Helper()
	if !w.Answered() {
		t.Fatal("watcher still waits")
	}
	if n := wakes.Load(); n != 1 {
		t.Fatalf("watcher woken %d times, want once", n)
	}
	info, ok, err := w.Result()
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	return info, ok
}

func mustWaitWatch(t *testing.T, w *Watcher) {
	t.Helper()
	if w.Answered() {
		info, ok, err := w.Result()
		t.Fatalf("watcher answered %+v %v %v, want it to wait", info, ok, err)
	}
}

func watching(m *Manager) int64 { return m.Stats().Watchers }

// LOCK-17: a watcher is answered in the step that changes the key's newest
// lease — a grant, a release, an expiry, a revoke — with the key's state
// as that step leaves it.
func TestLOCK17_WatchAnsweredByEveryChange(t *testing.T) {
	t.Run("grant", func(t *testing.T) {
		h := newHarness(t, Config{})
		w, wakes := h.watch("l", "k", 0)
		mustWaitWatch(t, w)
		g := h.granted("l", "k", "a", ttl(5*sec), owner("A"))
		info, ok := mustAnswer(t, w, wakes)
		if !ok || info.Fence != g.Fence || info.Owner != "A" || info.TTL != 5*sec || info.Holders != 1 {
			t.Fatalf("answer %+v %v, want A's lease", info, ok)
		}
	})
	t.Run("release grants the next: one change", func(t *testing.T) {
		h := newHarness(t, Config{})
		a := h.granted("l", "k", "a", owner("A"))
		tb := h.hold("l", "k", "b", owner("B"))
		w, wakes := h.watch("l", "k", a.Fence)
		mustWaitWatch(t, w)
		if err := h.m.Release(a.LeaseID()); err != nil {
			t.Fatal(err)
		}
		b := mustGrant(t, tb)
		info, ok := mustAnswer(t, w, wakes)
		if !ok || info.Fence != b.Fence || info.Owner != "B" {
			t.Fatalf("answer %+v %v, want B's lease (fence %d), not a free key between", info, ok, b.Fence)
		}
	})
	t.Run("expiry", func(t *testing.T) {
		h := newHarness(t, Config{})
		a := h.granted("l", "k", "a", ttl(2*sec))
		w, wakes := h.watch("l", "k", a.Fence)
		h.advance(2*sec - 1)
		mustWaitWatch(t, w)
		h.advance(1) // the clock's timer ends the lease, unasked
		if info, ok := mustAnswer(t, w, wakes); ok {
			t.Fatalf("answer %+v, want free (null)", info)
		}
	})
	t.Run("revoke", func(t *testing.T) {
		h := newHarness(t, Config{})
		a := h.granted("l", "k", "a")
		w, wakes := h.watch("l", "k", a.Fence)
		h.m.Revoke("l", "k")
		if info, ok := mustAnswer(t, w, wakes); ok {
			t.Fatalf("answer %+v, want free", info)
		}
	})
	t.Run("maxhold", func(t *testing.T) {
		h := newHarness(t, Config{})
		a := h.granted("l", "k", "a", maxHold(sec), inProcess())
		w, wakes := h.watch("l", "k", a.Fence)
		h.advance(sec)
		if info, ok := mustAnswer(t, w, wakes); ok {
			t.Fatalf("answer %+v, want free", info)
		}
	})
	t.Run("a reader that is not the newest leaves: no change", func(t *testing.T) {
		h := newHarness(t, Config{})
		r1 := h.granted("l", "k", "r1", shared())
		r2 := h.granted("l", "k", "r2", shared())
		w, wakes := h.watch("l", "k", r2.Fence)
		if err := h.m.Release(r1.LeaseID()); err != nil {
			t.Fatal(err)
		}
		mustWaitWatch(t, w)
		if err := h.m.Release(r2.LeaseID()); err != nil {
			t.Fatal(err)
		}
		if info, ok := mustAnswer(t, w, wakes); ok {
			t.Fatalf("answer %+v, want free", info)
		}
	})
	t.Run("a waiter joining is no change", func(t *testing.T) {
		h := newHarness(t, Config{})
		a := h.granted("l", "k", "a")
		w, _ := h.watch("l", "k", a.Fence)
		h.hold("l", "k", "b", wait(sec))
		h.advance(sec) // its WAIT runs out; its place lingers, then goes
		h.advance(2 * sec)
		mustWaitWatch(t, w)
		w.Stop()
	})
}

// SPEC §3: FENCE f other than the newest lease's answers at once; 0 is
// "no live lease"; a watcher of another key is not answered.
func TestSPEC3_WatchFence(t *testing.T) {
	h := newHarness(t, Config{})
	if w, _ := h.watch("l", "k", 7); !w.Answered() {
		t.Fatal("FENCE 7 on a free key waits, want the state at once")
	} else if _, ok, err := w.Result(); ok || err != nil {
		t.Fatalf("free key: %v %v, want null", ok, err)
	}
	a := h.granted("l", "k", "a", owner("A"))
	w, wakes := h.watch("l", "k", 0)
	if !w.Answered() {
		t.Fatal("FENCE 0 on a held key waits")
	}
	if info, ok, err := w.Result(); err != nil || !ok || info.Fence != a.Fence || wakes.Load() != 0 {
		t.Fatalf("FENCE 0 on a held key: %+v %v %v (wakes %d), want A at once and no wake", info, ok, err, wakes.Load())
	}
	other, _ := h.watch("l", "other", 0)
	mine, _ := h.watch("l", "k", a.Fence)
	h.granted("l", "other", "o")
	mustWaitWatch(t, mine)
	if !other.Answered() {
		t.Fatal("watcher of other not answered by its grant")
	}
	mine.Stop()
	if n := watching(h.m); n != 0 {
		t.Fatalf("%d watchers left", n)
	}
}

// SPEC §3 TIMEOUT: Stop answers the state as it is then, its fence still
// the one waited on, and leaves no watcher behind.
func TestSPEC3_WatchStop(t *testing.T) {
	h := newHarness(t, Config{})
	a := h.granted("l", "k", "a", owner("A"))
	w, wakes := h.watch("l", "k", a.Fence)
	if n := watching(h.m); n != 1 {
		t.Fatalf("%d watchers, want 1", n)
	}
	info, ok, err := w.Stop()
	if err != nil || !ok || info.Fence != a.Fence || info.Owner != "A" {
		t.Fatalf("stopped: %+v %v %v, want A's lease", info, ok, err)
	}
	h.m.Revoke("l", "k")
	if wakes.Load() != 0 || watching(h.m) != 0 {
		t.Fatalf("a stopped watcher was woken (%d) or kept (%d)", wakes.Load(), watching(h.m))
	}
	// Stop after the answer returns the answer.
	w, wakes = h.watch("l", "k", 0)
	b := h.granted("l", "k", "b")
	if info, _, _ := w.Stop(); info.Fence != b.Fence || wakes.Load() != 1 {
		t.Fatalf("stop after the grant: %+v, want B", info)
	}
	// Many watchers leave in any order.
	var ws []*Watcher
	for range 100 {
		w, _ := h.watch("l", "k", b.Fence)
		ws = append(ws, w)
	}
	for i := range ws {
		ws[(i*37)%len(ws)].Stop()
	}
	if n := watching(h.m); n != 0 {
		t.Fatalf("%d watchers left", n)
	}
	h.m.mu.Lock()
	sets := len(h.m.watchers)
	h.m.mu.Unlock()
	if sets != 0 {
		t.Fatalf("%d watch sets left", sets)
	}
}

// SPEC §3: a node that stops leading answers its watchers at once, free;
// a store that closes answers them ErrClosed.
func TestSPEC3_WatchPauseAndClose(t *testing.T) {
	h := newHarness(t, Config{})
	a := h.granted("l", "k", "a")
	w, wakes := h.watch("l", "k", a.Fence)
	h.m.Pause()
	if info, ok := mustAnswer(t, w, wakes); ok {
		t.Fatalf("after Pause: %+v, want free", info)
	}
	if w, _ := h.watch("l", "k", 0); !w.Answered() {
		t.Fatal("a paused Manager keeps a watcher")
	} else if _, _, err := w.Result(); !errors.Is(err, ErrPaused) {
		t.Fatalf("watch while paused: %v", err)
	}
	h.m.Resume(2)
	w, wakes = h.watch("l", "k", 0)
	h.m.Close()
	if !w.Answered() || wakes.Load() != 1 {
		t.Fatal("Close left a watcher waiting")
	}
	if _, _, err := w.Result(); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

// 10,000 watchers on one key cost memory and nothing else until the key
// changes: no goroutine and no timer of their own, and a change answers
// them all with one state.
func TestWatchersCostMemoryNotCPU(t *testing.T) {
	h := newHarness(t, Config{})
	a := h.granted("l", "k", "a")
	const n = 10000
	goroutines := runtime.NumGoroutine()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var woken atomic.Int32
	ws := make([]*Watcher, n)
	for i := range ws {
		ws[i] = h.m.Watch("l", "k", a.Fence, func() { woken.Add(1) })
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	// More goroutines would be the watchers' (an earlier test's may end
	// meanwhile: fewer is no failure).
	if g := runtime.NumGoroutine(); g > goroutines {
		t.Fatalf("%d goroutines with %d watchers, %d before", g, n, goroutines)
	}
	h.m.mu.Lock()
	events := h.m.events.len()
	h.m.mu.Unlock()
	if events != 1 { // A's deadline, nothing of theirs
		t.Fatalf("%d events in the heap with %d watchers, want A's deadline alone", events, n)
	}
	t.Logf("%d watchers on one key: %d bytes each", n, (after.HeapAlloc-before.HeapAlloc)/n)
	if _, err := h.m.Renew(a.LeaseID(), 0); err != nil { // no change: nobody answered
		t.Fatal(err)
	}
	if woken.Load() != 0 {
		t.Fatal("a renewal woke watchers")
	}
	h.m.Revoke("l", "k")
	if woken.Load() != n {
		t.Fatalf("%d of %d watchers woken", woken.Load(), n)
	}
	first := ws[0].answer
	for _, w := range ws {
		if w.answer != first {
			t.Fatal("watchers answered with a state each, want one shared")
		}
	}
}

// BenchmarkWatchersIdle is the cost of the lock module's work beside
// 10,000 watchers of one key that does not change: the same as without
// them.
func BenchmarkWatchersIdle(b *testing.B) {
	for _, n := range []int{0, 10000} {
		b.Run(strconv.Itoa(n)+"-watchers", func(b *testing.B) {
			m := New(Config{})
			defer m.Close()
			g, _ := m.Hold(HoldRequest{Lock: "l", Key: "watched", ReqID: "w"}).Result()
			for range n {
				m.Watch("l", "watched", g.Fence, func() {})
			}
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				g, err := m.Hold(HoldRequest{Lock: "l", Key: "other", ReqID: strconv.Itoa(i)}).Result()
				if err != nil {
					b.Fatal(err)
				}
				m.Release(g.LeaseID())
			}
		})
	}
}

// LOCK-17, at random: after every step — holds plain, shared and with a
// LIMIT, releases, revokes, waits that run out, expiries — every watcher
// still waiting waits on its key's newest fence (no change missed), and
// every watcher answered was answered with a newest fence other than the
// one it watched, and, when the operation was one step of the store, with
// the key's state as that step left it.
func TestLOCK17_WatchersNeverMissAChange(t *testing.T) {
	answered := 0
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 17))
		h := newHarness(t, Config{})
		keys := []string{"a", "b", "c"}
		type watchedKey struct {
			w     *Watcher
			key   string
			fence uint64
		}
		var waiting []watchedKey
		var leases []Grant
		newest := func(key string) uint64 {
			info, ok := h.m.Info("l", key)
			if !ok {
				return 0
			}
			return info.Fence
		}
		for step := range 400 {
			key := keys[rng.IntN(len(keys))]
			op := rng.IntN(7)
			switch op {
			case 0, 1:
				w := h.m.Watch("l", key, newest(key), func() {})
				if w.Answered() {
					t.Fatalf("seed %d step %d: a watch of the newest fence answered at once", seed, step)
				}
				waiting = append(waiting, watchedKey{w, key, newest(key)})
			case 2:
				var o []opt
				if key == "b" {
					o = append(o, shared())
				}
				if key == "c" {
					o = append(o, func(r *HoldRequest) { r.Limit = 2 })
				}
				o = append(o, ttl(time.Duration(1+rng.IntN(3))*sec), wait(time.Duration(rng.IntN(3))*sec))
				tk := h.hold("l", key, fmt.Sprint(seed, "-", step), o...)
				if isDone(tk) {
					if g, err := tk.Result(); err == nil {
						leases = append(leases, g)
					}
				}
			case 3:
				if len(leases) > 0 {
					i := rng.IntN(len(leases))
					h.m.Release(leases[i].LeaseID())
					leases = append(leases[:i], leases[i+1:]...)
				}
			case 4:
				h.m.Revoke("l", key)
			case 5, 6:
				h.advance(time.Duration(rng.IntN(1500)) * ms)
			}
			var still []watchedKey
			for _, ww := range waiting {
				if !ww.w.Answered() {
					if n := newest(ww.key); n != ww.fence {
						t.Fatalf("seed %d step %d: a watcher of %s waits on fence %d, the newest is %d", seed, step, ww.key, ww.fence, n)
					}
					still = append(still, ww)
					continue
				}
				info, ok, err := ww.w.Result()
				got := uint64(0)
				if ok {
					got = info.Fence
				}
				// An advance of the clock may run several steps (leases
				// ending at different instants): the answer is the state
				// after the first that changed the key, maybe not the last.
				oneStep := op < 5
				if err != nil || got == ww.fence || oneStep && got != newest(ww.key) {
					t.Fatalf("seed %d step %d: a watcher of %s on fence %d answered %d (%v), the newest is %d",
						seed, step, ww.key, ww.fence, got, err, newest(ww.key))
				}
				answered++
			}
			waiting = still
		}
		for _, ww := range waiting {
			ww.w.Stop()
		}
		if n := watching(h.m); n != 0 {
			t.Fatalf("seed %d: %d watchers left after Stop", seed, n)
		}
	}
	t.Logf("%d watchers answered by a change", answered)
	if answered < 500 {
		t.Fatalf("only %d watchers answered: the operations hardly changed the keys", answered)
	}
}

// A watcher answered by another step while its Stop waits for the lock
// (the step held it) is stopped with that answer, and the Manager is left
// as it was. Stop once read the gone set's name there, with the lock held
// and due events to run first: a nil dereference that a connection's
// recover turned into a mutex held forever, every later lock call and the
// server's shutdown waiting on it (the cluster torture, stop-leader).
func TestLOCK17_WatchStopAnsweredWhileWaitingForTheLock(t *testing.T) {
	clock := stillClock{NewFakeClock(start)}
	m := New(Config{Clock: clock})
	defer func() {
		if m.mu.TryLock() { // not when this test found it left held
			m.mu.Unlock()
			m.Close()
		}
	}()
	a, err := m.Hold(HoldRequest{Lock: "l", Key: "k", ReqID: "a", TTL: 10 * sec}).Result()
	if err != nil {
		t.Fatal(err)
	}
	// Another key's lease falls due and stays due (the clock's timers never
	// fire): the Stop below finds events behind, as after a pause.
	if _, err := m.Hold(HoldRequest{Lock: "l", Key: "other", ReqID: "b", TTL: sec}).Result(); err != nil {
		t.Fatal(err)
	}
	w := m.Watch("l", "k", a.Fence, func() {})
	if w.Answered() {
		t.Fatal("the watcher was answered at once")
	}
	clock.Advance(2 * sec)

	m.mu.Lock() // the step that will answer it
	type stopped struct {
		info     KeyInfo
		err      error
		panicked any
	}
	done := make(chan stopped, 1)
	go func() {
		var s stopped
		defer func() {
			s.panicked = recover()
			done <- s
		}()
		s.info, _, s.err = w.Stop()
	}()
	for !strings.Contains(allStacks(), "lockmod.(*Manager).beginFocused") {
		runtime.Gosched()
	}
	m.answerAll(w.set, &watchAnswer{info: KeyInfo{Fence: a.Fence}, present: true})
	m.mu.Unlock()

	s := <-done
	if s.panicked != nil || s.err != nil || s.info.Fence != a.Fence {
		t.Fatalf("Stop: panicked %v, err %v, %+v; want the answer given meanwhile", s.panicked, s.err, s.info)
	}
	info := make(chan bool, 1)
	go func() { _, ok := m.Info("l", "k"); info <- ok }()
	select {
	case ok := <-info:
		if !ok {
			t.Fatal("after the Stop, the key's lease is gone")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("after the Stop, Info waits for the Manager's lock: it was left held")
	}
}

// allStacks is every goroutine's stack.
func allStacks() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}
