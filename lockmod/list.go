package lockmod

import (
	"time"
)

// ListEntry is one key of a lock as List shows it. Never a lease id.
type ListEntry struct {
	Key     string
	Fence   uint64        // 0 if free (only lingering places wait)
	TTL     time.Duration // to the deadline; 0 if free or held in process
	Waiters int           // places in line, lingering ones included
	// InProcess: the lease is held in the store's own process, with no
	// ttl deadline (LOCK-13).
	InProcess bool
	Holders   int    // live leases
	Owner     string // the newest live lease's OWNER, "" if none (LOCK-16)
}

// DefaultListCount is how many keys a List step looks at when asked for
// none (SPEC §3: COUNT defaults to 10).
const DefaultListCount = 10

// List walks the keys of lock that are held or have a line, as SCAN walks a
// keyspace: start with cursor 0 and call again with the cursor it returns
// until that is 0. A key held (or waited for) for the whole walk is
// returned at least once, and exactly once if nothing else changes. count
// (DefaultListCount when < 1) is a hint: a step looks at about that many
// keys, more when several share a position. A step costs O(count + log n)
// in the number n of keys held or waited for, across all locks.
func (m *Manager) List(lock string, cursor uint64, count int) (next uint64, entries []ListEntry) {
	if count < 1 {
		count = DefaultListCount
	}
	now, ok := m.begin()
	if !ok {
		return 0, nil
	}
	defer m.finish(now)
	entries = make([]ListEntry, 0, min(count, m.order.n))
	next = m.order.walk(lock, cursor, count, func(name string) {
		_, key := splitName(name)
		e := ListEntry{Key: key}
		if r := m.holder(name); r != nil {
			e.Fence, e.Owner, e.Holders = r.fence, r.owner(), 1
			if e.InProcess = r.ending() != nil; !e.InProcess {
				e.TTL = time.Duration(r.at - now)
			}
		}
		if st := m.states[name]; st != nil {
			e.Waiters, e.Holders = st.n, st.live
		}
		entries = append(entries, e)
	})
	return next, entries
}

// KeyInfo is what LOCK.INFO shows of a (lock, key). Never a lease id.
// Fence, TTL, InProcess, Held, MaxHold and Owner are those of the newest
// live lease (the largest fence). A free key (Fence 0) has no deadline: its
// TTL and Held are 0; a lease without MAXHOLD has a MaxHold of 0. A live
// lease's TTL and MaxHold are always above 0: at its deadline it has ended.
// A lease held in process has no ttl deadline: its TTL is 0 and InProcess
// is true (LOCK-13).
type KeyInfo struct {
	Fence     uint64        // 0 if free
	TTL       time.Duration // to the deadline
	InProcess bool          // held in the store's own process
	Held      time.Duration // since the grant
	MaxHold   time.Duration // to the MAXHOLD revocation
	Waiters   int           // places in line, lingering ones included
	Holders   int           // live leases (LOCK-01)
	Limit     int           // the key's LIMIT, 1 when none (LOCK-15)
	Shared    bool          // its live leases are SHARED
	Owner     string        // "" if none was given (LOCK-16)
}

// Holder is one live lease as Holders shows it. Never a lease id.
type Holder struct {
	Fence     uint64
	TTL       time.Duration // to the deadline; 0 if held in process
	InProcess bool
	Held      time.Duration // since the grant
	MaxHold   time.Duration // to the MAXHOLD revocation; 0 if none
	Shared    bool
	Owner     string
}

// Info describes (lock, key); false when it is free and nobody waits.
func (m *Manager) Info(lock, key string) (KeyInfo, bool) {
	now, behind, err := m.beginFocused()
	if err != nil {
		return KeyInfo{}, false
	}
	var buf [128]byte
	name := view(keyName(buf[:0], lock, key))
	if behind && m.catchUp(now, name, nil) != nil {
		return KeyInfo{}, false
	}
	defer m.finish(now)
	return m.infoOf(name, now)
}

// infoOf is Info of the key named name at now. The caller holds m.mu.
func (m *Manager) infoOf(name string, now instant) (KeyInfo, bool) {
	r, st := m.holder(name), m.states[name]
	if r == nil && st == nil {
		return KeyInfo{}, false
	}
	info := KeyInfo{Limit: 1}
	if st != nil {
		info.Waiters, info.Holders, info.Limit, info.Shared = st.n, st.live, int(st.limit), st.shared
	}
	if r != nil {
		if st == nil {
			info.Holders = 1
		}
		h := m.holderOf(r, info.Shared, now)
		info.Fence, info.TTL, info.InProcess, info.Held, info.MaxHold, info.Owner = h.Fence, h.TTL, h.InProcess, h.Held, h.MaxHold, h.Owner
	}
	return info, true
}

// holderOf is live lease r as Holders shows it at now.
func (m *Manager) holderOf(r *request, shared bool, now instant) Holder {
	h := Holder{Fence: r.fence, Shared: shared, Owner: r.owner(), Held: time.Duration(now - r.grantedAt)}
	if h.InProcess = r.ending() != nil; !h.InProcess {
		h.TTL = time.Duration(r.at - now)
	}
	if md := r.maxDeadline(); md != 0 {
		h.MaxHold = time.Duration(md - now)
	}
	return h
}

// Holders lists every live lease of (lock, key), oldest first; none when
// it is free.
func (m *Manager) Holders(lock, key string) []Holder {
	now, behind, err := m.beginFocused()
	if err != nil {
		return nil
	}
	var buf [128]byte
	name := view(keyName(buf[:0], lock, key))
	if behind && m.catchUp(now, name, nil) != nil {
		return nil
	}
	defer m.finish(now)
	shared := false
	if st := m.states[name]; st != nil {
		shared = st.shared
	}
	var hs []Holder
	m.eachHolder(name, func(r *request) { hs = append(hs, m.holderOf(r, shared, now)) })
	return hs
}
