package lockmod

import (
	"cmp"
	"encoding/binary"
	"math"
	"slices"
	"time"
	"unsafe"
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

// hash is where the leases table files the id: its first 32 bits, random
// already.
func (id leaseID) hash() uint32 { return binary.LittleEndian.Uint32(id[:4]) }

// prefix is the id's first 64 bits. newLeaseID draws again rather than
// give two remembered leases the same prefix (a broken random source would
// show there first).
func (id leaseID) prefix() uint64 { return binary.LittleEndian.Uint64(id[:8]) }

// phase is where a request is in its life. The order matters: at one instant,
// leases end before waits run out, so a waiter whose WAIT runs out at the very
// deadline of the lease ahead of it is granted (see before).
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
// live lease is one 88-byte place in the slab and one small string (see
// "Memory" in the package doc).
type request struct {
	// text is the key's name (see keyName), the owner's length as a
	// uvarint and the owner (LOCK-16), then the reqid as kept (see
	// appendReqKey): one allocation for all three.
	text      string
	rare      *rare // while in line; for a lease with MAXHOLD or a longer renewal
	id        leaseID
	fence     uint64
	ttl       time.Duration // asked for while waiting; granted with once live, the default for Renew
	grantedAt instant
	at        instant // the next event of this request, by phase
	ref       uint32  // its place in the slab, for good
	index     int32   // in Manager.events; -1 when not scheduled
	nameLen   uint32
	phase     phase
	reason    reason // once ended
	hexReqID  bool   // the reqid was 32 lowercase hex characters, kept as their 16 bytes
	listed    bool   // the order lists its key with this request
}

// name is r's key's name, see keyName.
func (r *request) name() string { return r.text[:r.nameLen] }

// ownerSpan is where r's owner text lies in r.text.
func (r *request) ownerSpan() (start, end int) {
	i, n, shift := int(r.nameLen), 0, 0
	for {
		c := r.text[i]
		i++
		n |= int(c&0x7f) << shift
		if c < 0x80 {
			return i, i + n
		}
		shift += 7
	}
}

// owner is the OWNER text r was asked for with, "" if none (LOCK-16).
func (r *request) owner() string {
	start, end := r.ownerSpan()
	return r.text[start:end]
}

// reqKey is r's reqid as kept, see appendReqKey.
func (r *request) reqKey() string {
	_, end := r.ownerSpan()
	return r.text[end:]
}

// reqID is r's reqid as the client sent it.
func (r *request) reqID() string {
	if !r.hexReqID {
		return r.reqKey()
	}
	var b [32]byte
	return string(appendHex(b[:0], r.reqKey()))
}

// rare is what a request needs only sometimes.
type rare struct {
	// While in line (LOCK-08).
	prev, next *request
	waiter     *waiter // the open request; nil while lingering
	maxHold    time.Duration
	joinedAt   instant // when its reqid first joined, for GrantEvent.Waited
	shared     bool    // it asks for a SHARED lease (SPEC §12)

	// Once granted.
	maxDeadline instant       // grant + MAXHOLD; 0: none (LOCK-07)
	span        time.Duration // the longest ttl renewed, if longer than the granted one

	// A request held in process (LOCK-13), in line and once granted.
	ending *Ending
}

// never is the deadline of a lease held in process without MAXHOLD: it is
// not in the event heap at all.
const never = instant(math.MaxInt64)

// ending is what tells r's holder of its end if r is held in process, nil
// otherwise.
func (r *request) ending() *Ending {
	if r.rare == nil {
		return nil
	}
	return r.rare.ending
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

// keyState is what a (lock, key) needs beyond one plain lease: its line
// of places (LOCK-08), the LIMIT every request for it agrees on while it is
// in use (LOCK-15), and its live leases when it may have more than one
// (LOCK-01). A key held by one exclusive lease without LIMIT, with nobody in
// line, has none: that lease, in Manager.keys, is all there is to it, so a
// plain mutex costs what it cost before there were other kinds. A key has
// a keyState while it has a place in line, or live leases held with LIMIT
// or SHARED (see Manager.settle).
type keyState struct {
	// The line: places in the order their reqids first joined. Lingering
	// places stay where they are.
	head, tail *request
	n          int

	limit  uint32 // the key's LIMIT (1: none)
	shared bool   // its live leases are SHARED

	// holders are the key's live leases in the order of their grants (so
	// of their fences), ended ones left as tombstones (ref 0) until they
	// are a good part of the slice; live counts the others.
	holders []holderRef
	live    int
}

// holderRef is a live lease of a keyState: its fence, by which the slice
// is sorted, and its ref in the slab (0 once it ended).
type holderRef struct {
	fence uint64
	ref   uint32
}

// addHolder files r, just granted: its fence is the largest yet.
func (st *keyState) addHolder(r *request) {
	st.holders = append(st.holders, holderRef{fence: r.fence, ref: r.ref})
	st.live++
}

// dropHolder takes r, a live lease of the key, out of its holders.
func (st *keyState) dropHolder(r *request) {
	i, ok := slices.BinarySearchFunc(st.holders, r.fence, func(h holderRef, f uint64) int { return cmp.Compare(h.fence, f) })
	if !ok || st.holders[i].ref != r.ref {
		panic("lockmod: a live lease missing from its key's holders")
	}
	st.holders[i].ref = 0
	st.live--
	// Tombstones at either end go at once, so that the first and the last
	// entries are live; the rest when they are half the slice.
	for len(st.holders) > 0 && st.holders[0].ref == 0 {
		st.holders = st.holders[1:]
	}
	for len(st.holders) > 0 && st.holders[len(st.holders)-1].ref == 0 {
		st.holders = st.holders[:len(st.holders)-1]
	}
	if len(st.holders) > 2*st.live+8 {
		st.holders = slices.DeleteFunc(slices.Clone(st.holders), func(h holderRef) bool { return h.ref == 0 })
	}
	if st.live == 0 {
		st.holders, st.shared = nil, false
	}
}

// keyName packs// keyName packs (lock, key) into one map key: the length of lock as a uvarint,
// lock, key. Any bytes may appear in either, so a separator would not do.
func keyName(buf []byte, lock, key string) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(lock)))
	buf = append(buf, lock...)
	return append(buf, key...)
}

