package resp_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure"
	"github.com/tenure-db/tenure/resp/resptest"
)

// A step is one line of a transcript: a command as redis-cli would type it
// and the reply it must get, e.g.
//
//	{"SET k v EX 0", "ERR invalid expire time in 'set' command"}
//	{"GET k", "v"}
//	{"GET nokey", nil}
//
// The command is split on spaces; a "double-quoted" word is read as a Go
// string literal, so `SET k ""` and `SET k "a b\x00"` say what they mean.
//
// The reply is one of:
//   - nil: the null reply;
//   - a string that starts with an error code word (ERR, FENCED, NOPROTO…,
//     see errorCodes) and a space: that exact error (inside an array, that
//     error as an element, as EXEC's);
//   - any other string: that bulk or simple string;
//   - an int: that integer;
//   - a []any: an array whose elements match in turn;
//   - a match: a check of its own, for replies that vary (ids, times).
type step struct {
	cmd  string
	want any
}

// match checks a reply that a literal cannot state; it returns what is
// wrong, or "".
type match func(got any) string

// errorCodes are the code words an error reply starts with.
var errorCodes = []string{"ERR", "WRONGTYPE", "FENCED", "NOPROTO", "NOAUTH", "NOPERM", "WRONGPASS", "LOST", "EXECABORT",
	"NOSCRIPT", "NOTBUSY", "UNKILLABLE", "BUSY", "BUSYKEY", "IOERR"}

func isErrorText(s string) bool {
	for _, code := range errorCodes {
		if strings.HasPrefix(s, code+" ") {
			return true
		}
	}
	return false
}

// doer is what runs a command: a *redis.Client, a *redis.Conn or a
// *tenure.DB.
type doer interface {
	Do(ctx context.Context, args ...any) *redis.Cmd
}

// transcript runs the steps in order on c and reports every reply that
// differs from the transcript.
func transcript(t *testing.T, c doer, steps []step) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, st := range steps {
		args := splitCommand(t, st.cmd)
		got, err := c.Do(ctx, args...).Result()
		if msg := compare(got, err, st.want); msg != "" {
			t.Errorf("%s: %s", st.cmd, msg)
		}
	}
}

// compatTranscript runs the steps on a fresh RESP2 connection to s,
// flushed first: transcripts are written in RESP2's shapes (a RESP3 map
// would reach them as a Go map), and RESP3's have transcripts of raw
// bytes (resp3_test.go). When
// TENURE_TEST_REDIS names a real Redis (host:port; it is flushed), it runs
// them there too, so a transcript of Redis behaviour can be checked
// against Redis itself:
//
//	redis-server --port 7399 --save '' --appendonly no &
//	TENURE_TEST_REDIS=127.0.0.1:7399 go test ./resp/ -run Compat
func compatTranscript(t *testing.T, s *resptest.Server, steps []step) {
	t.Helper()
	t.Run("tenure", func(t *testing.T) {
		rdb := resp2Client(t, s)
		if err := rdb.FlushAll(bg).Err(); err != nil {
			t.Fatalf("FLUSHALL: %v", err)
		}
		conn := rdb.Conn()
		defer conn.Close()
		transcript(t, conn, steps)
	})
	// The same table in process, through tenure.DB.Do (SPEC §11): the
	// same replies without RESP. Each Do is a connection of its own, so a
	// transcript that keeps state on its connection runs on the wire only.
	if !keepsConnState(t, steps) {
		t.Run("do", func(t *testing.T) {
			if err := s.DB.Do(bg, "FLUSHALL").Err(); err != nil {
				t.Fatalf("FLUSHALL: %v", err)
			}
			transcript(t, s.DB, steps)
		})
	}
	addr := os.Getenv("TENURE_TEST_REDIS")
	if addr == "" {
		return
	}
	t.Run("redis", func(t *testing.T) {
		rdb := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2})
		defer rdb.Close()
		ctx := context.Background()
		if err := rdb.FlushAll(ctx).Err(); err != nil {
			t.Fatalf("FLUSHALL on %s: %v", addr, err)
		}
		conn := rdb.Conn()
		defer conn.Close()
		transcript(t, conn, steps)
	})
}

// connState are the commands whose effect lasts on the connection past
// their own reply.
var connState = map[string]bool{"MULTI": true, "EXEC": true, "DISCARD": true, "WATCH": true, "UNWATCH": true,
	"SELECT": true, "HELLO": true, "AUTH": true, "RESET": true, "CLIENT": true, "QUIT": true}

// keepsConnState says whether a transcript uses a command of connState.
func keepsConnState(t *testing.T, steps []step) bool {
	for _, st := range steps {
		if name, _ := splitCommand(t, st.cmd)[0].(string); connState[strings.ToUpper(name)] {
			return true
		}
	}
	return false
}

// resp2Client is a go-redis client of s that speaks RESP2, for the
// transcripts; s.Client(), at go-redis's default options, speaks RESP3.
func resp2Client(t testing.TB, s *resptest.Server) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: 2})
	t.Cleanup(func() { c.Close() })
	return c
}

