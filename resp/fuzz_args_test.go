package resp_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenure-db/tenure"
	"github.com/tenure-db/tenure/resp"
	"github.com/tenure-db/tenure/resp/resptest"
)

// FuzzCommandArgs sends arbitrary arguments to the lock commands and to SET,
// every option of each (SPEC §3), over a real connection to an in-process
// server, one request at a time. For every request: the server does not
// panic, its reply is one well-formed RESP2 reply, an error reply starts
// with an uppercase code word, and a granted LOCK.HOLD has the shape SPEC §3
// gives it. After every input the server still answers PING.
//
// An input is lines of requests, each words separated by single spaces. A
// line whose first word is not one of the commands fuzzed here is sent as
// the arguments of one of them, picked by the line's length. role says how
// the connection is admitted (none, read, write, admin), so NOAUTH and
// NOPERM are on the path too. With contend set, the key of every LOCK.HOLD
// is held by another client first, so the request waits in line.
//
// A LOCK.HOLD may rightly block: when a request has not been answered within
// a moment, an admin connection revokes its (lock, key), which grants the
// next in line, and so on; a request still unanswered after 5 s is a hang.
// After each input the keys it held are revoked, so inputs do not wait on
// each other.
func FuzzCommandArgs(f *testing.F) {
	panics := &panicLog{}
	users, err := resp.ParseUsers(strings.NewReader(
		"user boss admin sha256:" + sha256hex("a-pw") +
			"\nuser writer write sha256:" + sha256hex("w-pw") +
			"\nuser reader read sha256:" + sha256hex("r-pw")))
	if err != nil {
		f.Fatal(err)
	}
	srv := resptest.Start(f, tenure.Options{
		Logger: slog.New(panics),
		Limits: resp.Limits{MaxBulkLen: 1 << 20},
		Users:  users,
	})
	admin := &fzConn{addr: srv.Addr, auth: []string{"AUTH", "boss", "a-pw"}}
	f.Cleanup(admin.close)

	for _, s := range fzSeeds {
		for role := range uint8(4) {
			f.Add([]byte(s), role, false)
		}
		f.Add([]byte(s), uint8(3), true)
	}

	var contenders atomic.Int64
	f.Fuzz(func(t *testing.T, data []byte, role uint8, contend bool) {
		c := &fzConn{addr: srv.Addr}
		switch role % 4 {
		case 1:
			c.auth = []string{"AUTH", "reader", "r-pw"}
		case 2:
			c.auth = []string{"AUTH", "writer", "w-pw"}
		case 3:
			c.auth = []string{"AUTH", "boss", "a-pw"}
		}
		defer c.close()
		var held [][2][]byte // (lock, key) of every LOCK.HOLD sent
		defer func() {
			for _, lk := range held {
				admin.do(t, "LOCK.REVOKE", lk[0], lk[1])
			}
		}()
		lines := bytes.Split(data, []byte("\n"))
		if len(lines) > 8 {
			lines = lines[:8]
		}
		for _, line := range lines {
			args := fzArgs(line)
			if c.gone {
				break // the server closed it: a protocol error, as it should
			}
			isHold := strings.EqualFold(string(args[0]), "lock.hold") && len(args) >= 4
			if isHold {
				held = append(held, [2][]byte{args[1], args[2]})
				if contend {
					id := fmt.Sprintf("fuzz-contender-%d", contenders.Add(1))
					admin.do(t, "LOCK.HOLD", args[1], args[2], []byte(id), []byte("WAIT"), []byte("0"))
				}
			}
			unblock := func() {
				if isHold {
					admin.do(t, "LOCK.REVOKE", args[1], args[2])
				}
			}
			v, err := c.send(t, args, unblock)
			if err != nil {
				t.Fatalf("%q: %v", fzShow(args), err)
			}
			if msg := fzCheckReply(args, v); msg != "" {
				t.Fatalf("%q: reply %s: %s", fzShow(args), v, msg)
			}
			if p := panics.take(); p != "" {
				t.Fatalf("the server panicked on %q:\n%s", fzShow(args), p)
			}
		}
		if !c.gone {
			if v, err := c.send(t, [][]byte{[]byte("PING")}, nil); err != nil || v.String() != "+PONG" {
				t.Fatalf("after %q: PING on the same connection: %s, %v", data, v, err)
			}
		}
		if v := admin.do(t, "PING"); v.String() != "+PONG" {
			t.Fatalf("after %q: PING: %s", data, v)
		}
	})
}