// appendReqKey appends reqid as it is kept and reports its form: the SDKs'
// reqids, 32 lowercase hex characters, as the 16 bytes they spell (true);
// any other as it is. One reqid has one form, so two reqids are the same
// exactly when their forms and kept bytes are.
func appendReqKey(b []byte, reqid string) ([]byte, bool) {
	var k [16]byte
	if len(reqid) != 2*len(k) || !decodeHex(k[:], reqid) {
		return append(b, reqid...), false
	}
	return append(b, k[:]...), true
}

// decodeHex decodes s, 2*len(dst) lowercase hex characters, into dst, and
// reports whether they all were. Uppercase is refused: one spelling per id.
func decodeHex(dst []byte, s string) bool {
	var bad byte
	for i := range dst {
		hi, lo := hexValue[s[2*i]], hexValue[s[2*i+1]]
		bad |= hi | lo
		dst[i] = hi<<4 | lo
	}
	return bad < 16
}

// hexValue is the value of each lowercase hex digit, 0xff for any other
// byte: decoding without a branch per character (ids and reqids are random,
// so branches on them mispredict).
var hexValue = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for i, c := range "0123456789abcdef" {
		t[c] = byte(i)
	}
	return t
}()

func appendHex(b []byte, s string) []byte {
	const digits = "0123456789abcdef"
	for i := 0; i < len(s); i++ {
		b = append(b, digits[s[i]>>4], digits[s[i]&15])
	}
	return b
}

// view is b as a string, without a copy, for a lookup that does not keep it:
// names and reqids are built in stack buffers, and copied only into a new
// request's text.
func view(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
