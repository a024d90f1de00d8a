package resp_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tenure-db/tenure"
	"github.com/tenure-db/tenure/resp"
	"github.com/tenure-db/tenure/resp/resptest"
)

// rawConn speaks RESP by hand, for inputs no client library would send.
type rawConn struct {
	t  *testing.T
	nc net.Conn
	br *bufio.Reader
}

func dialRaw(t *testing.T, s *resptest.Server) *rawConn {
	nc := s.Dial()
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	return &rawConn{t: t, nc: nc, br: bufio.NewReader(nc)}
}

func (r *rawConn) send(s string) {
	r.t.Helper()
	if _, err := io.WriteString(r.nc, s); err != nil {
		r.t.Fatalf("write: %v", err)
	}
}

// line reads one reply line without its CRLF.
func (r *rawConn) line() string {
	r.t.Helper()
	l, err := r.br.ReadString('\n')
	if err != nil {
		r.t.Fatalf("read reply: %v (got %q)", err, l)
	}
	return strings.TrimSuffix(l, "\r\n")
}

// expectClosed checks that the server closed the connection.
func (r *rawConn) expectClosed() {
	r.t.Helper()
	r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if l, err := r.br.ReadString('\n'); err == nil {
		r.t.Fatalf("connection still open, read %q", l)
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		r.t.Fatalf("connection not closed within 5s")
	}
}

// The bad inputs of Redis's tests/unit/protocol.tcl: each gets Redis's
// error text and a closed connection, and the server goes on serving.
func TestProtocolErrors(t *testing.T) {
	s := resptest.Start(t, tenure.Options{})
	other := dialRaw(t, s) // a bystander that must be unaffected
	cases := []struct {
		name, send, want string
	}{
		{"out of range multibulk length", "*3000000000\r\n", "-ERR Protocol error: invalid multibulk length"},
		{"wrong multibulk payload header", "*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n", "-ERR Protocol error: expected '$', got 'f'"},
		{"negative multibulk payload length", "*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$-10\r\n", "-ERR Protocol error: invalid bulk length"},
		{"out of range multibulk payload length", "*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$2000000000\r\n", "-ERR Protocol error: invalid bulk length"},
		{"non-number multibulk payload length", "*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$blabla\r\n", "-ERR Protocol error: invalid bulk length"},
		{"multibulk not followed by bulk", "*1\r\nfoo\r\n", "-ERR Protocol error: expected '$', got 'f'"},
		{"unbalanced quotes", "set \"\"\"test-key\"\"\" test-value\r\nping\r\n", "-ERR Protocol error: unbalanced quotes in request"},
		{"desync inline", "\x00" + strings.Repeat("A", 100<<10), "-ERR Protocol error: too big inline request"},
		{"desync multibulk", "*\x00" + strings.Repeat("A", 100<<10), "-ERR Protocol error: too big mbulk count string"},
		{"desync bulk", "*1\r\n$\x00" + strings.Repeat("A", 100<<10), "-ERR Protocol error: too big bulk count string"},
		{"bulk over proto-max-bulk-len", "*1\r\n$536870913\r\n", "-ERR Protocol error: invalid bulk length"},
		{"multibulk over 1048576", "*1048577\r\n", "-ERR Protocol error: invalid multibulk length"},
		{"bulk without CRLF after it", "*1\r\n$4\r\nPINGxx", "-ERR Protocol error: expected CRLF after bulk string"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := dialRaw(t, s)
			r.send(tc.send)
			if got := r.line(); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			r.expectClosed()
			other.send("PING\r\n")
			if got := other.line(); got != "+PONG" {
				t.Fatalf("bystander got %q", got)
			}
		})
	}
}

func TestProtocolQuietInputs(t *testing.T) {
	s := resptest.Start(t, tenure.Options{})
	r := dialRaw(t, s)
	// An empty query, a negative multibulk length and *0 are skipped.
	r.send("\r\n*-10\r\n*0\r\nPING\r\n")
	if got := r.line(); got != "+PONG" {
		t.Fatalf("got %q", got)
	}
	r.send("ping x y z\r\n")
	if got, want := r.line(), "-ERR wrong number of arguments for 'ping' command"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	// Inline requests take quotes and escapes as redis-cli sends them.
	r.send("echo \"a\\x41\\n\" 'it\\'s'\r\n")
	if got := r.line(); got != "-ERR wrong number of arguments for 'echo' command" {
		t.Fatalf("got %q", got)
	}
	r.send("echo \"a\\x41\\tb\"\r\n")
	if got := r.line(); got != "$4" {
		t.Fatalf("got %q", got)
	}
	if got := r.line(); got != "aA\tb" {
		t.Fatalf("got %q", got)
	}
	r.send("UNKNOWNCMD a b\r\n")
	if got, want := r.line(), "-ERR unknown command 'UNKNOWNCMD', with args beginning with: 'a' 'b' "; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// An MSET of 20,002 arguments, in one write, must succeed.
func TestProtocolLargeMultibulk(t *testing.T) {
	s := resptest.Start(t, tenure.Options{})
	r := dialRaw(t, s)
	var b bytes.Buffer
	fmt.Fprintf(&b, "*20001\r\n$4\r\nMSET\r\n")
	for i := range 10000 {
		k := fmt.Sprintf("k%d", i)
		fmt.Fprintf(&b, "$%d\r\n%s\r\n$%d\r\n%s\r\n", len(k), k, len(k), k)
	}
	r.send(b.String())
	if got := r.line(); got != "+OK" {
		t.Fatalf("MSET: got %q", got)
	}
	r.send("*2\r\n$3\r\nGET\r\n$5\r\nk9999\r\n")
	if got := r.line(); got != "$5" {
		t.Fatalf("GET: got %q", got)
	}
}

// A 1 GB bulk header (allowed by a raised --proto-max-bulk-len) does not
// make the server allocate 1 GB: memory follows the bytes that arrive.
func TestProtocolHugeBulkHeaderDoesNotAllocate(t *testing.T) {
	s := resptest.Start(t, tenure.Options{Limits: resp.Limits{MaxBulkLen: 2 << 30}})
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var conns []*rawConn
	for range 20 {
		r := dialRaw(t, s)
		r.send("*2\r\n$3\r\nSET\r\n$1000000000\r\nabc")
		conns = append(conns, r)
	}
	// Let the server read every header: a PING on a fresh connection is
	// answered after the others were accepted and read.
	p := dialRaw(t, s)
	p.send("PING\r\n")
	p.line()
	time.Sleep(100 * time.Millisecond) // the 20 reads race the PING; give them a moment
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 200<<20 {
		t.Fatalf("heap grew by %d MB for 20 announced 1 GB bulks", grown>>20)
	}
	for _, r := range conns {
		r.nc.Close()
	}
}

// A client that sends nothing for long, or keeps a request half sent, does
// not block others (SPEC §7: a slow or stalled client never blocks others).
func TestProtocolStalledClient(t *testing.T) {
	s := resptest.Start(t, tenure.Options{})
	stalled := dialRaw(t, s)
	stalled.send("*3\r\n$3\r\nSET\r\n$1\r\nx") // and nothing more
	rdb := s.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rdb.Set(ctx, "y", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
}
