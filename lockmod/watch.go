package lockmod

// Watching a key (SPEC §3 LOCK.WATCH, §12, LOCK-17): a watcher waits until
// the key's newest live lease has a fence other than the one it names, and
// is answered with the key's state at that moment. It holds no place in
// line and costs no goroutine, timer or clock reading while it waits: it is
// an entry in its key's watch set, and the change that answers it is found
// where the key's newest lease changes, grant and end. Its TIMEOUT is the
// caller's to keep (resp makes it the connection's read deadline).

import "sync/atomic"

// Watcher is one LOCK.WATCH waiting on a key. Its answer is set under the
// Manager's lock; Answered may be read at any time.
type Watcher struct {
	m     *Manager
	set   *watchSet // while it waits; nil once answered or stopped
	index int       // its place in set.list
	wake  func()

	answered atomic.Bool
	answer   *watchAnswer // set before answered
}

// watchAnswer is what every watcher of one key answered at one moment
// shares: the key's state once, not once a watcher.
type watchAnswer struct {
	info    KeyInfo
	present bool // false: the key is free and nobody waits (null)
	err     error
}

// watchSet is the watchers of one key. All of them wait on the fence the
// key's newest live lease had when the set was made: a watcher that named
// another was answered at once, and the first change of the newest lease
// answers them all.
type watchSet struct {
	name    string // the key's name (see keyName), the map's own copy
	fence   uint64 // its newest live lease's fence while they wait; 0: none
	list    []*Watcher
	touched bool // in Manager.touched: its key changed in this step
}

// Watch answers at once with the key's state when its newest live lease's
// fence is not fence (0: no live lease); otherwise it waits, and wake is
// called once (without the Manager's lock held, never by Watch itself)
// the moment it is answered: within the step that changes the key's newest
// lease, a grant, a release, an expiry or a revoke (LOCK-17), or when the
// Manager is paused (answered "free": a node that stopped leading vouches
// for no lease) or closed (ErrClosed). Every Watcher that Watch returns
// unanswered must end with its answer read or Stop called.
func (m *Manager) Watch(lock, key string, fence uint64, wake func()) *Watcher {
	w := &Watcher{m: m, wake: wake}
	now, behind, err := m.beginFocused()
	if err != nil {
		w.answer = &watchAnswer{err: err}
		w.answered.Store(true)
		return w
	}
	var buf [128]byte
	name := view(keyName(buf[:0], lock, key))
	if behind && m.catchUp(now, name, nil) != nil {
		w.answer = &watchAnswer{err: m.refusalLocked()}
		w.answered.Store(true)
		return w
	}
	defer m.finish(now)
	m.tell(now) // the steps catchUp ran, so that a set's fence is the newest's
	newest := uint64(0)
	if r := m.holder(name); r != nil {
		newest = r.fence
	}
	if newest != fence {
		info, ok := m.infoOf(name, now)
		w.answer = &watchAnswer{info: info, present: ok}
		w.answered.Store(true)
		return w
	}
	ws := m.watchers[name]
	if ws == nil {
		ws = &watchSet{name: string(name), fence: newest}
		m.watchers[ws.name] = ws
	}
	w.set, w.index = ws, len(ws.list)
	ws.list = append(ws.list, w)
	m.watching++
	return w
}

// refusalLocked is refusal for a caller whose advance found the Manager
// closed or paused and let the mutex go.
func (m *Manager) refusalLocked() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.refusal()
}

// Answered reports whether the watcher has its answer.
func (w *Watcher) Answered() bool { return w.answered.Load() }

// Result is the answer of an answered watcher: the key's state as Info
// gives it (present false: free, nobody waits), or why there is none
// (ErrClosed, ErrPaused). It must be called only once Answered is true.
func (w *Watcher) Result() (KeyInfo, bool, error) {
	a := w.answer
	return a.info, a.present, a.err
}

