package lockmod

import (
	"slices"
	"testing"
)

type recorder struct{ events []any }

func (r *recorder) LeaseGranted(e GrantEvent) { r.events = append(r.events, e) }
func (r *recorder) LeaseEnded(e EndEvent)     { r.events = append(r.events, e) }

func TestObserver(t *testing.T) {
	rec := &recorder{}
	h := newHarness(t, Config{Observer: rec})
	a := h.granted("l", "k", "a", ttl(2*sec))
	b := h.hold("l", "k", "b", maxHold(sec))
	h.advance(2 * sec) // a expires; b is granted after waiting 2 s
	gb := mustGrant(t, b)
	h.advance(sec) // b is revoked at MAXHOLD
	c := h.granted("l", "k", "c")
	h.advance(500 * ms)
	h.m.Revoke("l", "k")
	d := h.granted("m", "x", "d")
	h.m.Release(d.LeaseID())
	want := []any{
		GrantEvent{Lock: "l", Key: "k", Fence: a.Fence},
		EndEvent{Lock: "l", Key: "k", Fence: a.Fence, Reason: ReasonExpired, Held: 2 * sec},
		GrantEvent{Lock: "l", Key: "k", Fence: gb.Fence, Waited: 2 * sec},
		EndEvent{Lock: "l", Key: "k", Fence: gb.Fence, Reason: ReasonMaxHold, Held: sec},
		GrantEvent{Lock: "l", Key: "k", Fence: c.Fence},
		EndEvent{Lock: "l", Key: "k", Fence: c.Fence, Reason: ReasonAdmin, Held: 500 * ms},
		GrantEvent{Lock: "m", Key: "x", Fence: d.Fence},
		EndEvent{Lock: "m", Key: "x", Fence: d.Fence, Reason: ReasonReleased},
	}
	if !slices.Equal(rec.events, want) {
		t.Fatalf("events:\n%+v\nwant\n%+v", rec.events, want)
	}
}
