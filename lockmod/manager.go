package lockmod

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"hash/maphash"
	"io"
	"math"
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

// HoldRequest asks for (Lock, Key) on behalf of request ReqID. Hold copies
// what it keeps, so the strings may alias buffers the caller reuses once
// Hold has returned.
type HoldRequest struct {
	Lock, Key, ReqID string
	TTL              time.Duration // <= 0: DefaultTTL
	Wait             time.Duration
	HasWait          bool          // false: wait without limit; true with Wait <= 0: try once, never join the line
	MaxHold          time.Duration // <= 0: no cap
}

// Grant is a lease as its holder learns it.
type Grant struct {
	id      leaseID
	Fence   uint64        // epoch<<32 + n (LOCK-02)
	TTLLeft time.Duration // deadline - now
}

// LeaseID is the lease id: 32 lowercase hex characters (LOCK-04).
func (g Grant) LeaseID() string {
	var b [2 * len(leaseID{})]byte
	return string(g.AppendLeaseID(b[:0]))
}

// AppendLeaseID appends LeaseID to b, so that a reply can carry the id
// without a string made for it.
func (g Grant) AppendLeaseID(b []byte) []byte { return hex.AppendEncode(b, g.id[:]) }

// KeyInfo is what LOCK.INFO shows of a (lock, key). Never a lease id.
// Durations that do not apply are -1ms, so that resp's ms conversion prints -1.
type KeyInfo struct {
	Fence   uint64        // 0 if free
	TTL     time.Duration // to the deadline; -1ms if free
	Held    time.Duration // since the grant; -1ms if free
	MaxHold time.Duration // to the MAXHOLD revocation; -1ms if none or free
	Waiters int           // places in line, lingering ones included
}

// Stats are the Manager's gauges and counters, for INFO's # Locks section.
type Stats struct {
	Epoch         uint64
	Leases        int64 // live leases
	Waiters       int64 // places in line, lingering ones included
	GrantsTotal   uint64
	RenewalsTotal uint64
	ReleasedTotal uint64
	ExpiredTotal  uint64
	RevokedTotal  uint64 // by MAXHOLD or by an admin
	// RevokedTotal split by cause.
	RevokedMaxHoldTotal uint64
	RevokedAdminTotal   uint64
}

// notApplicable is the value of a KeyInfo duration that does not apply.
const notApplicable = -time.Millisecond

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
	keys   table            // hashName(name) -> the key's live lease (LOCK-01)
	lines  map[string]*line // (lock, key) -> its line, while it has places
	order  *order           // every (lock, key) held or with a line, for List
	leases table            // leaseID.hash -> live and remembered ended leases (LOCK-04, LOCK-05)
	reqs   table            // hashName(reqid as kept) -> its place, lease or ended lease (LOCK-03)
	events eventQueue       // LOCK-06
	seed   maphash.Seed
	// hashMask is all ones; tests narrow it to make hashes collide.
	hashMask uint32

	timer   Timer // armed for timerAt, nil if none
	timerAt instant
	fireFn  func()  // m.fire, made once
	idBuf   leaseID // scratch for reading random bytes without an allocation

	waiters int
	stats   Stats
	closed  bool
	doneCh  chan struct{} // closed at birth: the Done of tickets answered at once

	observer Observer
	trace    func(traceEvent) // tests only
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
		lines:     make(map[string]*line),
		order:     newOrder(),
		seed:      maphash.MakeSeed(),
		hashMask:  math.MaxUint32,
		doneCh:    make(chan struct{}),
		observer:  cfg.Observer,
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

// Close answers every open waiter ErrClosed, stops the timer and forgets all
// leases. Every later call fails with ErrClosed (Revoke reports false, Info
// nothing); Stats keeps its counters.
func (m *Manager) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	m.closed = true
	if m.timer != nil {
		m.timer.Stop()
		m.timer = nil
	}
	for _, ln := range m.lines {
		for r := ln.head; r != nil; r = r.rare.next {
			if w := r.rare.waiter; w != nil {
				w.finish(Grant{}, ErrClosed)
			}
		}
	}
	m.keys.clear()
	clear(m.lines)
	m.order.clear()
	m.leases.clear()
	m.reqs.clear()
	m.events.clear()
	m.slab = slab{}
	m.waiters = 0
}

