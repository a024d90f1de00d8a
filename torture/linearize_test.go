package main

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// msAt is a time of a hand-made history: milliseconds after its start.
func msAt(ms float64) int64 { return int64(ms * float64(time.Millisecond)) }

// Check (d) must see a history that is not linearizable, and pass one that
// is, faults included: each case is a small raw command history as the
// proxy records it, with its servers' restarts and kills.
func TestLinearizabilityFindsViolations(t *testing.T) {
	const e1, e2 = 1 << 32, 2 << 32 // fences of epochs 1 and 2
	const idA, idB = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	wire := func(server int64, start, end float64, result, reply string, args ...string) Event {
		e := Event{Kind: evWire, Client: "proxy", Target: server, Start: msAt(start), End: msAt(end), Result: result, Reply: reply, Args: args}
		if result == "unknown" {
			e.End = 0
		}
		return e
	}
	hold := func(server int64, start, end float64, reqid, result, reply string) Event {
		return wire(server, start, end, result, reply, "LOCK.HOLD", lockName, "k", reqid, "TTL", "1000", "WAIT", "500")
	}
	grant := func(id string, fence int64) string { return fmt.Sprintf("%s %d 1000", id, fence) }
	renew := func(server int64, start, end float64, id, result, reply string) Event {
		return wire(server, start, end, result, reply, "LOCK.RENEW", id)
	}
	release := func(server int64, start, end float64, id, result, reply string) Event {
		return wire(server, start, end, result, reply, "LOCK.RELEASE", id)
	}
	set := func(server int64, start, end float64, value string, fence int64, result, reply string) Event {
		return wire(server, start, end, result, reply, "SET", "counter:k", value, "FENCE", fmt.Sprint(fence))
	}
	get := func(server int64, start, end float64, result, reply string) Event {
		return wire(server, start, end, result, reply, "GET", "counter:k")
	}
	// Server 1 runs epoch 1 from 0 until its kill at 100 ms; server 2,
	// epoch 2, from 101 ms.
	servers := []Event{
		{Kind: evRestart, Target: 1, Start: msAt(0), End: msAt(0.5), Detail: "epoch 1"},
		{Kind: evFault, Start: msAt(100), Detail: "kill: SIGKILL"},
		{Kind: evRestart, Target: 2, Start: msAt(101), End: msAt(101.5), Detail: "epoch 2"},
	}
	for _, tc := range []struct {
		name   string
		events []Event
		want   string // a violation containing this; "" for none
	}{
		// The lease lock, per key and epoch: LOCK-01, LOCK-06, LOCK-10.
		{"grant, release, grant", []Event{
			hold(1, 1, 2, "r1", "ok", grant(idA, e1+1)), release(1, 3, 4, idA, "ok", "1"), hold(1, 5, 6, "r2", "ok", grant(idB, e1+2)),
		}, ""},
		{"two leases at once in one epoch", []Event{
			hold(1, 1, 2, "r1", "ok", grant(idA, e1+1)), hold(1, 10, 11, "r2", "ok", grant(idB, e1+2)),
		}, "operations on torture/k@epoch1 are not linearizable (locks)"},
		{"the second lease after the first ran out", []Event{
			hold(1, 1, 2, "r1", "ok", grant(idA, e1+1)), hold(1, 1003, 1004, "r2", "ok", grant(idB, e1+2)),
		}, ""},
		{"two leases at once across a restart", []Event{
			hold(1, 1, 2, "r1", "ok", grant(idA, e1+1)), hold(2, 110, 111, "r2", "ok", grant(idB, e2+1)),
		}, ""},
		{"a renewal by a server that never granted the lease", []Event{
			hold(1, 1, 2, "r1", "ok", grant(idA, e1+1)), renew(2, 110, 111, idA, "ok", "1000"),
		}, "operations on torture/k@epoch2 are not linearizable"},
		{"a renewal there answered LOST", []Event{
			hold(1, 1, 2, "r1", "ok", grant(idA, e1+1)), renew(2, 110, 111, idA, "error", "LOST unknown lease"),
		}, ""},
		{"null on a free key", []Event{hold(1, 1, 501, "r2", "nil", "")}, "not linearizable"},
		{"null on a key held by a grant lost on a cut", []Event{
			hold(1, 1, 0, "r1", "unknown", ""), hold(1, 10, 510, "r2", "nil", ""),
		}, ""},
		{"null explained by a lost grant only if its fence's turn had come", []Event{
			hold(1, 1, 2, "r0", "ok", grant(idA, e1+1)), release(1, 3, 4, idA, "ok", "1"),
			hold(1, 5, 0, "r1", "unknown", ""), hold(1, 10, 510, "r2", "nil", ""), hold(1, 520, 521, "r3", "ok", grant(idB, e1+2)),
		}, "not linearizable"},
		{"null explained by a lost grant of a fence nobody saw", []Event{
			hold(1, 1, 2, "r0", "ok", grant(idA, e1+1)), release(1, 3, 4, idA, "ok", "1"),
			hold(1, 5, 0, "r1", "unknown", ""), hold(1, 10, 510, "r2", "nil", ""), hold(1, 1520, 1521, "r3", "ok", grant(idB, e1+3)),
		}, ""},
		{"a fence of another epoch", []Event{hold(2, 110, 111, "r1", "ok", grant(idA, e1+1))}, "LOCK-02: the server of epoch 2 granted"},
		// The counter, across restarts: LOCK-12, and nothing acknowledged
		// is lost (SPEC §7, --fsync always).
		{"read your write", []Event{set(1, 1, 2, "1:5", 5, "ok", "OK"), get(1, 3, 4, "ok", "1:5")}, ""},
		{"a read goes back", []Event{
			set(1, 1, 2, "1:5", 5, "ok", "OK"), get(1, 3, 4, "nil", ""),
		}, "operations on counter:k are not linearizable (counters)"},
		{"an acknowledged write survives a restart", []Event{set(1, 1, 2, "1:5", 5, "ok", "OK"), get(2, 110, 111, "ok", "1:5")}, ""},
		{"an acknowledged write lost to a restart", []Event{set(1, 1, 2, "1:5", 5, "ok", "OK"), get(2, 110, 111, "nil", "")}, "counter:k are not linearizable"},
		{"an unanswered write that was not done", []Event{set(1, 1, 0, "1:5", 5, "unknown", ""), get(2, 110, 111, "nil", "")}, ""},
		{"an unanswered write that was done", []Event{set(1, 1, 0, "1:5", 5, "unknown", ""), get(2, 110, 111, "ok", "1:5")}, ""},
		{"an older fence accepted", []Event{
			set(1, 1, 2, "1:6", 6, "ok", "OK"), set(1, 3, 4, "1:5", 5, "ok", "OK"),
		}, "counter:k are not linearizable"},
		{"an older fence refused", []Event{
			set(1, 1, 2, "1:6", 6, "ok", "OK"), set(1, 3, 4, "1:5", 5, "error", "FENCED a newer fence has written this key"),
		}, ""},
		{"the final read misses a write", []Event{
			set(1, 1, 2, "1:5", 5, "ok", "OK"),
			{Kind: evFinal, Key: "k", Start: msAt(200), End: msAt(201), Result: "nil"},
		}, "counter:k are not linearizable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := check(append(append([]Event(nil), servers...), tc.events...), map[string]string{}, time.Minute)
			wantViolation(t, r, tc.want)
			if tc.want != "" && strings.Contains(tc.want, "linearizable") {
				files := r.writeVisualizations(t.TempDir() + "/history")
				if len(files) == 0 {
					t.Fatalf("no visualization written")
				}
				if b, err := os.ReadFile(files[0]); err != nil || !strings.Contains(string(b), "<html") {
					t.Fatalf("visualization %s: %v", files[0], err)
				}
			}
		})
	}
}