// splitCommand splits a transcript command into arguments.
func splitCommand(t *testing.T, cmd string) []any {
	t.Helper()
	var args []any
	for i := 0; i < len(cmd); {
		switch {
		case cmd[i] == ' ':
			i++
		case cmd[i] == '"':
			j := i + 1
			for j < len(cmd) && cmd[j] != '"' {
				if cmd[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(cmd) {
				t.Fatalf("%s: unterminated quote", cmd)
			}
			s, err := strconv.Unquote(cmd[i : j+1])
			if err != nil {
				t.Fatalf("%s: %v", cmd, err)
			}
			args = append(args, s)
			i = j + 1
		default:
			j := strings.IndexByte(cmd[i:], ' ')
			if j < 0 {
				j = len(cmd) - i
			}
			args = append(args, cmd[i:i+j])
			i += j
		}
	}
	return args
}

// compare checks one reply against the transcript's want.
func compare(got any, err error, want any) string {
	if m, ok := want.(match); ok {
		if err != nil {
			return fmt.Sprintf("got error %q", err)
		}
		return m(got)
	}
	if s, ok := want.(string); ok && isErrorText(s) {
		var re redis.Error
		if !errors.As(err, &re) {
			return fmt.Sprintf("got %s, want error %q", show(got, err), s)
		}
		if err.Error() != s {
			return fmt.Sprintf("got error %q, want %q", err.Error(), s)
		}
		return ""
	}
	if want == nil {
		if err != redis.Nil {
			return fmt.Sprintf("got %s, want nil", show(got, err))
		}
		return ""
	}
	if err != nil {
		return fmt.Sprintf("got %s, want %s", show(got, err), show(want, nil))
	}
	return compareValue(got, want)
}

func compareValue(got, want any) string {
	switch w := want.(type) {
	case match:
		return w(got)
	case nil:
		if got != nil {
			return fmt.Sprintf("got %s, want nil", show(got, nil))
		}
		return ""
	case string:
		// An error inside an array (EXEC's) is an element, not the reply's error.
		if e, ok := got.(error); ok && isErrorText(w) {
			if e.Error() != w {
				return fmt.Sprintf("got error %q, want %q", e.Error(), w)
			}
			return ""
		}
	case int:
		if g, ok := got.(int64); !ok || g != int64(w) {
			return fmt.Sprintf("got %s, want %d", show(got, nil), w)
		}
		return ""
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Sprintf("got %s, want %s", show(got, nil), show(want, nil))
		}
		for i := range w {
			if msg := compareValue(g[i], w[i]); msg != "" {
				return fmt.Sprintf("element %d: %s (whole reply %s)", i, msg, show(got, nil))
			}
		}
		return ""
	}
	if !reflect.DeepEqual(got, want) {
		return fmt.Sprintf("got %s, want %s", show(got, nil), show(want, nil))
	}
	return ""
}

func show(v any, err error) string {
	if err == redis.Nil {
		return "nil"
	}
	if err != nil {
		return fmt.Sprintf("error %q", err.Error())
	}
	switch v := v.(type) {
	case string:
		if len(v) > 200 {
			return strconv.Quote(v[:200]) + "…"
		}
		return strconv.Quote(v)
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = show(e, nil)
		}
		return "[" + strings.Join(parts, " ") + "]"
	case nil:
		return "nil"
	case match:
		return "(a check)"
	}
	return fmt.Sprintf("%v", v)
}

// Matchers for replies that vary.

func intBetween(lo, hi int64) match {
	return func(got any) string {
		n, ok := got.(int64)
		if !ok || n < lo || n > hi {
			return fmt.Sprintf("got %s, want an integer in [%d, %d]", show(got, nil), lo, hi)
		}
		return ""
	}
}

func anyInt() match { return intBetween(-1<<63, 1<<63-1) }

func anyString() match {
	return func(got any) string {
		if _, ok := got.(string); !ok {
			return fmt.Sprintf("got %s, want a string", show(got, nil))
		}
		return ""
	}
}

// containing matches a string that holds every part.
func containing(parts ...string) match {
	return func(got any) string {
		s, ok := got.(string)
		if !ok {
			return fmt.Sprintf("got %s, want a string", show(got, nil))
		}
		for _, p := range parts {
			if !strings.Contains(s, p) {
				return fmt.Sprintf("got %s, want it to contain %q", show(got, nil), p)
			}
		}
		return ""
	}
}

// arrayOf matches an array of n elements that each match m.
func arrayOf(n int, m match) match {
	return func(got any) string {
		a, ok := got.([]any)
		if !ok || (n >= 0 && len(a) != n) {
			return fmt.Sprintf("got %s, want an array of %d", show(got, nil), n)
		}
		for i, e := range a {
			if msg := m(e); msg != "" {
				return fmt.Sprintf("element %d: %s", i, msg)
			}
		}
		return ""
	}
}

// sameSet matches an array holding exactly these strings, in any order.
func sameSet(want ...string) match {
	return func(got any) string {
		a, ok := got.([]any)
		if !ok || len(a) != len(want) {
			return fmt.Sprintf("got %s, want the set %q", show(got, nil), want)
		}
		seen := map[string]int{}
		for _, w := range want {
			seen[w]++
		}
		for _, e := range a {
			s, _ := e.(string)
			if seen[s] == 0 {
				return fmt.Sprintf("got %s, want the set %q", show(got, nil), want)
			}
			seen[s]--
		}
		return ""
	}
}

// eventually polls cond every few milliseconds until it holds or the
// deadline passes: tests wait for events, never for a fixed time.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// start is resptest.Start with the default config.
func start(t *testing.T) *resptest.Server {
	t.Helper()
	return resptest.Start(t, tenure.Options{})
}

var bg = context.Background()

// sha256hex is what a users file holds for a password.
func sha256hex(password string) string {
	sum := sha256.Sum256([]byte(password))
	return hex.EncodeToString(sum[:])
}