// Hold asks for (lock, key). It never waits: the ticket it returns is done
// already, or waits in the line (LOCK-08).
func (m *Manager) Hold(req HoldRequest) Ticket {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return m.answered(Grant{}, ErrClosed)
	}
	now := m.now()
	m.advance(now)
	defer m.arm(now)

	ttl := req.TTL
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	// The key's name and the reqid as kept, side by side in one buffer: a
	// new request copies both at once into its text.
	var buf [128]byte
	text := keyName(buf[:0], req.Lock, req.Key)
	nameLen := len(text)
	text, hexForm := appendReqKey(text, req.ReqID)
	name := view(text[:nameLen])

	// LOCK-03: one grant per reqid.
	if r := m.byReqKey(view(text[nameLen:]), hexForm); r != nil {
		if r.name() != name {
			return m.answered(Grant{}, ErrReqIDInUse)
		}
		switch r.phase {
		case live:
			return m.answered(m.grantOf(r, now), nil)
		case ended:
			return m.answered(Grant{}, r.reason.lost())
		default:
			return m.resume(r, req, ttl, now)
		}
	}

	if m.holder(name) == nil {
		// The key is free, so nobody open waits for it: the places in its
		// line, if any, linger and are passed over.
		r := m.newRequest(text, nameLen, hexForm, ttl)
		if err := m.grant(r, req.MaxHold, now); err != nil {
			m.slab.release(r)
			return m.answered(Grant{}, err)
		}
		m.reqs.put(m.hashName(r.reqKey()), r.ref)
		return m.answered(m.grantOf(r, now), nil)
	}
	if req.HasWait && req.Wait <= 0 {
		return m.answered(Grant{}, ErrNotGranted) // try once: never joins the line
	}
	r := m.newRequest(text, nameLen, hexForm, ttl)
	w := &waiter{done: make(chan struct{}), m: m, req: r}
	r.rare = &rare{waiter: w, maxHold: req.MaxHold, joinedAt: now}
	r.phase = waiting
	m.join(r)
	m.reqs.put(m.hashName(r.reqKey()), r.ref)
	if req.HasWait {
		r.at = now.add(req.Wait)
		m.events.schedule(r)
	}
	return Ticket{done: w.done, w: w}
}

// newRequest makes a request whose text (name, then reqid as kept) is
// copied from text.
func (m *Manager) newRequest(text []byte, nameLen int, hexForm bool, ttl time.Duration) *request {
	if uint64(nameLen) > math.MaxUint32 {
		panic("lockmod: lock and key longer than 4 GB")
	}
	r := m.slab.alloc()
	r.text = string(text)
	r.nameLen = uint32(nameLen)
	r.hexReqID = hexForm
	r.ttl = ttl
	return r
}

// hashName is where the keys and reqs tables file a name or a reqid as kept.
func (m *Manager) hashName(s string) uint32 {
	return uint32(maphash.String(m.seed, s)>>32) & m.hashMask
}

// holder is the live lease of the key named name, nil if it is free.
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

// resume answers a retry of a request that has a place in line, waiting or
// lingering: the retry takes the place over (LOCK-03, LOCK-08).
func (m *Manager) resume(r *request, req HoldRequest, ttl time.Duration, now instant) Ticket {
	p := r.rare
	if p.waiter != nil {
		p.waiter.finish(Grant{}, ErrSuperseded)
		p.waiter = nil
	}
	r.ttl, p.maxHold = ttl, req.MaxHold
	if name := r.name(); m.holder(name) == nil {
		// Free key: no open request is ahead of this one (they would hold it),
		// so it is first among the open ones. Grant now, re-checked here.
		m.leave(r)
		if err := m.grant(r, p.maxHold, now); err != nil {
			m.forget(r)
			m.unlistIfIdle(name)
			return m.answered(Grant{}, err)
		}
		return m.answered(m.grantOf(r, now), nil)
	}
	if req.HasWait && req.Wait <= 0 {
		// Try once: not granted, and the place lingers from now as if a
		// WAIT had just run out.
		r.phase = lingering
		r.at = now.add(m.lingerFor)
		m.events.schedule(r)
		return m.answered(Grant{}, ErrNotGranted)
	}
	w := &waiter{done: make(chan struct{}), m: m, req: r}
	p.waiter = w
	r.phase = waiting
	if req.HasWait {
		r.at = now.add(req.Wait)
		m.events.schedule(r)
	} else {
		m.events.unschedule(r)
	}
	return Ticket{done: w.done, w: w}
}