// fzCommands are the commands fuzzed; a line that names none of them is
// given to one of them.
var fzCommands = []string{"LOCK.HOLD", "LOCK.RENEW", "LOCK.RELEASE", "LOCK.INFO", "LOCK.REVOKE", "LOCK.LIST", "LOCK.HOLDERS", "LOCK.EVENTS", "SET", "DELEX", "DIGEST", "DELIFEQ"}

func fzArgs(line []byte) [][]byte {
	args := bytes.Split(line, []byte(" "))
	for _, name := range fzCommands {
		if strings.EqualFold(string(args[0]), name) {
			return args
		}
	}
	name := fzCommands[len(line)%len(fzCommands)]
	if len(line) == 0 {
		return [][]byte{[]byte(name)}
	}
	return append([][]byte{[]byte(name)}, args...)
}

// fzSeeds walk every option of every fuzzed command, in range, out of
// range, repeated, misspelt and in other cases, and the bytes that are
// easy to get wrong.
var fzSeeds = []string{
	"LOCK.HOLD l k r",
	"LOCK.HOLD l k r TTL 1000 WAIT 0 MAXHOLD 1000",
	"LOCK.HOLD l k r ttl 3600000 wait 1 maxhold 86400000",
	"LOCK.HOLD l k r TTL 999\nLOCK.HOLD l k r TTL 3600001\nLOCK.HOLD l k r TTL -1\nLOCK.HOLD l k r TTL 1e3",
	"LOCK.HOLD l k r MAXHOLD 999\nLOCK.HOLD l k r MAXHOLD 86400001\nLOCK.HOLD l k r MAXHOLD 0x10",
	"LOCK.HOLD l k r WAIT -1\nLOCK.HOLD l k r WAIT 1099511627777\nLOCK.HOLD l k r WAIT 9223372036854775808",
	"LOCK.HOLD l k r TTL 1000 TTL 1000\nLOCK.HOLD l k r WAIT\nLOCK.HOLD l k r NOPE 1\nLOCK.HOLD l k r WAIT 0 WAIT 0",
	"LOCK.HOLD l k r1 WAIT 0\nLOCK.HOLD l k r2 WAIT 0\nLOCK.HOLD l k r2 WAIT 10\nLOCK.HOLD l k r3",
	"LOCK.HOLD l k r\nLOCK.HOLD l k r\nLOCK.HOLD l other r\nLOCK.HOLD other k r",
	"LOCK.HOLD  k r\nLOCK.HOLD l  r\nLOCK.HOLD l k \nLOCK.HOLD l k",
	"LOCK.HOLD " + strings.Repeat("L", 257) + " k r\nLOCK.HOLD l " + strings.Repeat("K", 1025) + " r\nLOCK.HOLD l k " + strings.Repeat("R", 65),
	"LOCK.HOLD " + strings.Repeat("L", 256) + " " + strings.Repeat("K", 1024) + " " + strings.Repeat("R", 64),
	"LOCK.HOLD \x00 \xff \r\nLOCK.INFO \x00 \xff",
	"LOCK.RENEW 0123456789abcdef0123456789abcdef\nLOCK.RENEW x TTL 1000\nLOCK.RENEW x TTL 999\nLOCK.RENEW x ttl\nLOCK.RENEW x WAIT 1000\nLOCK.RENEW x TTL 1000 TTL 1000",
	"LOCK.HOLD l k r MAXHOLD 1000\nLOCK.RELEASE x\nLOCK.RELEASE\nLOCK.RELEASE a b",
	"LOCK.INFO l k\nLOCK.INFO l\nLOCK.INFO l k extra",
	"LOCK.REVOKE l k\nLOCK.REVOKE l\nLOCK.REVOKE l k x",
	"LOCK.HOLD l k r LIMIT 3 OWNER w\nLOCK.HOLD l k r2 LIMIT 2\nLOCK.HOLD l k r3 SHARED\nLOCK.HOLD l k r4 LIMIT 3 SHARED\nLOCK.HOLD l k r5 LIMIT 0\nLOCK.HOLD l k r6 LIMIT 65537\nLOCK.HOLD l k r7 OWNER",
	"LOCK.HOLD l s r SHARED\nLOCK.HOLD l s r2 SHARED OWNER \x00\nLOCK.HOLDERS l s\nLOCK.HOLDERS l\nLOCK.REVOKE l s FENCE 4294967297\nLOCK.REVOKE l s FENCE 0\nLOCK.REVOKE l s FENCE",
	"LOCK.HOLD l k r OWNER w\nLOCK.EVENTS\nLOCK.EVENTS l\nLOCK.EVENTS l COUNT 1\nLOCK.EVENTS COUNT 2\nLOCK.EVENTS l COUNT 0\nLOCK.EVENTS l COUNT x\nLOCK.EVENTS COUNT\nLOCK.EVENTS l COUNT 1 COUNT 1\nLOCK.EVENTS \x00",
	"LOCK.LIST l\nLOCK.LIST l CURSOR 0 COUNT 10\nLOCK.LIST l COUNT 0\nLOCK.LIST l COUNT -1\nLOCK.LIST l CURSOR x\nLOCK.LIST l COUNT 1 COUNT 1\nLOCK.LIST l CURSOR",
	"SET k v\nSET k v NX\nSET k v XX\nSET k v NX XX\nSET k v GET\nSET k v KEEPTTL",
	"SET k v EX 10\nSET k v PX 100\nSET k v EXAT 4102444800\nSET k v PXAT 4102444800000\nSET k v EX 0\nSET k v PX -1\nSET k v EX 10 PX 10\nSET k v EX 9223372036854775807",
	"SET k v FENCE 1\nSET k v FENCE 2\nSET k v FENCE 1\nSET k v FENCE 0\nSET k v FENCE -1\nSET k v FENCE 01\nSET k v FENCE 18446744073709551615\nSET k v FENCE 18446744073709551616",
	"SET k v FENCE 5 FENCE 6\nSET k v FENCE\nSET k v fence 7 nx get px 100\nSET k v GET FENCE 8 KEEPTTL XX",
	"SET k\nSET\nSET k v EX\nSET k v \x00NX\nSET k v ex\x00tra 5",
	"SET k a\nSET k b IFEQ a\nSET k c IFNE c GET\nSET k v IFDEQ 0123456789abcdef\nSET k v IFDNE 0123456789ABCDEF PX 100\nSET k v IFDEQ xyz\nSET k v IFEQ a IFNE b\nSET k v NX IFEQ a\nSET k v IFEQ",
	"SET k a\nDIGEST k\nDELEX k IFDEQ 0123456789abcdef\nDELEX k IFEQ a\nDELEX k\nDELEX k IFNE\nDELEX k IFDNE 0\nDELEX k IFEQ a IFEQ a\nDELIFEQ k a\nDELIFEQ k\nDIGEST",
	"LOCK.HOLD l k r\nSET k v FENCE 4294967297\nSET k v FENCE 4294967296",
	"lock.hold l k r Ttl 1000 wAiT 0\nLock.Info l k\nlock.release x",
}

