package resp_test

import (
	"bufio"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tenure-db/tenure"
)

// RESP3 transcripts of raw bytes (SPEC §6): what HELLO 3 switches, spelled
// as Redis 7 spells it, for clients that read the types go-redis hides
// (a map from a flat array, "_" from "$-1"). A reply is written as its
// lines without their CRLF; a want line "?" stands for any one line (ids,
// versions, ttls).
type rawStep struct {
	send string // an inline command
	want []string
}

// helloLines is HELLO's map in RESP3 as Redis 7 sends it, whoever the
// server is.
var helloLines = []string{"%7",
	"$6", "server", "?", "?",
	"$7", "version", "?", "?",
	"$5", "proto", ":3",
	"$2", "id", "?",
	"$4", "mode", "$10", "standalone",
	"$4", "role", "$6", "master",
	"$7", "modules", "*0"}

// helloLines2 is HELLO's reply in RESP2: the same pairs, flat.
var helloLines2 = append(append([]string{"*14"}, helloLines[1:11]...), append([]string{":2"}, helloLines[12:]...)...)

// resp3Steps are answered alike by tenure and Redis 7.0.15.
var resp3Steps = []rawStep{
	{"GET nokey", []string{"$-1"}},
	{"HELLO 3", helloLines},
	{"GET nokey", []string{"_"}},
	{"HELLO", helloLines}, // without a version the connection keeps RESP3
	{"HELLO 4", []string{"-NOPROTO unsupported protocol version"}},
	{"GET nokey", []string{"_"}},
	{"SET k v", []string{"+OK"}},
	{"SET k v NX", []string{"_"}},
	{"SET k w GET", []string{"$1", "v"}},
	{"MGET k nokey", []string{"*2", "$1", "w", "_"}},
	{"GETDEL nokey", []string{"_"}},
	{"INCRBYFLOAT f 1.5", []string{"$3", "1.5"}}, // a bulk string in RESP3 too, as in Redis
	{"CLIENT GETNAME", []string{"_"}},
	{"CONFIG GET maxclients", []string{"%1", "$10", "maxclients", "$5", "10000"}},
	{"CONFIG GET nosuch", []string{"%0"}},
	{"COMMAND INFO nosuch", []string{"*1", "_"}},
	{"COMMAND DOCS nosuch", []string{"%0"}},
	{"CLIENT LIST TYPE pubsub", []string{"=4", "txt:"}},
	{"TIME", []string{"*2", "?", "?", "?", "?"}},
	{"EXISTS k", []string{":1"}},
	{"OBJECT ENCODING nokey", []string{"_"}},
	{"MSET a ohmytext b mynewtext", []string{"+OK"}},
	{"LCS a b IDX", []string{"%2", "$7", "matches", "*2",
		"*2", "*2", ":4", ":7", "*2", ":5", ":8",
		"*2", "*2", ":2", ":3", "*2", ":0", ":1",
		"$3", "len", ":6"}},
	{"HELLO 2", helloLines2},
	{"GET nokey", []string{"$-1"}},
	{"CONFIG GET maxclients", []string{"*2", "$10", "maxclients", "$5", "10000"}},
	{"HELLO 3", helloLines},
	{"RESET", []string{"+RESET"}}, // RESET goes back to RESP2, as in Redis
	{"GET nokey", []string{"$-1"}},
}

// The RESP3 transcript, on tenure and, when TENURE_TEST_REDIS names one,
// on a real Redis (see compatTranscript).
func TestRESP3Compat(t *testing.T) {
	s := start(t)
	t.Run("tenure", func(t *testing.T) { rawTranscript(t, dialRaw(t, s), resp3Steps) })
	if addr := os.Getenv("TENURE_TEST_REDIS"); addr != "" {
		t.Run("redis", func(t *testing.T) {
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			nc.SetDeadline(time.Now().Add(20 * time.Second))
			r := &rawConn{t: t, nc: nc, br: bufio.NewReader(nc)}
			rawTranscript(t, r, []rawStep{{"FLUSHALL", []string{"+OK"}}})
			rawTranscript(t, r, resp3Steps)
		})
	}
}