// Renew moves a live lease's deadline to now + ttl (ttl <= 0: the ttl it was
// granted with), never past its MAXHOLD deadline (LOCK-07), and returns the
// time to the new deadline. An ended or unknown lease is a *LostError and
// stays ended (LOCK-05).
func (m *Manager) Renew(leaseID string, ttl time.Duration) (time.Duration, error) {
	id, ok := parseLeaseID(leaseID)
	if !ok {
		return 0, unknownLease() // LOCK-04: not an id at all
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return 0, ErrClosed
	}
	now := m.now()
	m.advance(now) // re-check: a lease past its deadline has ended, timer or not
	defer m.arm(now)
	r := m.lease(id)
	if r == nil {
		return 0, unknownLease()
	}
	if r.phase != live {
		return 0, r.reason.lost() // LOCK-05
	}
	if ttl <= 0 {
		ttl = r.ttl
	}
	if ttl > r.span() {
		if r.rare == nil {
			r.rare = &rare{}
		}
		r.rare.span = ttl
	}
	r.at = m.deadline(r, now, ttl)
	m.events.schedule(r)
	m.stats.RenewalsTotal++
	return time.Duration(r.at - now), nil
}

// Release ends a live lease now and grants the next open waiter in the same
// step. It returns nil for a live lease, and again for a lease that a Release
// already ended (a retried RELEASE); otherwise a *LostError.
func (m *Manager) Release(leaseID string) error {
	id, ok := parseLeaseID(leaseID)
	if !ok {
		return unknownLease()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	now := m.now()
	m.advance(now)
	defer m.arm(now)
	r := m.lease(id)
	switch {
	case r == nil:
		return unknownLease()
	case r.phase == live:
		m.end(r, released, now, now)
		return nil
	case r.reason == released:
		return nil
	default:
		return r.reason.lost()
	}
}

// Revoke ends the live lease of (lock, key), if any, with reason "revoked by
// admin", and grants the next open waiter. It reports whether it ended one.
func (m *Manager) Revoke(lock, key string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false
	}
	now := m.now()
	m.advance(now)
	defer m.arm(now)
	var buf [128]byte
	r := m.holder(view(keyName(buf[:0], lock, key)))
	if r == nil {
		return false
	}
	m.end(r, revokedByAdmin, now, now)
	return true
}

// Info describes (lock, key); false when it is free and nobody waits.
func (m *Manager) Info(lock, key string) (KeyInfo, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return KeyInfo{}, false
	}
	now := m.now()
	m.advance(now)
	defer m.arm(now)
	var buf [128]byte
	name := view(keyName(buf[:0], lock, key))
	r, ln := m.holder(name), m.lines[name]
	if r == nil && ln == nil {
		return KeyInfo{}, false
	}
	info := KeyInfo{TTL: notApplicable, Held: notApplicable, MaxHold: notApplicable}
	if ln != nil {
		info.Waiters = ln.n
	}
	if r != nil {
		info.Fence = r.fence
		info.TTL = time.Duration(r.at - now)
		info.Held = time.Duration(now - r.grantedAt)
		if md := r.maxDeadline(); md != 0 {
			info.MaxHold = time.Duration(md - now)
		}
	}
	return info, true
}

// Stats returns the gauges and counters.
func (m *Manager) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.closed {
		now := m.now()
		m.advance(now)
		m.arm(now)
	}
	s := m.stats
	s.Epoch = m.epoch
	s.Leases = int64(m.keys.len())
	s.Waiters = int64(m.waiters)
	return s
}

// now reads store time.
func (m *Manager) now() instant { return instant(m.clock.Now().Sub(m.base)) }

// answered returns a ticket that is already done.
func (m *Manager) answered(g Grant, err error) Ticket {
	return Ticket{done: m.doneCh, grant: g, err: err}
}

// grantOf is the Grant of live lease r as seen at now.
func (m *Manager) grantOf(r *request, now instant) Grant {
	return Grant{id: r.id, Fence: r.fence, TTLLeft: time.Duration(r.at - now)}
}

// deadline is now + ttl, capped by r's MAXHOLD deadline (LOCK-06, LOCK-07).
func (m *Manager) deadline(r *request, now instant, ttl time.Duration) instant {
	d := now.add(ttl)
	if md := r.maxDeadline(); md != 0 && d > md {
		d = md
	}
	return d
}

