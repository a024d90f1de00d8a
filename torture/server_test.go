package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// A server that does not exit on SIGTERM is dumped with SIGQUIT, and the
// file the error names holds what it logged before, a panic that a
// connection recovered from say (even one logged long before its last
// lines), and what SIGQUIT made it print.
func TestHungStopKeepsTheLogBeforeTheDump(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "hangs")
	script := `#!/bin/sh
trap '' TERM
trap 'echo goroutine 1 [dumped] >&2; exit 2' QUIT
echo "level=ERROR msg=\"panic serving a command\" stack=here" >&2
i=0; while [ $i -lt 300 ]; do echo "level=INFO msg=noise" >&2; i=$((i+1)); done
echo "msg=\"ready to accept connections\" addr=127.0.0.1:1" >&2
while :; do sleep 0.05; done
`
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	s := &server{bin: bin, dir: dir, stopWait: 200 * time.Millisecond}
	if _, err := s.start(); err != nil {
		t.Fatal(err)
	}
	err := s.stop()
	if err == nil {
		t.Fatal("stop of a server that ignores SIGTERM: no error")
	}
	m := regexp.MustCompile(`after SIGQUIT: (\S+)\)`).FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("the error names no file: %v", err)
	}
	defer os.Remove(m[1])
	b, rerr := os.ReadFile(m[1])
	if rerr != nil {
		t.Fatal(rerr)
	}
	text := string(b)
	logged, dumped := strings.Index(text, "panic serving a command"), strings.Index(text, "goroutine 1 [dumped]")
	if logged < 0 || dumped < 0 || logged > dumped {
		t.Fatalf("the file holds the log before SIGQUIT at %d and the dump at %d; want both, the log first:\n%s", logged, dumped, text)
	}
}
