package lockmod

// Contested leases: the live leases whose keys have a line, by deadline, so
// that a sweep that lags behind a mass of due leases ends those with a
// waiter first and grants their waiters within LOCK-06's bound, whatever
// the number of uncontested leases due beside them.

import "container/heap"

// contestedLease is a live lease whose key had a line when it was filed,
// with the deadline it had then. Entries are not taken out when the lease
// is renewed, ends or its line empties: one that no longer matches its
// lease (by ref, fence and deadline) is dropped when it comes up. A renewal
// of a contested lease files it again.
type contestedLease struct {
	at    instant
	fence uint64
	ref   uint32
}

type contestedHeap []contestedLease

func (h contestedHeap) Len() int           { return len(h) }
func (h contestedHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h contestedHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *contestedHeap) Push(x any)        { *h = append(*h, x.(contestedLease)) }
func (h *contestedHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// contest files live lease r, whose key has a line, at its deadline.
func (m *Manager) contest(r *request) {
	if r.at == never {
		return // held in process without MAXHOLD: never due
	}
	heap.Push(&m.contested, contestedLease{at: r.at, fence: r.fence, ref: r.ref})
}

// dueContested is the contested live lease due first at or before now, nil
// if none; stale entries it meets on the way are dropped.
func (m *Manager) dueContested(now instant) *request {
	for len(m.contested) > 0 && m.contested[0].at <= now {
		e := heap.Pop(&m.contested).(contestedLease)
		r := m.slab.get(e.ref)
		if r.phase == live && r.fence == e.fence && r.at == e.at {
			return r
		}
	}
	return nil
}
