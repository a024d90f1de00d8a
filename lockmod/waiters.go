package lockmod

import "time"

// Waiter is one place in a key's line as Line shows it: who waits, and for
// how long. Never a lease id or a reqid (LOCK-04, LOCK-16).
type Waiter struct {
	Owner  string        // the request's OWNER, "" if none
	Waited time.Duration // since its reqid first joined the line
	Shared bool          // it asks for a SHARED lease
	// Lingering: its request left (its WAIT ran out, or its connection
	// closed) and its place is kept for a retry; it is passed over.
	Lingering bool
}

// Line lists the places in line of (lock, key), first first: who waits
// (SPEC §14's dashboard). None when nobody waits.
func (m *Manager) Line(lock, key string) []Waiter {
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
	st := m.states[name]
	if st == nil {
		return nil
	}
	ws := make([]Waiter, 0, st.n)
	for r := st.head; r != nil; r = r.rare.next {
		ws = append(ws, Waiter{Owner: r.owner(), Waited: time.Duration(now - r.rare.joinedAt), Shared: r.rare.shared, Lingering: r.rare.waiter == nil})
	}
	return ws
}
