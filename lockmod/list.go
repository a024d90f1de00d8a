package lockmod

import "time"

// ListEntry is one key of a lock as List shows it. Never a lease id.
type ListEntry struct {
	Key     string
	Fence   uint64        // 0 if free (only lingering places wait)
	TTL     time.Duration // to the deadline; -1ms if free
	Waiters int           // places in line, lingering ones included
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
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return 0, nil
	}
	now := m.now()
	m.advance(now)
	defer m.arm(now)
	entries = make([]ListEntry, 0, min(count, m.order.n))
	next = m.order.walk(lock, cursor, count, func(name string) {
		_, key := splitName(name)
		e := ListEntry{Key: key, TTL: notApplicable}
		if r := m.holder(name); r != nil {
			e.Fence = r.fence
			e.TTL = time.Duration(r.at - now)
		}
		if ln := m.lines[name]; ln != nil {
			e.Waiters = ln.n
		}
		entries = append(entries, e)
	})
	return next, entries
}
