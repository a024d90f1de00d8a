package lockmod

import "testing"

// Line shows who waits for a key, first first, with how long each has
// waited; a place whose WAIT ran out lingers (LOCK-08, SPEC §14).
func TestLineShowsWhoWaits(t *testing.T) {
	h := newHarness(t, Config{})
	owner := func(o string) opt { return func(r *HoldRequest) { r.Owner = o } }
	h.granted("l", "k", "r1")
	h.hold("l", "k", "r2", owner("second"))
	h.advance(100 * ms)
	h.hold("l", "k", "r3", owner("third"), wait(200*ms))
	h.advance(300 * ms) // r3's WAIT ran out: it lingers
	got := h.m.Line("l", "k")
	want := []Waiter{{Owner: "second", Waited: 400 * ms}, {Owner: "third", Waited: 300 * ms, Lingering: true}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("Line: %+v, want %+v", got, want)
	}
	if ws := h.m.Line("l", "free"); len(ws) != 0 {
		t.Fatalf("the line of a free key: %+v", ws)
	}
}