// fzConn is a raw connection that sends one request at a time and reads
// its reply strictly.
type fzConn struct {
	addr string
	auth []string
	nc   net.Conn
	br   *bufio.Reader
	gone bool // the server closed it
}

func (c *fzConn) close() {
	if c.nc != nil {
		c.nc.Close()
		c.nc = nil
	}
}

func (c *fzConn) dial(t *testing.T) {
	t.Helper()
	nc, err := net.Dial("tcp", c.addr)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	c.nc, c.br = nc, bufio.NewReader(nc)
	if c.auth != nil {
		var args [][]byte
		for _, a := range c.auth {
			args = append(args, []byte(a))
		}
		if v, err := c.roundTrip(args, nil); err != nil || v.String() != "+OK" {
			t.Fatalf("AUTH: %s, %v", v, err)
		}
	}
}

// do sends a request on a connection that must work, redialling once if
// the server closed it.
func (c *fzConn) do(t *testing.T, args ...any) fzReply {
	t.Helper()
	var b [][]byte
	for _, a := range args {
		switch a := a.(type) {
		case string:
			b = append(b, []byte(a))
		case []byte:
			b = append(b, a)
		}
	}
	if c.nc == nil {
		c.dial(t)
	}
	v, err := c.roundTrip(b, nil)
	if err != nil {
		t.Fatalf("%q: %v", fzShow(b), err)
	}
	if msg := fzCheckReply(b, v); msg != "" {
		t.Fatalf("%q: reply %s: %s", fzShow(b), v, msg)
	}
	return v
}

