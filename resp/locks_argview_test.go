package resp_test

// Review of resp/locks.go passing LOCK.HOLD's arguments to the lock module
// without a copy (argView): whatever the module keeps (the key's name, the
// reqid) must survive the reader's buffer being written over, both after a
// HOLD granted at once (the next read lands on the same bytes) and while a
// blocked HOLD's watcher reads ahead behind it.

import (
	"strings"
	"testing"

	"github.com/tenure-db/tenure"
	"github.com/tenure-db/tenure/resp/resptest"
)

func TestHoldKeepsNoViewOfTheReadBuffer(t *testing.T) {
	t.Parallel()
	s := resptest.Start(t, tenure.Options{})
	rdb := s.Client()

	// Granted at once. The connection's next read goes to the start of its
	// buffer, where this HOLD's arguments were: same lengths, other bytes.
	c := lkDial(t, s)
	first := lkGranted(t, c.do("LOCK.HOLD", "rv", "key-AAAA", "req-AAAA", "TTL", "60000"))
	second := lkGranted(t, c.do("LOCK.HOLD", "rv", "key-BBBB", "req-BBBB", "TTL", "60000"))
	if first.ID == second.ID {
		t.Fatal("two HOLDs, one lease")
	}
	// Waiting. The watcher reads 200 KB of pipelined commands behind it,
	// growing the buffer; afterwards the connection reads on, compacting.
	c2 := lkDial(t, s)
	blocker := lkGranted(t, c2.do("LOCK.HOLD", "rv", "key-CCCC", "holder-CC", "TTL", "60000"))
	w := lkDial(t, s)
	var b []byte
	b = append(b, lkCommand("LOCK.HOLD", "rv", "key-CCCC", "req-CCCC", "TTL", "60000")...)
	pad := strings.Repeat("Z", 1000)
	for range 200 {
		b = append(b, lkCommand("ECHO", pad)...)
	}
	go w.nc.Write(b)
	lkBlocked(t, rdb, 1)
	lkExpect(t, "release", lkDo(t, rdb, "LOCK.RELEASE", blocker.ID), ":1")
	third := lkGranted(t, w.reply())
	for range 200 {
		if got := w.reply(); got != pad {
			t.Fatalf("ECHO behind the HOLD: %s", lkFormat(got))
		}
	}
	for range 50 { // written over again
		lkExpect(t, "ECHO", lkFormat(w.do("ECHO", "key-DDDD")), `"key-DDDD"`)
	}

	_, entries := lockList(t, rdb, "rv", "COUNT", "100")
	keys := map[string]bool{}
	for _, e := range entries {
		keys[e.key] = true
	}
	for _, k := range []string{"key-AAAA", "key-BBBB", "key-CCCC"} {
		if !keys[k] {
			t.Fatalf("LOCK.LIST rv: %v, want %s among them", entries, k)
		}
	}
	if len(entries) != 3 {
		t.Fatalf("LOCK.LIST rv: %v, want 3 keys", entries)
	}
	// LOCK-03 on another connection: each reqid is remembered as sent.
	o := lkDial(t, s)
	for _, x := range []struct {
		key, reqid string
		want       lkLease
	}{{"key-AAAA", "req-AAAA", first}, {"key-BBBB", "req-BBBB", second}, {"key-CCCC", "req-CCCC", third}} {
		again := lkGranted(t, o.do("LOCK.HOLD", "rv", x.key, x.reqid))
		if again.ID != x.want.ID || again.Fence != x.want.Fence {
			t.Fatalf("retry of %s: %+v, want %+v", x.reqid, again, x.want)
		}
		lkExpect(t, "reqid on another key", o.doS("LOCK.HOLD", "rv", "other", x.reqid),
			"-ERR request id is already used for another lock or key")
	}
}