// Where Redis has no counterpart: the lock commands (SPEC §6: in RESP3
// LOCK.INFO replies a map and a null is "_"; every other LOCK.* reply
// keeps its shape), COMMAND's sets and CLIENT INFO's verbatim text.
func TestRESP3Tenure(t *testing.T) {
	s := start(t)
	r := dialRaw(t, s)
	rawTranscript(t, r, []rawStep{
		{"HELLO 3", helloLines},
		{"LOCK.INFO L k", []string{"_"}},
		{"LOCK.HOLD L k r1 TTL 5000", []string{"*3", "$32", "?", "?", ":5000"}},
		{"LOCK.HOLD L k r2 WAIT 0", []string{"_"}},
		{"LOCK.INFO L k", []string{"%9",
			"$5", "fence", "?",
			"$3", "ttl", "?",
			"$4", "held", "?",
			"$7", "maxhold", ":-1",
			"$7", "waiters", ":0",
			"$7", "holders", ":1",
			"$5", "limit", ":1",
			"$6", "shared", ":0",
			"$5", "owner", "$0", ""}},
		{"LOCK.LIST L", []string{"*2", "$1", "0", "*1", "*6", "$1", "k", "?", "?", ":0", ":1", "$0", ""}},
		{"LOCK.HOLDERS L k", []string{"*1", "%6",
			"$5", "fence", "?",
			"$3", "ttl", "?",
			"$4", "held", "?",
			"$7", "maxhold", ":-1",
			"$6", "shared", ":0",
			"$5", "owner", "$0", ""}},
		{"LOCK.REVOKE L k", []string{":1"}},
		{"LOCK.HOLDERS L k", []string{"*0"}},
		{"LOCK.RENEW 0123456789abcdef0123456789abcdef", []string{"-LOST unknown lease"}},
		{"COMMAND INFO ping", []string{"*1", "*10", "$4", "ping", ":-1",
			"~3", "+readonly", "+noauth", "+fast", ":0", ":0", ":0", "~0", "~0", "~0", "~0"}},
		// Redis 7.0.15's shape; its ACL categories ("~3 +@read …") tenure has not.
		{"COMMAND INFO get", []string{"*1", "*10", "$3", "get", ":2", "~2", "+readonly", "+fast", ":1", ":1", ":1", "~0", "~0",
			"~1", "%3", "$5", "flags", "~2", "+RO", "+access",
			"$12", "begin_search", "%2", "$4", "type", "$5", "index", "$4", "spec", "%1", "$5", "index", ":1",
			"$9", "find_keys", "%2", "$4", "type", "$5", "range", "$4", "spec", "%3",
			"$7", "lastkey", ":0", "$7", "keystep", ":1", "$5", "limit", ":0",
			"~0"}},
		{"COMMAND GETKEYSANDFLAGS set k v", []string{"*1", "*2", "$1", "k", "~2", "+RW", "+update"}},
		{"HELLO 2", helloLines2},
		{"LOCK.INFO L k", []string{"*-1"}},
		{"COMMAND INFO ping", []string{"*1", "*10", "$4", "ping", ":-1",
			"*3", "+readonly", "+noauth", "+fast", ":0", ":0", ":0", "*0", "*0", "*0", "*0"}},
	})
	r.send("HELLO 3\r\n")
	r.reply()
	r.send("CLIENT INFO\r\n")
	if got := r.reply(); !strings.HasPrefix(got[0], "=") || !strings.HasPrefix(got[1], "txt:id=") || !strings.Contains(got[1], " resp=3 ") {
		t.Errorf("CLIENT INFO in RESP3: got %q, want verbatim text with resp=3", got)
	}
	r.send("INFO server\r\n")
	if got := r.reply(); !strings.HasPrefix(got[0], "=") || !strings.HasPrefix(got[1], "txt:# Server\r\n") {
		t.Errorf("INFO in RESP3: got %q, want verbatim text", got)
	}
}

// With users (SPEC §5), HELLO 3 AUTH admits a connection as HELLO 2 AUTH
// does, and the pre-AUTH rules hold until then whatever the protocol.
func TestRESP3Auth(t *testing.T) {
	s := startWithUsers(t, tenure.Options{})
	r := dialRaw(t, s)
	noauth := "-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"
	rawTranscript(t, r, []rawStep{
		{"HELLO 3", []string{noauth}},
		{"GET nokey", []string{"-NOAUTH Authentication required."}},
		{"HELLO 3 AUTH reader wrong", []string{"-WRONGPASS invalid username-password pair or user is disabled."}},
		{"GET nokey", []string{"-NOAUTH Authentication required."}},
		{"HELLO 3 AUTH reader reader-pass", helloLines},
		{"GET nokey", []string{"_"}},
		{"SET k v", []string{"-NOPERM this user has no permissions to run the 'set' command"}},
		{"RESET", []string{"+RESET"}},
		{"GET nokey", []string{"-NOAUTH Authentication required."}},
	})
	// After RESET the connection is unauthenticated again: at most 10
	// arguments are read (SPEC §7).
	r.send("*11\r\n")
	if got := r.line(); got != "-ERR Protocol error: unauthenticated multibulk length" {
		t.Fatalf("11 arguments after RESET: got %q", got)
	}
	r.expectClosed()

	// A protocol error in RESP3 is answered as in RESP2, and closes.
	r = dialRaw(t, s)
	rawTranscript(t, r, []rawStep{{"HELLO 3 AUTH writer writer-pass", helloLines}})
	r.send("*3000000000\r\n")
	if got := r.line(); got != "-ERR Protocol error: invalid multibulk length" {
		t.Fatalf("got %q", got)
	}
	r.expectClosed()
}

func rawTranscript(t *testing.T, r *rawConn, steps []rawStep) {
	t.Helper()
	for _, st := range steps {
		r.send(st.send + "\r\n")
		got := r.reply()
		if !linesMatch(got, st.want) {
			t.Errorf("%s:\n got %q\nwant %q", st.send, strings.Join(got, `\r\n`), strings.Join(st.want, `\r\n`))
		}
	}
}

func linesMatch(got, want []string) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range want {
		if want[i] != "?" && got[i] != want[i] {
			return false
		}
	}
	return true
}

// reply reads one whole RESP2 or RESP3 reply and returns its lines, a
// bulk or verbatim string's content as one line.
func (r *rawConn) reply() []string {
	r.t.Helper()
	var lines []string
	var read func()
	read = func() {
		l := r.line()
		lines = append(lines, l)
		if l == "" {
			r.t.Fatalf("empty reply line")
		}
		n, err := strconv.Atoi(l[1:])
		switch l[0] {
		case '$', '=', '!':
			if err != nil || n < 0 {
				return
			}
			b := make([]byte, n+2)
			if _, err := io.ReadFull(r.br, b); err != nil {
				r.t.Fatalf("read %d bytes: %v", n, err)
			}
			lines = append(lines, string(b[:n]))
		case '*', '~', '>', '%', '|':
			if err != nil || n < 0 {
				return
			}
			if l[0] == '%' || l[0] == '|' {
				n *= 2
			}
			for range n {
				read()
			}
		}
	}
	read()
	return lines
}
