package resp_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenure-db/tenure"
	"github.com/tenure-db/tenure/resp"
	"github.com/tenure-db/tenure/resp/resptest"
)

// FuzzDispatch sends arbitrary requests to real servers, one TCP
// connection per input, and drains the replies: the server must never
// panic (SPEC §7), must finish every input once the client has sent it
// (no request hangs a connection whose client is gone), and must still
// answer PING afterwards.
//
// An input is lines of requests, each a command and its arguments
// separated by single spaces; each line goes as one multibulk, so an
// argument may hold any byte but space and newline. Every input goes to
// two servers: one without users (every connection admin), and one with a
// users file, where the input starts unauthenticated and may AUTH.
// SHUTDOWN lines are dropped: it stops the server, as it should (see
// TestServerShutdown).
//
// The seeds (every command of the table, with plausible and implausible
// arguments, and testdata/fuzz/FuzzDispatch) run as plain tests; `make
// fuzz` explores further.
func FuzzDispatch(f *testing.F) {
	panics := &panicLog{}
	users, err := resp.ParseUsers(strings.NewReader("user boss admin sha256:" + sha256hex("a-pw") + "\nuser reader read sha256:" + sha256hex("r-pw")))
	if err != nil {
		f.Fatal(err)
	}
	// A small bulk limit keeps SETRANGE and APPEND from writing 512 MB.
	limits := resp.Limits{MaxBulkLen: 1 << 20}
	open := resptest.Start(f, tenure.Options{Logger: slog.New(panics), Limits: limits})
	guarded := resptest.Start(f, tenure.Options{Logger: slog.New(panics), Limits: limits, Users: users})

	for _, row := range resp.Commands() {
		cmd := strings.ReplaceAll(strings.ToUpper(row.Name), "|", " ")
		for _, args := range seedArgs {
			f.Add([]byte(strings.TrimSpace(cmd + " " + args)))
		}
	}
	for _, s := range []string{
		"SET k v EX 10\nGET k\nTTL k\nDEL k",
		"SET k v NX XX\nSET k v EX 0\nSET k v FENCE 5\nSET k w FENCE 4\nGET k",
		"AUTH boss a-pw\nCONFIG SET maxclients 1\nCLIENT KILL SKIPME yes\nPING",
		"AUTH reader r-pw\nSET k v\nGET k\nLOCK.HOLD l k r",
		"HELLO 2 AUTH boss a-pw SETNAME x\nCLIENT LIST\nRESET\nGET k",
		"LOCK.HOLD l k r1 TTL 1000\nLOCK.HOLD l k r2\nLOCK.HOLD l k r3 WAIT 10000",
		"MSET a 1 b 2 c 3\nSCAN 0 MATCH * COUNT 1\nKEYS [a-\nRENAME a a",
		"SETRANGE k 1048575 x\nAPPEND k y\nGETRANGE k -9223372036854775808 9223372036854775807",
		"QUIT\nSET after-quit v",
		"COMMAND\nCOMMAND DOCS\nCOMMAND INFO\nINFO everything\nCLIENT HELP\nCONFIG HELP",
		"INCRBYFLOAT f 1e308\nINCRBYFLOAT f 1e308\nINCRBYFLOAT f -inf\nINCRBY n -9223372036854775808\nDECRBY n -9223372036854775808",
		"EXPIRE k -9223372036854775808\nPEXPIREAT k 9223372036854775807\nSCAN -1 COUNT 9223372036854775807",
	} {
		f.Add([]byte(s))
	}

	checkers := []*checker{{addr: open.Addr}, {addr: guarded.Addr, auth: "AUTH boss a-pw\r\n"}}
	f.Fuzz(func(t *testing.T, data []byte) {
		reqs := encodeRequests(data)
		for i, s := range []*resptest.Server{open, guarded} {
			exchange(t, s.Addr, reqs)
			checkers[i].check(t)
			if p := panics.take(); p != "" {
				t.Fatalf("the server panicked on %q:\n%s", data, p)
			}
		}
	})
}

