package lockmod

import (
	"crypto/rand"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/tenure-db/tenure/internal/lockspec"
)

// DefaultLinger is how long a place stays in line after its request left it
// (SPEC §3: one second).
const DefaultLinger = time.Second

// DefaultTTL is the ttl of a HoldRequest that gives none (SPEC §3: 10 s).
const DefaultTTL = lockspec.DefaultTTL

// EpochBumper makes a new epoch durable and returns it. The Manager calls it,
// under its lock, when the per-epoch counter n would reach 2^32 (SPEC §2).
type EpochBumper interface {
	BumpEpoch() (uint64, error)
}

// Config is what New needs.
type Config struct {
	Clock  Clock         // nil: SystemClock()
	Epoch  uint64        // the epoch this open made durable; 0 is taken as 1 (for tests)
	Bumper EpochBumper   // may be nil where the counter never runs out
	Linger time.Duration // <= 0: DefaultLinger
	Rand   io.Reader     // lease id source; nil: crypto/rand (LOCK-04)
	FirstN uint32        // the counter starts here; the first fence is Epoch<<32 + FirstN + 1

	// Observer, if not nil, hears of every grant and every end of a lease
	// (metrics, logs).
	Observer Observer
}

// Stats are the Manager's gauges and counters, for INFO's # Locks section.
type Stats struct {
	Epoch         uint64
	Leases        int64 // live leases
	Waiters       int64 // places in line, lingering ones included
	Watchers      int64 // LOCK.WATCH waiting
	GrantsTotal   uint64
	RenewalsTotal uint64
	ReleasedTotal uint64
	ExpiredTotal  uint64
	RevokedTotal  uint64 // by MAXHOLD or by an admin
	// RevokedTotal split by cause.
	RevokedMaxHoldTotal uint64
	RevokedAdminTotal   uint64
}

// Manager keeps the leases and lines of waiters of one store. All its methods
// are safe for concurrent use; one mutex guards everything, and the clock's
// timer callback takes it like any caller.
type Manager struct {
	mu        sync.Mutex
	clock     Clock
	base      time.Time // instant 0
	bumper    EpochBumper
	lingerFor time.Duration
	rand      io.Reader

	epoch uint64
	n     uint32 // the last n used in this epoch

	// Every request is in the slab; the tables and the event heap name
	// them by ref (see slab, table).
	slab   slab
	keys   table                // hashName(name) -> the key's newest live lease
	states map[string]*keyState // (lock, key) -> its line, LIMIT and live leases, while it needs one (see keyState)
	order  *order               // every (lock, key) held or with a line, for List
	leases table                // leaseID.hash -> live and remembered ended leases (LOCK-04, LOCK-05)
	reqs   table                // hashName(reqid as kept) -> its place, lease or ended lease (LOCK-03)
	events eventQueue           // LOCK-06
	// contested files the live leases whose keys have a line, so that a
	// lagging sweep ends them first (LOCK-06).
	contested contestedHeap
	seed      maphash.Seed
	// hashMask is all ones; tests narrow it to make hashes collide.
	hashMask uint32

	timer    Timer // armed for timerAt, nil if none
	timerAt  instant
	sweeping bool    // the timer's sweep is under way (fire), and arms the next timer when done
	fireFn   func()  // m.fire, made once
	idBuf    leaseID // scratch for reading random bytes without an allocation
	// dueScratch is runDueOf's list of due events, kept for the next.
	dueScratch []*request

	// watchers are the LOCK.WATCH waiting on each key; touched, the sets
	// whose key's newest lease changed in this step; woken, the wakes of
	// watchers answered in it, called once the mutex is let go (watch.go).
	watchers map[string]*watchSet
	touched  []*watchSet
	woken    []func()
	watching int

	// heldInProcess are the Endings of the live leases held in process,
	// told ErrClosed by Close (LOCK-13).
	heldInProcess map[*Ending]struct{}

	waiters int
	live    int // live leases, on every key
	stats   Stats
	closed  bool
	paused  bool          // by Pause, until Resume: every call is refused
	doneCh  chan struct{} // closed at birth: the Done of tickets answered at once

	observer Observer
	sinks    []sinkEntry // lock events' sinks (events.go); nil: no event is built
	sinkSeq  uint64
	trace    func(traceEvent) // tests only

	// sweepStep is DefaultSweepStep; tests and benchmarks change it.
	sweepStep int
	// advanceOnCatchUp (tests only) makes catchUp advance everything, as
	// begin does: the reference a test compares the focused catch-up with.
	advanceOnCatchUp bool
	// betweenSteps, if set (tests only), runs between two steps of a
	// sweep, the timer's or a method's advance, without the lock.
	betweenSteps func()
}

// traceEvent reports a grant or an end to tests, with its store time.
type traceEvent struct {
	grant  bool
	at     instant
	name   string
	reqid  string
	id     leaseID
	fence  uint64
	reason reason
}

