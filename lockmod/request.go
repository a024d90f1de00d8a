package lockmod

import (
	"container/heap"
	"encoding/binary"
	"math"
	"time"
)

// instant is store time: nanoseconds since the Manager was made, on its clock.
type instant int64

// add is t + d, saturating: a WAIT of "forever" stays in the future.
func (t instant) add(d time.Duration) instant {
	if s := t + instant(d); d < 0 || s >= t {
		return s
	}
	return math.MaxInt64
}

// leaseID is a lease id as kept: 16 bytes, not 32 hex characters.
type leaseID [16]byte

// key is the map key of a lease id: its first 64 bits. newLeaseID draws again
// rather than give two remembered leases the same key, so a hit needs only a
// check of the other 64 bits. A slot of map[uint64] is 16 bytes, of
// map[leaseID] 24.
func (id leaseID) key() uint64 { return binary.LittleEndian.Uint64(id[:8]) }

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
// three, and what most leases never need sits apart in *rare, so that a plain
// live lease is one 96-byte allocation (the budget at a million leases is
// ~300 bytes a lease, maps and strings included).
type request struct {
	reqid     string
	name      string // lock and key, see keyName
	id        leaseID
	fence     uint64
	ttl       time.Duration // asked for while waiting; granted with once live, the default for Renew
	grantedAt instant
	at        instant // the next event of this request, by phase
	rare      *rare   // while in line; for a lease with MAXHOLD or a longer renewal
	index     int32   // in Manager.events; -1 when not scheduled
	phase     phase
	reason    reason // once ended
}

// rare is what a request needs only sometimes.
type rare struct {
	// While in line (LOCK-08).
	prev, next *request
	ticket     *Ticket // the open request; nil while lingering
	maxHold    time.Duration
	joinedAt   instant // when its reqid first joined, for GrantEvent.Waited

	// Once granted.
	maxDeadline instant       // grant + MAXHOLD; 0: none (LOCK-07)
	span        time.Duration // the longest ttl renewed, if longer than the granted one
}

// maxDeadline is r's MAXHOLD deadline, 0 if none.
func (r *request) maxDeadline() instant {
	if r.rare == nil {
		return 0
	}
	return r.rare.maxDeadline
}

// span is how long r is remembered after its lease ends: the longest ttl it
// was granted or renewed with (LOCK-03, LOCK-05).
func (r *request) span() time.Duration {
	if r.rare == nil {
		return r.ttl
	}
	return max(r.ttl, r.rare.span)
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