// grant makes r the live lease of its key for r.ttl, with a fresh id and
// fence. The caller has checked, in this same critical section, that the key
// is free and that r is the first open request for it (etcd#11456). r is out
// of the line.
func (m *Manager) grant(r *request, maxHold time.Duration, now instant) error {
	id, err := m.newLeaseID()
	if err != nil {
		return err
	}
	fence, err := m.nextFence()
	if err != nil {
		return err
	}
	r.id, r.fence = id, fence
	r.grantedAt = now
	var waited time.Duration
	if r.rare != nil { // it waited in line
		waited = time.Duration(now - r.rare.joinedAt)
	}
	r.rare = nil
	if maxHold > 0 {
		r.rare = &rare{maxDeadline: now.add(maxHold)}
	}
	r.at = m.deadline(r, now, r.ttl)
	r.phase = live
	m.leases.put(id.hash(), r.ref)
	m.keys.put(m.hashName(r.name()), r.ref) // LOCK-01: the caller saw no live lease here
	m.order.add(r)
	m.events.schedule(r)
	m.stats.GrantsTotal++
	if m.trace != nil {
		m.trace(traceEvent{grant: true, at: now, name: r.name(), reqid: r.reqID(), id: id, fence: fence})
	}
	if m.observer != nil {
		lock, key := splitName(r.name())
		m.observer.LeaseGranted(GrantEvent{Lock: lock, Key: key, Fence: fence, Waited: waited})
	}
	return nil
}

// end ends live lease r at instant at for reason why, and at now grants the
// key to the first open request in its line, in the same critical section
// (LOCK-06: no gap in which a newcomer can take the key).
func (m *Manager) end(r *request, why reason, at, now instant) {
	m.keys.del(m.hashName(r.name()), r.ref)
	r.phase = ended
	r.reason = why
	r.at = at.add(r.span()) // LOCK-03, LOCK-05: remembered for its ttl after it ends
	r.rare = nil            // MAXHOLD and span are spent
	m.events.schedule(r)
	switch why {
	case expired:
		m.stats.ExpiredTotal++
	case released:
		m.stats.ReleasedTotal++
	case revokedMaxHold:
		m.stats.RevokedTotal++
		m.stats.RevokedMaxHoldTotal++
	default:
		m.stats.RevokedTotal++
		m.stats.RevokedAdminTotal++
	}
	if m.trace != nil {
		m.trace(traceEvent{at: at, name: r.name(), reqid: r.reqID(), id: r.id, fence: r.fence, reason: why})
	}
	if m.observer != nil {
		lock, key := splitName(r.name())
		m.observer.LeaseEnded(EndEvent{Lock: lock, Key: key, Fence: r.fence, Reason: reasonText[why], Held: time.Duration(at - r.grantedAt)})
	}
	m.grantNext(r.name(), now)
	m.unlistIfIdle(r.name())
}

// unlistIfIdle takes name out of the order once its key is neither held
// nor has a line.
func (m *Manager) unlistIfIdle(name string) {
	if m.holder(name) == nil && m.lines[name] == nil {
		m.order.remove(name)
	}
}

// grantNext grants the free key name to the first open request in its line,
// passing over lingering places (LOCK-08). A request whose grant fails (the
// epoch bump or the random source failed) is answered with the error and
// leaves; the next one is tried.
func (m *Manager) grantNext(name string, now instant) {
	ln := m.lines[name]
	if ln == nil {
		return
	}
	for r := ln.head; r != nil; {
		p := r.rare
		next := p.next
		if p.waiter == nil {
			r = next
			continue
		}
		m.leave(r)
		if err := m.grant(r, p.maxHold, now); err != nil {
			p.waiter.finish(Grant{}, err)
			m.forget(r)
			r = next
			continue
		}
		p.waiter.finish(m.grantOf(r, now), nil)
		return
	}
}

// linger takes the open request out of r's place: its ticket is answered err
// and the place lingers, passed over, until at + linger.
func (m *Manager) linger(r *request, at instant, err error) {
	r.rare.waiter.finish(Grant{}, err)
	r.rare.waiter = nil
	r.phase = lingering
	r.at = at.add(m.lingerFor)
	m.events.schedule(r)
}

// join puts r at the tail of its key's line.
func (m *Manager) join(r *request) {
	name := r.name()
	ln := m.lines[name]
	if ln == nil {
		ln = &line{}
		m.lines[name] = ln
		if m.holder(name) == nil { // held keys are listed already
			m.order.add(r)
		}
	}
	if ln.tail == nil {
		ln.head = r
	} else {
		ln.tail.rare.next = r
		r.rare.prev = ln.tail
	}
	ln.tail = r
	ln.n++
	m.waiters++
}

// leave takes r out of its line.
func (m *Manager) leave(r *request) {
	ln := m.lines[r.name()]
	p := r.rare
	if p.prev == nil {
		ln.head = p.next
	} else {
		p.prev.rare.next = p.next
	}
	if p.next == nil {
		ln.tail = p.prev
	} else {
		p.next.rare.prev = p.prev
	}
	p.prev, p.next = nil, nil
	ln.n--
	m.waiters--
	if ln.n == 0 {
		delete(m.lines, r.name())
	}
}