// Stop ends the watch, as its TIMEOUT running out or its client going away
// does, and returns its answer: the one it had if it was answered, else
// the key's state now (its newest lease still the one it waited on). A
// wake that raced with Stop may still come after it.
func (w *Watcher) Stop() (KeyInfo, bool, error) {
	if w.Answered() {
		return w.Result()
	}
	m := w.m
	now, behind, err := m.beginFocused()
	if err != nil {
		// Pause and Close answer every watcher before they refuse calls.
		return w.Result()
	}
	if w.set == nil {
		// Answered between the check above and the lock, by the step
		// that held it: the set is gone, and that answer is the one.
		m.finish(now)
		return w.Result()
	}
	if behind && m.catchUp(now, w.set.name, nil) != nil {
		return w.Result()
	}
	defer m.finish(now)
	m.tell(now)
	if w.Answered() {
		return w.Result()
	}
	name := w.set.name
	m.unwatch(w)
	info, ok := m.infoOf(name, now)
	w.answer = &watchAnswer{info: info, present: ok}
	w.answered.Store(true)
	return w.Result()
}

// unwatch takes waiting watcher w out of its set.
func (m *Manager) unwatch(w *Watcher) {
	ws := w.set
	last := len(ws.list) - 1
	moved := ws.list[last]
	ws.list[w.index], moved.index = moved, w.index
	ws.list[last] = nil
	ws.list = ws.list[:last]
	w.set = nil
	m.watching--
	if len(ws.list) == 0 && !ws.touched {
		delete(m.watchers, ws.name)
	}
}

// touch notes that the newest live lease of the key named name may have
// changed in this step; tell answers its watchers once the step is done,
// so that they see the key as the step leaves it (a release and the grant
// to the next in line are one change, LOCK-06). Called by grant and end.
func (m *Manager) touch(name string) {
	if len(m.watchers) == 0 {
		return
	}
	if ws := m.watchers[name]; ws != nil && !ws.touched {
		ws.touched = true
		m.touched = append(m.touched, ws)
	}
}

// tell answers the watchers of every key touched in this step whose newest
// live lease is no longer the one they wait on, with the key's state at
// now, and queues their wakes for unlock (LOCK-17). A step cannot take a
// key from a lease back to the same one (fences are never reused, LOCK-02),
// nor from free to held and free again (a lease granted in a step lasts at
// least its ttl), so comparing fences at the end of a step misses no change.
func (m *Manager) tell(now instant) {
	for i, ws := range m.touched {
		m.touched[i] = nil
		ws.touched = false
		newest := uint64(0)
		if r := m.holder(ws.name); r != nil {
			newest = r.fence
		}
		if newest == ws.fence {
			if len(ws.list) == 0 {
				delete(m.watchers, ws.name)
			}
			continue
		}
		info, ok := m.infoOf(ws.name, now)
		m.answerAll(ws, &watchAnswer{info: info, present: ok})
	}
	m.touched = m.touched[:0]
}

// answerAll answers every watcher of ws with a and forgets the set.
func (m *Manager) answerAll(ws *watchSet, a *watchAnswer) {
	for _, w := range ws.list {
		w.set = nil
		w.answer = a
		w.answered.Store(true)
		if w.wake != nil {
			m.woken = append(m.woken, w.wake)
		}
	}
	m.watching -= len(ws.list)
	ws.list = nil
	delete(m.watchers, ws.name)
}

// dropWatchers answers every watcher at once: with the key free when the
// node stops leading (err nil: it vouches for no lease, SPEC §3), or with
// err. The caller holds m.mu and unlocks with unlock.
func (m *Manager) dropWatchers(err error) {
	a := &watchAnswer{err: err}
	for _, ws := range m.watchers {
		ws.touched = false
		m.answerAll(ws, a)
	}
	clear(m.touched)
	m.touched = m.touched[:0]
}

// unlock lets the mutex go once the watchers of what this step changed
// are answered, then wakes them.
func (m *Manager) unlock() {
	if len(m.touched) > 0 {
		m.tell(m.now())
	}
	woken := m.woken
	m.woken = nil
	m.mu.Unlock()
	for _, wake := range woken {
		wake()
	}
}
