package kv

import (
	"errors"
	"testing"
	"time"
)

// XXH3-64 (seed 0) test vectors, as xxHash's own tools print them.
func TestDigestVectors(t *testing.T) {
	for in, want := range map[string]string{
		"":            "2d06800538d394c2",
		"a":           "e6c632b61e964e1f",
		"42":          "1217cb28c0ef2191",
		"Hello World": "e34615aade2e6333",
	} {
		if got := DigestHex(Digest([]byte(in))); got != want {
			t.Errorf("digest of %q = %s, want %s", in, got, want)
		}
	}
	if got := DigestHex(0xabc); got != "0000000000000abc" {
		t.Errorf("DigestHex pads to 16 digits: %s", got)
	}
	for in, ok := range map[string]bool{
		"e6c632b61e964e1f": true, "E6C632B61E964E1F": true, "e6c632b61e964e1": false,
		"e6c632b61e964e1f0": false, "g6c632b61e964e1f": false, "": false, "0x6c632b61e964e1": false,
	} {
		if _, got := ParseDigest([]byte(in)); got != ok {
			t.Errorf("ParseDigest(%q) ok = %v, want %v", in, got, ok)
		}
	}
	if d, _ := ParseDigest([]byte("E6C632B61E964E1F")); d != Digest([]byte("a")) {
		t.Errorf("an uppercase digest is the same digest")
	}
}

// SET … IF*: the condition is judged on the value the write replaces.
func TestSetCondition(t *testing.T) {
	ts := openTest(t)
	da := Digest([]byte("a"))
	set := func(key, value string, k Condition, get bool) SetResult {
		t.Helper()
		res, err := ts.Set([]byte(key), []byte(value), SetOptions{Cond: k, Get: get})
		if err != nil {
			t.Fatalf("SET %s %s %+v: %v", key, value, k, err)
		}
		return res
	}
	// A missing key: IFEQ and IFDEQ write nothing, IFNE and IFDNE create it.
	for _, k := range []Condition{{Kind: IfEq, Value: []byte("a")}, {Kind: IfDigestEq, Digest: da}} {
		if set("k", "x", k, false).Written {
			t.Errorf("%+v wrote a missing key", k)
		}
		ts.mustMissing("k")
	}
	if !set("n1", "x", Condition{Kind: IfNe, Value: []byte("x")}, false).Written {
		t.Errorf("IFNE did not create a missing key")
	}
	ts.mustGet("n1", "x")
	if !set("n2", "x", Condition{Kind: IfDigestNe, Digest: Digest([]byte("x"))}, false).Written {
		t.Errorf("IFDNE did not create a missing key")
	}
	ts.mustGet("n2", "x")

	ts.set("k", "a")
	steps := []struct {
		k     Condition
		write bool
	}{
		{Condition{Kind: IfEq, Value: []byte("b")}, false},
		{Condition{Kind: IfEq, Value: []byte("a")}, true},
		{Condition{Kind: IfNe, Value: []byte("a")}, false},
		{Condition{Kind: IfNe, Value: []byte("b")}, true},
		{Condition{Kind: IfDigestEq, Digest: da + 1}, false},
		{Condition{Kind: IfDigestEq, Digest: da}, true},
		{Condition{Kind: IfDigestNe, Digest: da}, false},
		{Condition{Kind: IfDigestNe, Digest: da + 1}, true},
	}
	for _, st := range steps {
		ts.set("k", "a")
		res := set("k", "new", st.k, true)
		if res.Written != st.write || !res.OldExists || string(res.Old) != "a" {
			t.Errorf("%+v: %+v, want written %v and old a", st.k, res, st.write)
		}
		if st.write {
			ts.mustGet("k", "new")
		} else {
			ts.mustGet("k", "a")
		}
	}
	// The TTL options apply as to any SET that writes.
	if _, err := ts.Set([]byte("k"), []byte("b"), SetOptions{Cond: Condition{Kind: IfEq, Value: []byte("new")},
		Expiry: Expiry{Mode: ExpiryAt, At: ts.clock.ms(time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	if ttl := ts.ttl("k"); ttl != time.Hour.Milliseconds() {
		t.Errorf("TTL after SET IFEQ EX = %d", ttl)
	}
}

// DELEX and DELIFEQ delete only when the condition holds; without one,
// DELEX is DEL of one key of any type.
func TestDelIf(t *testing.T) {
	ts := openTest(t)
	del := func(key string, k Condition) bool {
		t.Helper()
		ok, err := ts.DelIf([]byte(key), k)
		if err != nil {
			t.Fatalf("DELEX %s %+v: %v", key, k, err)
		}
		return ok
	}
	da := Digest([]byte("a"))
	for _, k := range []Condition{{}, {Kind: IfEq}, {Kind: IfNe}, {Kind: IfDigestEq}, {Kind: IfDigestNe}} {
		if del("missing", k) {
			t.Errorf("%+v deleted a missing key", k)
		}
	}
	for _, st := range []struct {
		k   Condition
		del bool
	}{
		{Condition{}, true},
		{Condition{Kind: IfEq, Value: []byte("b")}, false},
		{Condition{Kind: IfEq, Value: []byte("a")}, true},
		{Condition{Kind: IfNe, Value: []byte("a")}, false},
		{Condition{Kind: IfNe, Value: []byte("b")}, true},
		{Condition{Kind: IfDigestEq, Digest: da + 1}, false},
		{Condition{Kind: IfDigestEq, Digest: da}, true},
		{Condition{Kind: IfDigestNe, Digest: da}, false},
		{Condition{Kind: IfDigestNe, Digest: da + 1}, true},
	} {
		ts.set("k", "a")
		if got := del("k", st.k); got != st.del {
			t.Errorf("%+v: deleted %v, want %v", st.k, got, st.del)
		}
		if st.del {
			ts.mustMissing("k")
		} else {
			ts.mustGet("k", "a")
		}
	}
	// A collection: DELEX without a condition deletes it, as DEL does.
	ts.plant("h", TypeHash, 2, 0)
	if _, err := ts.DelIf([]byte("h"), Condition{Kind: IfEq}); !errors.Is(err, ErrWrongType) {
		t.Errorf("DELEX h IFEQ = %v, want WRONGTYPE", err)
	}
	if !del("h", Condition{}) {
		t.Errorf("DELEX h did not delete a hash")
	}
	ts.mustMissing("h")
	if d, ok, err := ts.DigestOf([]byte("none")); ok || err != nil || d != 0 {
		t.Errorf("DIGEST of a missing key = %x, %v, %v", d, ok, err)
	}
	ts.set("k", "a")
	if d, ok, err := ts.DigestOf([]byte("k")); !ok || err != nil || d != da {
		t.Errorf("DIGEST k = %x, %v, %v", d, ok, err)
	}
	ts.checkCounters()
}