// send is do for the connection under test: the server may close it (a
// protocol error); then gone is set and the reply read before it is
// returned.
func (c *fzConn) send(t *testing.T, args [][]byte, unblock func()) (fzReply, error) {
	t.Helper()
	if c.nc == nil {
		c.dial(t)
	}
	v, err := c.roundTrip(args, unblock)
	if errors.Is(err, io.EOF) && v.kind == '-' {
		c.gone = true
		return v, nil
	}
	return v, err
}

func (c *fzConn) roundTrip(args [][]byte, unblock func()) (fzReply, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.nc.Write(b.Bytes()); err != nil {
		return fzReply{}, fmt.Errorf("write: %w", err)
	}
	// Wait for the reply's first byte, unblocking the request now and
	// then: it may rightly wait in line.
	give := time.Now().Add(5 * time.Second)
	for wait := 20 * time.Millisecond; ; wait = min(2*wait, 500*time.Millisecond) {
		c.nc.SetReadDeadline(time.Now().Add(wait))
		_, err := c.br.Peek(1)
		if err == nil {
			break
		}
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			return fzReply{}, fmt.Errorf("read: %w", err)
		}
		if time.Now().After(give) {
			return fzReply{}, fmt.Errorf("no reply within 5s")
		}
		if unblock != nil {
			unblock()
		}
	}
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	v, err := fzRead(c.br, 0)
	if err != nil {
		return v, err
	}
	if v.kind == '-' && strings.HasPrefix(v.str, "ERR Protocol error") {
		// The server closes the connection after a protocol error.
		if _, err := c.br.Peek(1); err != nil {
			return v, io.EOF
		}
		return v, errors.New("the connection stayed open after a protocol error")
	}
	return v, nil
}

// fzReply is one RESP2 reply.
type fzReply struct {
	kind  byte // + - : $ *
	str   string
	n     int64
	null  bool
	elems []fzReply
}

