package lockmod

import "testing"

// LOCK-06, LOCK-13: a request held in process without MAXHOLD has no
// deadline, so once granted from the line its WAIT's event must leave the
// event heap. Left there under a key it no longer has, it would sit at the
// heap's head with "never" and hide every lease due behind it: the key
// below would outlive its deadline.
func TestLOCK06_InProcessGrantFromLineLeavesTheEventHeap(t *testing.T) {
	h := newHarness(t, Config{})
	a := h.granted("l", "k1", "a", ttl(10*sec))
	b := h.hold("l", "k1", "b", inProcess(), wait(5*sec)) // its WAIT's event heads the heap
	mustWait(t, b)
	h.granted("l", "k2", "d", ttl(6*sec))
	if err := h.m.Release(a.LeaseID()); err != nil {
		t.Fatal(err)
	}
	if g := mustGrant(t, b); g.Ending == nil {
		t.Fatal("b was not granted in process")
	}
	if err := checkInvariants(h.m); err != nil {
		t.Fatal(err)
	}
	h.advance(7 * sec)
	if info, ok := h.m.Info("l", "k2"); ok {
		t.Fatalf("k2 is %+v a second after its deadline, want it free", info)
	}
	if info, ok := h.m.Info("l", "k1"); !ok || !info.InProcess {
		t.Fatalf("k1 is %+v, %v: want b's lease held in process", info, ok)
	}
}
