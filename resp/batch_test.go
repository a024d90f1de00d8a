package resp_test

import (
	"testing"

	"github.com/tenure-db/tenure"
	"github.com/tenure-db/tenure/resp/resptest"
)

// A pipeline in one write is one read batch, its writes one commit: each
// request still gets its own reply, in order, as if it ran alone — reads
// see the writes before them, a failing request (INCR of a word, SET with
// an older FENCE: LOCK-12) changes nothing and stops nothing, and requests
// that are not batched (PING, EXISTS) run between them.
func TestPipelineRepliesAsAlone_LOCK12(t *testing.T) {
	s := resptest.Start(t, tenure.Options{})
	r := dialRaw(t, s)
	r.send("SET a 1\r\nINCR a\r\nSET w abc\r\nINCR w\r\nSET f v FENCE 5\r\nSET f old FENCE 3\r\n" +
		"GET f\r\nPING\r\nGET a\r\nMSET m1 x m2 y\r\nMGET m1 m2 nope\r\nEXISTS m1 m2\r\n" +
		"DEL a w\r\nGET a\r\nSET a 9 NX\r\nGET a\r\n")
	for _, want := range []string{
		"+OK", ":2", "+OK", "-ERR value is not an integer or out of range", "+OK",
		"-FENCED a newer fence has written this key", "$1", "v", "+PONG", "$1", "2", "+OK",
		"*3", "$1", "x", "$1", "y", "$-1", ":2",
		":2", "$-1", "+OK", "$1", "9",
	} {
		if got := r.line(); got != want {
			t.Fatalf("reply line %q; want %q", got, want)
		}
	}
	c := s.Client()
	for k, want := range map[string]string{"a": "9", "f": "v", "m2": "y"} {
		if v, err := c.Get(bg, k).Result(); err != nil || v != want {
			t.Errorf("another client reads %s = %q, %v; want %q", k, v, err, want)
		}
	}
}

// A pipelined write to a key another connection watches makes its EXEC
// fail, as a write on its own does.
func TestPipelinedWriteBreaksWatch(t *testing.T) {
	s := resptest.Start(t, tenure.Options{})
	watcher, writer := dialRaw(t, s), dialRaw(t, s)
	watcher.send("WATCH k\r\nMULTI\r\n")
	for _, want := range []string{"+OK", "+OK"} {
		if got := watcher.line(); got != want {
			t.Fatalf("watcher: %q; want %q", got, want)
		}
	}
	writer.send("SET other 1\r\nSET k 1\r\nGET k\r\n")
	for _, want := range []string{"+OK", "+OK", "$1", "1"} {
		if got := writer.line(); got != want {
			t.Fatalf("writer: %q; want %q", got, want)
		}
	}
	watcher.send("SET k 2\r\nEXEC\r\n")
	for _, want := range []string{"+QUEUED", "*-1"} {
		if got := watcher.line(); got != want {
			t.Fatalf("watcher: %q; want %q", got, want)
		}
	}
}