func (v fzReply) String() string {
	switch {
	case v.kind == 0:
		return "<none>"
	case v.null:
		return string(v.kind) + "-1"
	case v.kind == ':':
		return ":" + strconv.FormatInt(v.n, 10)
	case v.kind == '$':
		return strconv.Quote(v.str)
	case v.kind == '*':
		var parts []string
		for _, e := range v.elems {
			parts = append(parts, e.String())
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	return string(v.kind) + v.str
}

// fzRead reads one reply and fails on anything RESP2 does not allow:
// a line not ended by CRLF, a bad integer, a bulk string whose length is
// not what it says, a negative length other than -1, a type byte it does
// not know.
func fzRead(br *bufio.Reader, depth int) (fzReply, error) {
	if depth > 16 {
		return fzReply{}, errors.New("arrays nested deeper than 16")
	}
	line, err := br.ReadString('\n')
	if err != nil {
		return fzReply{}, fmt.Errorf("read: %w", err)
	}
	if !strings.HasSuffix(line, "\r\n") || len(line) < 3 {
		return fzReply{}, fmt.Errorf("line %q is not ended by CRLF", line)
	}
	body := line[1 : len(line)-2]
	if strings.ContainsAny(body, "\r\n") {
		return fzReply{}, fmt.Errorf("line %q holds CR or LF", line)
	}
	v := fzReply{kind: line[0]}
	switch v.kind {
	case '+', '-':
		v.str = body
		return v, nil
	case ':':
		if v.n, err = fzInt(body); err != nil {
			return v, err
		}
		return v, nil
	case '$', '*':
		n, err := fzInt(body)
		if err != nil {
			return v, err
		}
		switch {
		case n == -1:
			v.null = true
			return v, nil
		case n < 0:
			return v, fmt.Errorf("length %d", n)
		}
		if v.kind == '$' {
			if n > 64<<20 {
				return v, fmt.Errorf("bulk length %d", n)
			}
			b := make([]byte, n+2)
			if _, err := io.ReadFull(br, b); err != nil {
				return v, fmt.Errorf("bulk of %d: %w", n, err)
			}
			if string(b[n:]) != "\r\n" {
				return v, fmt.Errorf("bulk of %d not followed by CRLF", n)
			}
			v.str = string(b[:n])
			return v, nil
		}
		if n > 1<<20 {
			return v, fmt.Errorf("array length %d", n)
		}
		for range n {
			e, err := fzRead(br, depth+1)
			if err != nil {
				return v, err
			}
			v.elems = append(v.elems, e)
		}
		return v, nil
	}
	return v, fmt.Errorf("unknown reply type in %q", line)
}

// fzInt reads a RESP integer: an optional minus, then digits, no leading
// zero.
func fzInt(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || strconv.FormatInt(n, 10) != s {
		return 0, fmt.Errorf("%q is not a RESP integer", s)
	}
	return n, nil
}

var (
	fzErrorCode = regexp.MustCompile(`^[A-Z]+( |$)`)
	fzLeaseID   = regexp.MustCompile(`^[0-9a-f]{32}$`)
)

// fzCheckReply returns what is wrong with the reply to args, or "".
func fzCheckReply(args [][]byte, v fzReply) string {
	if v.kind == '-' {
		if !fzErrorCode.MatchString(v.str) {
			return "an error reply must start with an uppercase code word"
		}
		return ""
	}
	name := strings.ToLower(string(args[0]))
	switch name {
	case "lock.hold":
		if v.kind != '*' {
			return "LOCK.HOLD answers an array, null or an error"
		}
		if v.null {
			return ""
		}
		if len(v.elems) != 3 {
			return "a grant is an array of 3"
		}
		id, fence, ttl := v.elems[0], v.elems[1], v.elems[2]
		if id.kind != '$' || !fzLeaseID.MatchString(id.str) {
			return "the lease id is not 32 lowercase hex characters"
		}
		if fence.kind != ':' || fence.n <= 0 || fence.n>>32 == 0 {
			return "the fence is not a positive integer epoch<<32 + n"
		}
		if ttl.kind != ':' || ttl.n < 0 || ttl.n > 3600000 {
			return "the ttl left is not an integer within 0..3600000"
		}
	case "lock.renew":
		if v.kind != ':' || v.n < 0 || v.n > 3600000 {
			return "LOCK.RENEW answers ms left or an error"
		}
	case "lock.release":
		if v.kind != ':' || v.n != 1 {
			return "LOCK.RELEASE answers :1 or an error"
		}
	case "lock.revoke":
		if v.kind != ':' || v.n < 0 {
			return "LOCK.REVOKE answers how many leases it ended or an error"
		}
	case "lock.info":
		if v.kind != '*' || (!v.null && len(v.elems) != 18) {
			return "LOCK.INFO answers null or 9 field/value pairs"
		}
		for i, e := range v.elems {
			// Every value an integer but the last, the owner: a bulk string.
			if (i%2 == 0 || i == 17) != (e.kind == '$') || (i%2 == 1 && i != 17) != (e.kind == ':') {
				return "LOCK.INFO's fields are bulk strings and its values integers, the owner a bulk string"
			}
		}
	case "lock.events":
		if v.kind != '*' || v.null {
			return "LOCK.EVENTS answers an array"
		}
		for _, e := range v.elems {
			if e.kind != '*' || len(e.elems) != 14 && len(e.elems) != 6 {
				return "each LOCK.EVENTS entry is 7 field/value pairs, or 3 for an epoch"
			}
		}
	case "lock.holders":
		if v.kind != '*' || v.null {
			return "LOCK.HOLDERS answers an array"
		}
		for _, e := range v.elems {
			if e.kind != '*' || len(e.elems) != 12 {
				return "each LOCK.HOLDERS entry is 6 field/value pairs"
			}
		}
	case "lock.list":
		if v.kind != '*' || len(v.elems) != 2 || v.elems[0].kind != '$' || v.elems[1].kind != '*' {
			return "LOCK.LIST answers [cursor, entries]"
		}
	case "set":
		if v.kind != '+' && v.kind != '$' {
			return "SET answers +OK, a bulk string, null or an error"
		}
		if v.kind == '+' && v.str != "OK" {
			return "SET's simple string is OK"
		}
	case "delex", "delifeq":
		if v.kind != ':' || (v.n != 0 && v.n != 1) {
			return "DELEX and DELIFEQ answer :0 or :1"
		}
	case "digest":
		if v.kind != '$' || (!v.null && len(v.str) != 16) {
			return "DIGEST answers 16 hex digits or null"
		}
	case "ping":
		if v.kind != '+' {
			return "PING answers +PONG"
		}
	}
	return ""
}

func fzShow(args [][]byte) string {
	var parts []string
	for _, a := range args {
		if len(a) > 40 {
			a = append(a[:40:40], "…"...)
		}
		parts = append(parts, string(a))
	}
	return strings.Join(parts, " ")
}