// forget drops every trace of r: the reqid may be used afresh, and r's
// place in the slab is reused, so r must be out of its line and nothing may
// touch it after.
func (m *Manager) forget(r *request) {
	m.events.unschedule(r)
	m.reqs.del(m.hashName(r.reqKey()), r.ref)
	if r.phase == ended || r.phase == live {
		m.leases.del(r.id.hash(), r.ref)
	}
	if r.listed {
		// The order lists r's key with r, so the key is not held (a held
		// key is listed with its holder). Hand the entry to the head of its
		// line, or unlist the key if it has none.
		if ln := m.lines[r.name()]; ln != nil {
			m.order.add(ln.head)
		} else {
			m.order.remove(r.name())
		}
	}
	m.slab.release(r)
}

// advance runs every event due at or before now, earliest first (LOCK-06).
// The clock's timer calls it, and so does every method before it reads
// state, so that a late timer never lets an ended lease be seen as live.
func (m *Manager) advance(now instant) {
	for {
		r := m.events.first()
		if r == nil || r.at > now {
			return
		}
		switch r.phase {
		case live:
			why := expired
			if md := r.maxDeadline(); md != 0 && r.at >= md {
				why = revokedMaxHold // LOCK-07
			}
			m.end(r, why, r.at, now)
		case waiting:
			m.linger(r, r.at, ErrNotGranted)
		case lingering:
			name := r.name()
			m.leave(r)
			m.forget(r)
			m.unlistIfIdle(name)
		case ended:
			m.forget(r)
		}
	}
}

// arm makes sure one clock timer is armed no later than the earliest event.
// A timer armed for a later time is replaced; one armed earlier is left to
// fire, find nothing or little due, and arm again.
func (m *Manager) arm(now instant) {
	if m.closed || m.events.len() == 0 {
		return
	}
	next := m.events.first().at
	if m.timer != nil && m.timerAt <= next {
		return
	}
	if m.timer != nil {
		m.timer.Stop()
	}
	m.timerAt = next
	m.timer = m.clock.AfterFunc(time.Duration(next-now), m.fireFn)
}

// fire is the clock timer's callback. A timer fires at or after the time it
// was armed for, so one that fires before timerAt is a stale timer whose Stop
// came too late; it must not forget the armed one. (At worst a stale timer
// makes one extra wake-up.)
func (m *Manager) fire() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	now := m.now()
	if now >= m.timerAt {
		m.timer = nil
	}
	m.advance(now)
	m.arm(now)
}

// nextFence returns epoch<<32 + n for the next n, bumping the epoch durably
// first when n would reach 2^32 (LOCK-02, SPEC §2).
func (m *Manager) nextFence() (uint64, error) {
	if m.n == math.MaxUint32 {
		if m.bumper == nil {
			return 0, ErrNoEpochBumper
		}
		epoch, err := m.bumper.BumpEpoch()
		if err != nil {
			return 0, fmt.Errorf("bump epoch: %w", err)
		}
		if epoch <= m.epoch || epoch >= 1<<32 {
			return 0, fmt.Errorf("bump epoch: new epoch %d does not follow %d", epoch, m.epoch)
		}
		m.epoch, m.n = epoch, 0
	}
	m.n++
	return m.epoch<<32 | uint64(m.n), nil
}

// newLeaseID draws 128 bits from the random source (LOCK-04). An id whose
// first 64 bits clash with a remembered one's is drawn again (see
// leaseID.prefix); a source that keeps clashing is broken.
func (m *Manager) newLeaseID() (leaseID, error) {
	for range 4 {
		// Read into the Manager's buffer: a local one would escape through
		// the io.Reader and cost an allocation per grant.
		if _, err := io.ReadFull(m.rand, m.idBuf[:]); err != nil {
			return leaseID{}, fmt.Errorf("lease id: %w", err)
		}
		if id := m.idBuf; !m.prefixTaken(id) {
			return id, nil
		}
	}
	return leaseID{}, fmt.Errorf("lease id: random source repeats itself")
}

// parseLeaseID accepts exactly 32 lowercase hex characters: one spelling per
// id. Anything else is no id at all (LOCK-04: "unknown lease").
func parseLeaseID(s string) (leaseID, bool) {
	var id leaseID
	if len(s) != 2*len(id) || !decodeHex(id[:], s) {
		return leaseID{}, false
	}
	return id, true
}