// New makes a Manager that holds no lease and no waiter (LOCK-10).
func New(cfg Config) *Manager {
	if cfg.Epoch >= 1<<32 {
		panic(fmt.Sprintf("lockmod: epoch %d does not fit in a fence", cfg.Epoch))
	}
	m := &Manager{
		clock:     cfg.Clock,
		bumper:    cfg.Bumper,
		lingerFor: cfg.Linger,
		rand:      cfg.Rand,
		epoch:     cfg.Epoch,
		n:         cfg.FirstN,
		states:    make(map[string]*keyState),
		watchers:  make(map[string]*watchSet),
		order:     newOrder(),

		heldInProcess: make(map[*Ending]struct{}),
		seed:          maphash.MakeSeed(),
		hashMask:      math.MaxUint32,
		doneCh:        make(chan struct{}),
		observer:      cfg.Observer,
		sweepStep:     DefaultSweepStep,
	}
	m.events.slab = &m.slab
	if m.clock == nil {
		m.clock = SystemClock()
	}
	if m.lingerFor <= 0 {
		m.lingerFor = DefaultLinger
	}
	if m.rand == nil {
		m.rand = rand.Reader
	}
	if m.epoch == 0 {
		m.epoch = 1
	}
	close(m.doneCh)
	m.fireFn = m.fire
	m.base = m.clock.Now()
	return m
}

// Close answers every open waiter ErrClosed, tells every lease held in
// process that it ended (ErrClosed), stops the timer and forgets all
// leases. Every later call fails with ErrClosed (Revoke reports false, Info
// nothing); Stats keeps its counters.
func (m *Manager) Close() {
	m.mu.Lock()
	defer m.unlock()
	if m.closed {
		return
	}
	m.closed = true
	m.dropAll(ErrClosed)
}

// hashName is where the keys and reqs tables file a name or a reqid as kept.
func (m *Manager) hashName(s string) uint32 {
	return uint32(maphash.String(m.seed, s)>>32) & m.hashMask
}

// holder is the newest live lease of the key named name (the largest
// fence), nil if it is free.
func (m *Manager) holder(name string) *request {
	for p := m.keys.find(m.hashName(name)); ; {
		ref := p.next()
		if ref == 0 {
			return nil
		}
		if r := m.slab.get(ref); r.name() == name {
			return r
		}
	}
}

// byReqKey is the request of a reqid as kept (see appendReqKey), nil if
// none is remembered.
func (m *Manager) byReqKey(key string, hexForm bool) *request {
	for p := m.reqs.find(m.hashName(key)); ; {
		ref := p.next()
		if ref == 0 {
			return nil
		}
		if r := m.slab.get(ref); r.hexReqID == hexForm && r.reqKey() == key {
			return r
		}
	}
}

// lease finds a live or remembered lease by id.
func (m *Manager) lease(id leaseID) *request {
	for p := m.leases.find(id.hash()); ; {
		ref := p.next()
		if ref == 0 {
			return nil
		}
		if r := m.slab.get(ref); r.id == id {
			return r
		}
	}
}

// prefixTaken reports whether a live or remembered lease's id begins with
// id's first 64 bits.
func (m *Manager) prefixTaken(id leaseID) bool {
	for p := m.leases.find(id.hash()); ; {
		ref := p.next()
		if ref == 0 {
			return false
		}
		if m.slab.get(ref).id.prefix() == id.prefix() {
			return true
		}
	}
}

// Stats returns the gauges and counters.
func (m *Manager) Stats() Stats {
	m.mu.Lock()
	defer m.unlock()
	if !m.closed && !m.paused && m.advance(m.now()) {
		m.arm()
	}
	s := m.stats
	s.Epoch = m.epoch
	s.Leases = int64(m.live)
	s.Waiters = int64(m.waiters)
	s.Watchers = int64(m.watching)
	return s
}

// begin starts every call that reads or changes leases: it takes the mutex
// and brings the Manager up to now, ending what is past its deadline, so
// that nothing is read stale whether the timer has fired or not (advance
// before every read). It is false, the mutex let go, when the Manager is
// closed or paused, even while its advance let the mutex go. The caller
// defers finish(now).
func (m *Manager) begin() (now instant, ok bool) {
	m.mu.Lock()
	if m.closed || m.paused {
		m.mu.Unlock()
		return 0, false
	}
	now = m.now()
	if !m.advance(now) {
		m.mu.Unlock()
		return 0, false
	}
	return now, true
}

