package lockmod

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"
)

// The table alone, against a map, with hashes drawn from a few values (so
// runs of one hash form), from the top of a shard's range (so runs wrap
// around its end) and at random, through growth and many deletes.
func TestTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	hashes := []uint32{0, 1, 0x00ffffff, 0x00fffffe, 0x00800000, 0x01000000, 0xffffffff}
	var x table
	model := map[uint32]uint32{} // ref -> hash
	next := uint32(1)
	for i := range 60000 {
		if len(model) > 0 && (i > 30000 && rng.IntN(3) > 0 || rng.IntN(3) == 0) {
			var ref uint32
			for r := range model { // any one
				ref = r
				break
			}
			if !x.del(model[ref], ref) {
				t.Fatalf("op %d: del %d not found", i, ref)
			}
			if x.del(model[ref], ref) {
				t.Fatalf("op %d: del %d twice", i, ref)
			}
			delete(model, ref)
		} else {
			h := rng.Uint32()
			if rng.IntN(2) == 0 {
				h = hashes[rng.IntN(len(hashes))]
			}
			x.put(h, next)
			model[next] = h
			next++
		}
		if i%1000 == 0 || i == 59999 {
			if err := checkTableModel(&x, model); err != nil {
				t.Fatalf("op %d: %v", i, err)
			}
		}
	}
	x.clear()
	if p := x.find(0); x.len() != 0 || p.next() != 0 {
		t.Fatal("clear left entries")
	}
}

func checkTableModel(x *table, model map[uint32]uint32) error {
	if x.len() != len(model) {
		return fmt.Errorf("%d entries, model has %d", x.len(), len(model))
	}
	byHash := map[uint32][]uint32{}
	for ref, h := range model {
		byHash[h] = append(byHash[h], ref)
	}
	for h, want := range byHash {
		var got []uint32
		for p := x.find(h); ; {
			ref := p.next()
			if ref == 0 {
				break
			}
			got = append(got, ref)
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			return fmt.Errorf("hash %#x: found %v, want %v", h, got, want)
		}
	}
	n := 0
	for i := range x.shards {
		s := &x.shards[i]
		if s.n > 0 && s.n*5 > len(s.slots)*4 {
			return fmt.Errorf("shard %d: %d entries in %d slots", i, s.n, len(s.slots))
		}
		n += s.n
	}
	if n != x.len() {
		return fmt.Errorf("shards count %d, table %d", n, x.len())
	}
	return nil
}

// A request's place in the slab is reused once it is forgotten; the order
// must not keep listing a key with a forgotten request. Here the holder of
// a key ends while a place lingers in its line, and is forgotten (ttl 1ms)
// long before the place goes (linger 1s): the key stays listed, with the
// place, and many new requests reuse the freed places meanwhile.
func TestForgottenListedRequestHandsOver(t *testing.T) {
	h := newHarness(t, Config{})
	g := h.granted("l", "k", "holder", ttl(time.Millisecond))
	tk := h.hold("l", "k", "waiter", wait(0))
	mustFail(t, tk, ErrNotGranted) // WAIT 0 on a held key: never joins
	tk = h.hold("l", "k", "waiter", wait(time.Microsecond))
	mustWait(t, tk)
	h.advance(time.Microsecond) // the WAIT runs out: the place lingers for 1s
	mustFail(t, tk, ErrNotGranted)
	h.advance(time.Millisecond) // the lease expires, and is forgotten 1ms later
	if _, err := h.m.Renew(g.LeaseID(), 0); err == nil {
		t.Fatal("renewed an expired lease")
	}
	h.advance(2 * time.Millisecond)
	if _, err := h.m.Renew(g.LeaseID(), 0); err == nil || err.Error() != ReasonUnknownLease {
		t.Fatalf("after the record went: %v", err)
	}
	for i := range 3000 {
		h.granted("m", strconv.Itoa(i), "m"+strconv.Itoa(i), ttl(time.Millisecond))
		if i%500 == 0 {
			h.advance(2 * time.Millisecond)
		}
	}
	if err := checkInvariants(h.m); err != nil {
		t.Fatal(err)
	}
	if _, entries := h.m.List("l", 0, 10); len(entries) != 1 || entries[0].Key != "k" || entries[0].Waiters != 1 || entries[0].Fence != 0 {
		t.Fatalf("LIST l: %+v, want k with its lingering place", entries)
	}
	h.advance(time.Second)
	if _, entries := h.m.List("l", 0, 10); len(entries) != 0 {
		t.Fatalf("LIST l after the linger: %+v", entries)
	}
	h.advance(time.Second)
	checkEmpty(t, h.m)
}

// Reqids are kept as 16 bytes when they are 32 lowercase hex characters,
// as they are otherwise: either way a reqid is its own and no other's.
func TestReqIDForms(t *testing.T) {
	h := newHarness(t, Config{})
	const hex = "0123456789abcdef0123456789abcdef"
	ids := []string{
		hex,
		"0123456789ABCDEF0123456789abcdef", // uppercase: kept as it is
		hex[:31] + "g",
		hex[:31],
		hex + "0",
		string(decodeOrDie(t, hex)), // its 16 bytes, sent as a reqid
		"",
	}
	grants := map[string]Grant{}
	for i, id := range ids {
		grants[id] = h.granted("l", strconv.Itoa(i), id)
	}
	for i, id := range ids {
		if g := h.granted("l", strconv.Itoa(i), id); g.LeaseID() != grants[id].LeaseID() {
			t.Fatalf("retry of %q got another lease", id)
		}
		mustFail(t, h.hold("l", "other", id), ErrReqIDInUse)
	}
	if err := checkInvariants(h.m); err != nil {
		t.Fatal(err)
	}
	h.m.mu.Lock()
	defer h.m.mu.Unlock()
	for _, id := range ids {
		k, hexForm := appendReqKey(nil, id)
		r := h.m.byReqKey(string(k), hexForm)
		if r == nil || r.reqID() != id || hexForm != (id == hex) {
			t.Fatalf("reqid %q: kept as %x (hex %v), read back as %+v", id, k, hexForm, r)
		}
	}
}

func decodeOrDie(t *testing.T, s string) []byte {
	b := make([]byte, len(s)/2)
	if !decodeHex(b, s) {
		t.Fatalf("%q is not lowercase hex", s)
	}
	return b
}

func TestParseLeaseID(t *testing.T) {
	const id = "00112233445566778899aabbccddeeff"
	if got, ok := parseLeaseID(id); !ok || (Grant{id: got}).LeaseID() != id {
		t.Fatalf("parse %q: %x %v", id, got, ok)
	}
	for _, bad := range []string{"", id[:31], id + "0", "00112233445566778899AABBCCDDEEFF", id[:31] + "g", id[:31] + "/", id[:31] + ":", id[:31] + "`", id[:31] + "\xff"} {
		if _, ok := parseLeaseID(bad); ok {
			t.Fatalf("parsed %q", bad)
		}
	}
}