// A partition porcupine has no time to decide is a violation, never a pass.
func TestLinearizabilityUndecidedFails(t *testing.T) {
	events := []Event{
		{Kind: evRestart, Target: 1, Start: 1, End: 2, Detail: "epoch 1"},
		{Kind: evWire, Target: 1, Start: 3, End: 4, Result: "ok", Reply: "OK", Args: []string{"SET", "counter:k", "1:5", "FENCE", "5"}},
	}
	r := check(events, map[string]string{}, time.Nanosecond)
	if got := strings.Join(r.Violations, "\n"); !strings.Contains(got, "undecided is no pass") || r.LinCounters.Undecided != 1 {
		t.Fatalf("want the partition undecided, and a violation; got %+v:\n%s", r.LinCounters, got)
	}
}

// The proxy records what passed it: each command with times that enclose
// the moment the server got it, the reply it saw, even one it swallowed,
// and "unknown" for one whose connection was cut before its reply.
func TestProxyRecordsTheWire(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var mu sync.Mutex
	got := map[string]int64{} // a command -> when the server had read it
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer nc.Close()
				br := bufio.NewReader(nc)
				for {
					args, err := readRequest(br)
					if err != nil {
						return
					}
					mu.Lock()
					got[strings.Join(args, " ")] = mono()
					mu.Unlock()
					switch strings.ToLower(args[0]) {
					case "get":
						nc.Write([]byte("$3\r\n1:5\r\n"))
					case "set":
						nc.Write([]byte("+OK\r\n"))
					case "lock.hold":
						nc.Write([]byte("*3\r\n$32\r\naaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n:4294967297\r\n:1000\r\n"))
					}
					// LOCK.RENEW: no reply, ever.
				}
			}()
		}
	}()

	h := &History{}
	p, err := startProxy(h, new(atomic.Int64), nil)
	if err != nil {
		t.Fatal(err)
	}
	gen := p.setTarget(ln.Addr().String())
	dial := func() (net.Conn, *bufio.Reader) {
		nc, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		return nc, bufio.NewReader(nc)
	}
	send := func(nc net.Conn, args ...string) {
		var b strings.Builder
		fmt.Fprintf(&b, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
		if _, err := nc.Write([]byte(b.String())); err != nil {
			t.Fatal(err)
		}
	}
	nc, br := dial()
	send(nc, "GET", "counter:k")
	if v, err := readReply(br); err != nil || v.str != "1:5" {
		t.Fatalf("GET: %v %v", v, err)
	}
	send(nc, "LOCK.HOLD", lockName, "k", "r1", "TTL", "1000", "WAIT", "0")
	if _, err := readReply(br); err != nil {
		t.Fatal(err)
	}
	p.swallowSome(rand.New(rand.NewPCG(1, 2)), 1)
	send(nc, "SET", "counter:k", "2:5", "FENCE", "5")
	if _, err := readReply(br); err == nil {
		t.Fatal("the swallowed reply came")
	}
	nc.Close()
	nc, _ = dial()
	send(nc, "LOCK.RENEW", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")
	for {
		mu.Lock()
		_, arrived := got["LOCK.RENEW aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"]
		mu.Unlock()
		if arrived {
			break
		}
		time.Sleep(time.Millisecond)
	}
	p.cut(rand.New(rand.NewPCG(1, 2)), 1)
	nc.Close()
	p.close()

	want := map[string]string{
		"GET counter:k":                               "ok 1:5",
		"LOCK.HOLD torture k r1 TTL 1000 WAIT 0":      "ok aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa 4294967297 1000",
		"SET counter:k 2:5 FENCE 5":                   "ok OK",
		"LOCK.RENEW aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa": "unknown ",
	}
	grants := 0
	for _, e := range h.Events() {
		if e.Kind == evGrant {
			grants++
		}
		if e.Kind != evWire {
			continue
		}
		cmd := strings.Join(e.Args, " ")
		if w, ok := want[cmd]; !ok || e.Result+" "+e.Reply != w {
			t.Errorf("%s: recorded %s %q, want %q", cmd, e.Result, e.Reply, w)
		}
		delete(want, cmd)
		if e.Target != gen {
			t.Errorf("%s: server %d, want %d", cmd, e.Target, gen)
		}
		if at := got[cmd]; e.Start > at || (e.Result != "unknown" && e.End < at) {
			t.Errorf("%s: recorded from %d to %d, but the server read it at %d", cmd, e.Start, e.End, at)
		}
	}
	if len(want) > 0 || grants != 1 {
		t.Errorf("not recorded: %v; %d grants recorded, want 1", want, grants)
	}
}
