package lockmod

import (
	"container/heap"
	"encoding/binary"
	"time"
)

// instant is store time: nanoseconds since the Manager was made, on its clock.
type instant int64

// leaseID is a lease id as kept in maps: 16 bytes, not 32 hex characters.
type leaseID [16]byte

// phase is where a request is in its life. The order matters: at one instant,
// leases end before waits run out, so a waiter whose WAIT runs out at the very
// deadline of the lease ahead of it is granted (see eventQueue.Less).
type phase uint8

const (
	live      phase = iota // granted; at is the deadline (already capped by MAXHOLD)
	waiting                // in line with an open ticket; at is when WAIT runs out, if it does
	lingering              // in line without a ticket, passed over; at is when the place goes
	ended                  // the lease ended; at is when its id and reqid are forgotten
)

// request is one reqid's whole story on one (lock, key): a place in line,
// then a lease, then the memory of how the lease ended. One struct serves all
// three so that a live lease costs one allocation (the 1,000,000-lease budget
// is ~300 bytes each); the waiting-only fields sit in *place.
type request struct {
	reqid string
	name  string // lock and key, see keyName
	id    leaseID
	fence uint64
	ttl   time.Duration // granted with; the default for Renew
	span  time.Duration // longest ttl granted or renewed: how long the record outlives the lease (LOCK-03, LOCK-05)

	grantedAt   instant
	maxDeadline instant // 0: no MAXHOLD
	at          instant // the next event of this request, by phase

	place  *place // nil unless waiting or lingering
	index  int32  // in Manager.events; -1 when not scheduled
	phase  phase
	reason reason // once ended
}

// place is what a request needs while it is in line.
type place struct {
	prev, next *request
	ticket     *Ticket // the open request; nil while lingering
	maxHold    time.Duration
}

// line is the FIFO of places for one (lock, key), in the order their reqids
// first joined (LOCK-08). Lingering places stay where they are.
type line struct {
	head, tail *request
	n          int
}

// keyName packs (lock, key) into one map key: the length of lock as a uvarint,
// lock, key. Any bytes may appear in either, so a separator would not do.
func keyName(buf []byte, lock, key string) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(lock)))
	buf = append(buf, lock...)
	return append(buf, key...)
}

// eventQueue is the timer heap: every request with a pending event, earliest
// first. One clock timer is armed for its head.
type eventQueue []*request

func (q eventQueue) Len() int { return len(q) }

func (q eventQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].phase < q[j].phase
}

func (q eventQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].index = int32(i)
	q[j].index = int32(j)
}

func (q *eventQueue) Push(x any) {
	r := x.(*request)
	r.index = int32(len(*q))
	*q = append(*q, r)
}

func (q *eventQueue) Pop() any {
	old := *q
	r := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	r.index = -1
	return r
}

// schedule puts r in the heap at r.at, or moves it there.
func (q *eventQueue) schedule(r *request) {
	if r.index >= 0 {
		heap.Fix(q, int(r.index))
		return
	}
	heap.Push(q, r)
}

// unschedule takes r out of the heap if it is there.
func (q *eventQueue) unschedule(r *request) {
	if r.index >= 0 {
		heap.Remove(q, int(r.index))
	}
}