// seedArgs follow each command name in the seed corpus.
var seedArgs = []string{
	"",
	"k",
	"k v",
	"k v EX 10",
	"k 10",
	"k 0 -1",
	"k v NX GET PX 100 FENCE 7",
	"0 MATCH k* COUNT 5 TYPE string",
	"l k r TTL 1000 WAIT 0 MAXHOLD 2000",
	"a b c d e f",
	"-1",
	"k 9223372036854775808",
	"k -9223372036854775808 9223372036854775807",
	"k v EX 0 PX -1 KEEPTTL NX XX GET FENCE 0 FENCE",
	"\x00 \xff\xfe \r\n",
	"k 1e400 inf nan 0x 1_0",
	strings.Repeat("x", 2000),
	"ID 1 TYPE normal ADDR 127.0.0.1:1 SKIPME no",
	"lib-name a b",
	"* [ ? \\",
}

// encodeRequests turns an input into multibulk requests, leaving out
// SHUTDOWN.
func encodeRequests(data []byte) []byte {
	var b bytes.Buffer
	for _, line := range bytes.Split(data, []byte("\n")) {
		args := bytes.Split(line, []byte(" "))
		if len(line) == 0 || strings.EqualFold(string(args[0]), "shutdown") {
			continue
		}
		fmt.Fprintf(&b, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
	}
	return b.Bytes()
}

// exchange sends reqs on a new connection, closes its sending side, and
// reads replies until the server closes the connection.
func exchange(t *testing.T, addr string, reqs []byte) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		// The server may close first (QUIT, CLIENT KILL, a protocol error):
		// a failed write is fine.
		nc.Write(reqs)
		nc.(*net.TCPConn).CloseWrite()
	}()
	_, err = io.Copy(io.Discard, nc)
	<-wrote
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		t.Fatalf("the server did not finish the input within 20s")
	}
}

// checker keeps an admin connection to a server and, after each input,
// undoes what an input may have done to the server as a whole (a lowered
// maxclients) and checks that it answers PING. An input may have killed
// it: then it reconnects.
type checker struct {
	addr string
	auth string
	nc   net.Conn
	br   *bufio.Reader
}

func (c *checker) check(t *testing.T) {
	t.Helper()
	var last string
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if c.nc == nil {
			nc, err := net.Dial("tcp", c.addr)
			if err != nil {
				t.Fatalf("the server does not accept connections: %v", err)
			}
			c.nc, c.br = nc, bufio.NewReader(nc)
		}
		c.nc.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(c.nc, c.auth+"CONFIG SET maxclients 10000\r\nPING\r\n")
		var got []string
		for range strings.Count(c.auth, "\r\n") + 2 {
			l, err := c.br.ReadString('\n')
			if err != nil {
				break
			}
			got = append(got, strings.TrimSpace(l))
		}
		if len(got) > 0 && got[len(got)-1] == "+PONG" {
			return
		}
		// Killed, or refused over a lowered maxclients: try afresh.
		last = strings.Join(got, " ")
		c.nc.Close()
		c.nc = nil
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the server no longer answers PING (last: %q)", last)
}

// panicLog is a slog handler that keeps what the server logs about a
// panic it recovered from, and drops everything else.
type panicLog struct {
	mu  sync.Mutex
	msg strings.Builder
}

func (p *panicLog) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelError }

func (p *panicLog) Handle(_ context.Context, r slog.Record) error {
	if !strings.Contains(r.Message, "panic") {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.msg.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&p.msg, "\n%s: %s", a.Key, a.Value)
		return true
	})
	p.msg.WriteString("\n")
	return nil
}

func (p *panicLog) WithAttrs([]slog.Attr) slog.Handler { return p }
func (p *panicLog) WithGroup(string) slog.Handler      { return p }

func (p *panicLog) take() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.msg.String()
	p.msg.Reset()
	return s
}