// beginFocused is begin for a method whose answer depends only on one
// key's lease and line and on one request (Hold, Renew, Release, Info). It
// ends the due leases that have a waiter, up to a step of them, as the
// timer's sweep does first (LOCK-06: a lagging timer does not keep their
// waiters waiting while lock commands come in), and reports whether
// anything else is due (behind): then the method, once it knows what it
// reads, calls catchUp. The rest is the timer's to sweep, in paced steps; a
// method that ran a step of it would take the CPU from the rest of the
// server unpaced, once for every lock command while a million leases fall
// due. Unlike begin, it says why it refuses a call: it is ErrPaused or
// ErrClosed, the mutex let go, when the Manager is paused or closed.
func (m *Manager) beginFocused() (now instant, behind bool, err error) {
	m.mu.Lock()
	if m.closed || m.paused {
		err = m.refusal()
		m.mu.Unlock()
		return 0, false, err
	}
	now = m.now()
	for range m.step() {
		r := m.dueContested(now)
		if r == nil {
			break
		}
		m.expire(r, now)
	}
	first := m.events.first()
	return now, first != nil && first.at <= now, nil
}

// refusal is why the Manager refuses a call: ErrClosed once closed, else
// ErrPaused. The caller holds m.mu.
func (m *Manager) refusal() error {
	if m.closed {
		return ErrClosed
	}
	return ErrPaused
}

// catchUp finishes what beginFocused began, for a method that reads the
// key named name ("": none) and request r (nil: none), which may be on
// another key. It runs the due events of what the method reads, and of
// r's key, and leaves the events due elsewhere to the timer's sweep: they change other keys
// only, so what the method reads is as the full advance would leave it. A worker's HOLD on a key of its own is so answered at
// once while a million other leases fall due, and so is a waiter's HOLD
// re-sent on a key whose lease is one of the million, rather than once
// all are swept.
//
// The events of one key run in their own order, earlier than others due
// before them elsewhere: nothing of one key depends on another's, and the
// contested leases go first in every sweep already (grantNext passes over
// a waiter whose WAIT ran out before the lease ended). Fences stay in the
// order of the grants, as they are made (LOCK-02).
//
// Should more than a step of these events be due, it advances everything
// as begin does, and the caller looks up again what it read, as the advance
// let the mutex go. It is the refusal, the mutex let go, when the Manager
// was closed or paused meanwhile (see advance).
func (m *Manager) catchUp(now instant, name string, r *request) error {
	if !m.advanceOnCatchUp && m.runDueOf(now, name, r) {
		return nil
	}
	if !m.advance(now) {
		err := m.refusal()
		m.mu.Unlock()
		return err
	}
	return nil
}

// due reports whether r has an event due at or before now.
func due(r *request, now instant) bool {
	return r != nil && r.index >= 0 && r.at <= now
}

// runDueOf runs the events due at or before now of the key named name, of
// request r and of r's key until none is due: running one can make
// another due (a place that lingers from a WAIT that ran out long ago, an
// ended lease remembered for less than the backlog's age). It
// is false when more than a step of them come due in all (a line of
// thousands whose WAITs ran out at once): the caller advances everything
// then, in paced steps.
func (m *Manager) runDueOf(now instant, name string, r *request) bool {
	budget := m.step()
	for {
		events := m.dueOf(m.dueScratch[:0], now, name)
		if r != nil && r.name() != name {
			// r's key, whose holder's end may come before r's own event:
			// a WAIT that runs out at the very deadline is granted.
			events = m.dueOf(events, now, r.name())
		}
		if due(r, now) && !slices.Contains(events, r) {
			events = append(events, r) // an ended lease: in no line, and not its key's holder
		}
		m.dueScratch = events[:0]
		if len(events) == 0 {
			return true
		}
		if len(events) > budget {
			clear(events)
			return false
		}
		budget -= len(events)
		// The holder's end first, as at one instant leases end before
		// waits run out (see phase): then a place whose WAIT ran out
		// before it lingers rather than being granted (grantNext), as it
		// would have had its event run first.
		for _, e := range events {
			// Running an earlier one may have run this one's event, or
			// made it another (a waiter granted; a place forgotten, its
			// index -1 in the slab, which nothing reuses meanwhile).
			if due(e, now) {
				m.run(e, now)
			}
		}
		clear(events)
	}
}

// dueOf appends to events the due events of the key named name ("":
// none): its live leases' ends first, then its line's places'.
func (m *Manager) dueOf(events []*request, now instant, name string) []*request {
	if name == "" {
		return events
	}
	st := m.states[name]
	if st == nil {
		if h := m.holder(name); due(h, now) {
			events = append(events, h)
		}
		return events
	}
	for _, e := range st.holders {
		if e.ref != 0 {
			if h := m.slab.get(e.ref); due(h, now) {
				events = append(events, h)
			}
		}
	}
	if st.n > 0 {
		for w := st.head; w != nil; w = w.rare.next {
			if due(w, now) {
				events = append(events, w)
			}
		}
	}
	return events
}

// step is how many due events one step of a sweep runs.
func (m *Manager) step() int {
	if m.sweepStep <= 0 {
		return DefaultSweepStep
	}
	return m.sweepStep
}

// finish ends what begin started: it arms the timer for the next event and
// lets the mutex go, answering the watchers of what changed (unlock).
func (m *Manager) finish(instant) {
	m.arm()
	m.unlock()
}

// now reads store time.
func (m *Manager) now() instant { return instant(m.clock.Now().Sub(m.base)) }
