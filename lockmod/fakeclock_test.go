package lockmod

import (
	"testing"
	"time"
)

func TestFakeClock(t *testing.T) {
	c := NewFakeClock(start)
	var got []string
	at := func(name string) func() {
		return func() { got = append(got, name+"@"+c.Now().Sub(start).String()) }
	}
	c.AfterFunc(3*sec, at("c"))
	c.AfterFunc(sec, at("a"))
	stopped := c.AfterFunc(2*sec, at("never"))
	c.AfterFunc(sec, at("a2")) // same deadline: in the order armed
	c.AfterFunc(sec, func() {
		// A callback may arm more; one due within the window runs too.
		c.AfterFunc(500*ms, at("b"))
		c.AfterFunc(10*sec, at("late"))
	})
	if !stopped.Stop() || stopped.Stop() {
		t.Fatal("Stop reports wrongly")
	}
	c.Advance(3 * sec)
	want := []string{"a@1s", "a2@1s", "b@1.5s", "c@3s"}
	if len(got) != len(want) {
		t.Fatalf("ran %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("ran %v, want %v", got, want)
		}
	}
	if now := c.Now(); !now.Equal(start.Add(3 * sec)) {
		t.Fatalf("now %v", now)
	}
	if c.Pending() != 1 {
		t.Fatalf("pending %d, want 1", c.Pending())
	}
	zero := false
	c.AfterFunc(0, func() { zero = true })
	if zero {
		t.Fatal("AfterFunc(0) ran inside AfterFunc")
	}
	c.Advance(0)
	if !zero {
		t.Fatal("AfterFunc(0) did not run on Advance(0)")
	}
}

func TestSystemClock(t *testing.T) {
	c := SystemClock()
	done := make(chan struct{})
	c.AfterFunc(time.Millisecond, func() { close(done) })
	<-done
	if c.AfterFunc(time.Hour, func() {}).Stop() != true {
		t.Fatal("stop of a pending timer")
	}
}
