package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure/internal/testenv"
)

// buildServer builds the binary into a temp dir, as this test was built
// (with -race or without): the packages are in the build cache already,
// and a race in the server shows here too.
func buildServer(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go tool to build the server: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "tenure")
	args := []string{"build", "-o", bin}
	if testenv.RaceEnabled() {
		args = append(args, "-race")
	}
	if out, err := exec.Command(goTool, append(args, ".")...).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestProcess runs the real binary, built once here, as a child process:
// what it promises on disk and at its edges (SPEC §6, §9) only shows in a
// process that can be killed.
func TestProcess(t *testing.T) {
	bin := buildServer(t)
	t.Run("KillLosesNoAcknowledgedWrite", func(t *testing.T) {
		for _, mode := range fsyncModes {
			t.Run(mode, func(t *testing.T) { testKillLosesNothing(t, bin, mode) })
		}
	})
	t.Run("KillLosesNoAcknowledgedPipeline", func(t *testing.T) {
		for _, mode := range fsyncModes {
			t.Run(mode, func(t *testing.T) { testKillLosesNoPipelinedWrite(t, bin, mode) })
		}
	})
	t.Run("KillKeepsAFence", func(t *testing.T) {
		for _, mode := range fsyncModes {
			t.Run(mode, func(t *testing.T) { testKillKeepsAFence(t, bin, mode) })
		}
	})
	t.Run("KillLeavesTransactionsWhole", func(t *testing.T) {
		for _, mode := range fsyncModes {
			t.Run(mode, func(t *testing.T) { testKillLeavesTransactionsWhole(t, bin, mode) })
		}
	})
	t.Run("KillLeavesScriptsWhole", func(t *testing.T) {
		for _, mode := range fsyncModes {
			t.Run(mode, func(t *testing.T) { testKillLeavesScriptsWhole(t, bin, mode) })
		}
	})
	t.Run("SignalsShutDownCleanly", func(t *testing.T) { testSignals(t, bin) })
	t.Run("BadStartsFailInOneLine", func(t *testing.T) { testBadStarts(t, bin) })
	t.Run("NonLoopbackNeedsUsersOrInsecure", func(t *testing.T) { testNonLoopback(t, bin) })
	t.Run("KeepsSysmonAwake", func(t *testing.T) { testKeepsSysmonAwake(t, bin) })
}

// fsyncModes are the values of --fsync. None of them lets a SIGKILL of the
// process lose an acknowledged write (SPEC §6): always answers once a write
// is on disk, everysec and no once it is in the operating system's hands.
var fsyncModes = []string{"always", "everysec", "no"}

var readyLine = regexp.MustCompile(`msg="ready to accept connections".* addr=(\S+)`)

// child is one run of the server binary.
type child struct {
	t      *testing.T
	cmd    *exec.Cmd
	addr   string
	exited chan struct{}
	err    error // from Wait, once exited is closed

	mu    sync.Mutex
	lines []string // its stderr
}

// startChild starts the binary with args and waits until it logs that
// it listens, and at which address.
func startChild(t *testing.T, bin string, args ...string) *child {
	t.Helper()
	return awaitReady(t, runChild(t, bin, args...), args)
}

// awaitReady waits until c logs that it listens, and at which address.
func awaitReady(t *testing.T, c *child, args []string) *child {
	t.Helper()
	ready := time.After(20 * time.Second)
	for c.addr == "" {
		select {
		case <-c.exited:
			t.Fatalf("tenure %s exited before it listened: %v\n%s", strings.Join(args, " "), c.err, c.stderr())
		case <-ready:
			c.cmd.Process.Kill()
			t.Fatalf("tenure %s did not listen within 20s\n%s", strings.Join(args, " "), c.stderr())
		case <-time.After(5 * time.Millisecond):
			c.mu.Lock()
			for _, l := range c.lines {
				if m := readyLine.FindStringSubmatch(l); m != nil {
					c.addr = m[1]
				}
			}
			c.mu.Unlock()
		}
	}
	return c
}

// runChild starts the binary and collects its stderr; the process is
// killed at the end of the test if it still runs.
func runChild(t *testing.T, bin string, args ...string) *child {
	t.Helper()
	return runCmd(t, exec.Command(bin, args...))
}

// runCmd is runChild of a command made ready to start.
func runCmd(t *testing.T, cmd *exec.Cmd) *child {
	t.Helper()
	c := &child{t: t, cmd: cmd, exited: make(chan struct{})}
	stderr, err := c.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			c.mu.Lock()
			c.lines = append(c.lines, sc.Text())
			c.mu.Unlock()
		}
		c.err = c.cmd.Wait()
		close(c.exited)
	}()
	t.Cleanup(func() {
		c.cmd.Process.Kill()
		<-c.exited
	})
	return c
}

func (c *child) stderr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.lines, "\n")
}

func (c *child) stderrLines() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.lines...)
}

// wait waits for the process to exit and returns its exit code.
func (c *child) wait(within time.Duration) int {
	c.t.Helper()
	select {
	case <-c.exited:
	case <-time.After(within):
		c.cmd.Process.Kill()
		c.t.Fatalf("still running after %v\n%s", within, c.stderr())
	}
	return c.cmd.ProcessState.ExitCode()
}

// killMidStream SIGKILLs the process once its writers, which count what
// was answered in answered, have run 1.5 s or had most answers, whichever
// comes first; it waits for the writers (wg) and the process to end, and
// fails the test if nothing was answered.
func (c *child) killMidStream(answered *atomic.Int64, most int64, wg *sync.WaitGroup) {
	c.t.Helper()
	for start := time.Now(); time.Since(start) < 1500*time.Millisecond && answered.Load() < most; {
		time.Sleep(5 * time.Millisecond)
	}
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		c.t.Fatal(err)
	}
	wg.Wait()
	c.wait(10 * time.Second)
	if answered.Load() == 0 {
		c.t.Fatalf("nothing was answered before the kill\n%s", c.stderr())
	}
}

func (c *child) client() *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: c.addr, MaxRetries: -1})
	c.t.Cleanup(func() { rdb.Close() })
	return rdb
}

// ack is what one writer was told was done, and what it sent that was
// never answered (it may or may not have happened).
type ack struct {
	counter        int64 // the last INCR reply
	sets           []int // i of each SET set:w:i v<i> answered OK
	pendingIncr    bool
	pendingSet     int // -1: none
	incrs, setAcks int
}

// Whatever the fsync mode, a write is answered only once the operating
// system has it: eight writers INCR and SET their own keys until the
// process is SIGKILLed in mid-stream, and after a restart on the same
// directory every answered write is there, and nothing that was never sent.
func testKillLosesNothing(t *testing.T, bin, mode string) {
	dir := t.TempDir()
	srv := startChild(t, bin, "--fsync", mode, "--addr", "127.0.0.1:0", "--dir", dir)
	const writers = 8
	acks := make([]ack, writers)
	var answered atomic.Int64
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rdb := redis.NewClient(&redis.Options{Addr: srv.addr, MaxRetries: -1, PoolSize: 1})
			defer rdb.Close()
			a := &acks[w]
			a.pendingSet = -1
			ctx := context.Background()
			for i := 0; ; i++ {
				if i%2 == 0 {
					n, err := rdb.Incr(ctx, fmt.Sprintf("ctr:%d", w)).Result()
					if err != nil {
						a.pendingIncr = true
						return
					}
					a.counter, a.incrs = n, a.incrs+1
				} else {
					if err := rdb.Set(ctx, fmt.Sprintf("set:%d:%d", w, i), fmt.Sprintf("v%d", i), 0).Err(); err != nil {
						a.pendingSet = i
						return
					}
					a.sets, a.setAcks = append(a.sets, i), a.setAcks+1
				}
				answered.Add(1)
			}
		}()
	}
	// SIGKILL in mid-stream, all eight writing.
	srv.killMidStream(&answered, 20000, &wg)

	again := startChild(t, bin, "--fsync", mode, "--addr", "127.0.0.1:0", "--dir", dir)
	rdb := again.client()
	ctx := context.Background()
	var acked, lost, incrs, sets int
	present := map[string]bool{}
	iter := rdb.Scan(ctx, 0, "set:*", 1000).Iterator()
	for iter.Next(ctx) {
		present[iter.Val()] = true
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	for w, a := range acks {
		incrs += a.incrs
		sets += a.setAcks
		acked += a.incrs + a.setAcks
		// The counter holds every answered INCR, and at most the one that
		// was in flight besides.
		got, err := rdb.Get(ctx, fmt.Sprintf("ctr:%d", w)).Int64()
		if err == redis.Nil {
			got, err = 0, nil
		}
		if err != nil {
			t.Fatal(err)
		}
		maxWant := a.counter
		if a.pendingIncr {
			maxWant++
		}
		if got < a.counter {
			lost += int(a.counter - got)
			t.Errorf("writer %d: counter %d after restart, but INCR answered %d", w, got, a.counter)
		} else if got > maxWant {
			t.Errorf("writer %d: counter %d after restart, more than the %d sent", w, got, maxWant)
		}
		for _, i := range a.sets {
			k := fmt.Sprintf("set:%d:%d", w, i)
			v, err := rdb.Get(ctx, k).Result()
			if err != nil || v != fmt.Sprintf("v%d", i) {
				lost++
				t.Errorf("%s: acknowledged, now %q, %v", k, v, err)
			}
			delete(present, k)
		}
		if a.pendingSet >= 0 {
			delete(present, fmt.Sprintf("set:%d:%d", w, a.pendingSet))
		}
	}
	for k := range present {
		t.Errorf("%s is there, but was never sent", k)
	}
	t.Logf("SIGKILL after %d acknowledged writes (%d INCR, %d SET) from %d writers; after the restart %d lost", acked, incrs, sets, writers, lost)
	if err := again.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := again.wait(10 * time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM", code)
	}
}

// LOCK-12 across a SIGKILL: a key written with SET … FENCE f, the process
// killed the moment the OK arrives, still refuses an older fence after the
// restart. Had the fenced write vanished in the crash, the stale holder it
// fenced out could write again.
func testKillKeepsAFence(t *testing.T, bin, mode string) {
	dir := t.TempDir()
	srv := startChild(t, bin, "--fsync", mode, "--addr", "127.0.0.1:0", "--dir", dir)
	ctx := context.Background()
	rdb := srv.client()
	grant, err := rdb.Do(ctx, "LOCK.HOLD", "L", "k", "r1").Slice()
	if err != nil || len(grant) != 3 {
		t.Fatalf("LOCK.HOLD L k r1: %v %v", grant, err)
	}
	fence := grant[1].(int64)
	if err := rdb.Do(ctx, "SET", "k", "v", "FENCE", fence).Err(); err != nil {
		t.Fatalf("SET k v FENCE %d: %v", fence, err)
	}
	if err := srv.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	srv.wait(10 * time.Second)

	again := startChild(t, bin, "--fsync", mode, "--addr", "127.0.0.1:0", "--dir", dir)
	rdb = again.client()
	err = rdb.Do(ctx, "SET", "k", "late", "FENCE", fence-1).Err()
	if err == nil || !strings.HasPrefix(err.Error(), "FENCED ") {
		t.Errorf("after the restart, SET k late FENCE %d = %v; want FENCED", fence-1, err)
	}
	if v, err := rdb.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Errorf("after the restart, GET k = %q, %v; want the fenced write %q", v, err, "v")
	}
}

// SIGTERM and SIGINT: the server stops accepting, closes the store
// cleanly, logs it, and exits 0; what was written is there on the next
// open, which is a new epoch.
func testSignals(t *testing.T, bin string) {
	dir := t.TempDir()
	for i, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		srv := startChild(t, bin, "--addr", "127.0.0.1:0", "--dir", dir)
		rdb := srv.client()
		ctx := context.Background()
		if i > 0 {
			if got, err := rdb.Get(ctx, "k0").Result(); err != nil || got != "v" {
				t.Fatalf("after %v and a restart: GET k0 = %q, %v", syscall.SIGTERM, got, err)
			}
			if info := rdb.Info(ctx, "locks").Val(); !strings.Contains(info, "\r\nepoch:2\r\n") {
				t.Fatalf("the second open is not epoch 2: %q", info)
			}
		}
		// --fsync everysec: only the clean close makes this durable now.
		if err := rdb.Set(ctx, fmt.Sprintf("k%d", i), "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := srv.cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		if code := srv.wait(15 * time.Second); code != 0 {
			t.Fatalf("exit %d after %v\n%s", code, sig, srv.stderr())
		}
		log := srv.stderr()
		for _, want := range []string{"signal received; shutting down", "store closed; bye"} {
			if !strings.Contains(log, want) {
				t.Errorf("after %v the log lacks %q:\n%s", sig, want, log)
			}
		}
	}
	srv := startChild(t, bin, "--addr", "127.0.0.1:0", "--dir", dir)
	if got, err := srv.client().MGet(context.Background(), "k0", "k1").Result(); err != nil || fmt.Sprint(got) != "[v v]" {
		t.Fatalf("after SIGINT and a restart: MGET = %v, %v", got, err)
	}
}

// A bad flag or an unusable data directory: one line of error, a
// non-zero exit, and nothing listening (SPEC §9).
func testBadStarts(t *testing.T, bin string) {
	notADir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notADir, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--no-such-flag"}, "flag provided but not defined: -no-such-flag"},
		{[]string{"--fsync", "sometimes"}, `fsync mode "sometimes"`},
		{[]string{"--max-clients", "0"}, "--max-clients must be at least 1"},
		{[]string{"--max-clients", "many"}, `invalid value "many" for flag -max-clients`},
		{[]string{"--log-level", "loud"}, `--log-level "loud"`},
		{[]string{"--users", filepath.Join(dir, "missing")}, "users file"},
		{[]string{"--addr", "127.0.0.1:0", "stray"}, `unexpected argument "stray"`},
		{[]string{"--addr", "127.0.0.1:0", "--dir", notADir}, "not a directory"},
		{[]string{"--addr", "127.0.0.1:0", "--dir", filepath.Join(notADir, "sub")}, "not a directory"},
		{[]string{"--addr", "127.0.0.1:99999", "--dir", dir}, "99999"},
	} {
		c := runChild(t, bin, tc.args...)
		code := c.wait(15 * time.Second)
		lines := c.stderrLines()
		if code == 0 {
			t.Errorf("tenure %s: exit 0", strings.Join(tc.args, " "))
		}
		if len(lines) == 0 || !strings.HasPrefix(lines[len(lines)-1], "tenure: ") || !strings.Contains(lines[len(lines)-1], tc.want) {
			t.Errorf("tenure %s: want a last line `tenure: …%s…`, got:\n%s", strings.Join(tc.args, " "), tc.want, c.stderr())
		}
		errors := 0
		for _, l := range lines {
			if strings.HasPrefix(l, "tenure: ") {
				errors++
			}
			if strings.Contains(l, "ready to accept connections") {
				t.Errorf("tenure %s listened before failing:\n%s", strings.Join(tc.args, " "), c.stderr())
			}
		}
		if errors != 1 || (tc.want != "99999" && len(lines) != 1) {
			t.Errorf("tenure %s: want one line of error, got:\n%s", strings.Join(tc.args, " "), c.stderr())
		}
	}
}

// Without a users file every connection is admin, so a non-loopback
// address is refused unless --insecure says so (SPEC §5).
func testNonLoopback(t *testing.T, bin string) {
	dir := t.TempDir()
	c := runChild(t, bin, "--addr", "0.0.0.0:0", "--dir", dir)
	if code := c.wait(15 * time.Second); code == 0 {
		t.Fatalf("0.0.0.0 without users or --insecure: exit 0")
	}
	if log := c.stderr(); !strings.Contains(log, "--insecure") || strings.Contains(log, "ready to accept") || strings.Count(log, "\n") != 0 {
		t.Fatalf("0.0.0.0 without users: want one line naming --insecure, got:\n%s", log)
	}
	for _, args := range [][]string{
		{"--addr", "0.0.0.0:0", "--dir", dir, "--insecure"},
		{"--addr", "localhost:0", "--dir", dir},
	} {
		srv := startChild(t, bin, args...)
		srv.cmd.Process.Signal(syscall.SIGTERM)
		if code := srv.wait(15 * time.Second); code != 0 {
			t.Fatalf("tenure %s: exit %d", strings.Join(args, " "), code)
		}
	}
	users := filepath.Join(dir, "users")
	if err := os.WriteFile(users, []byte("user admin admin sha256:"+strings.Repeat("0", 64)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startChild(t, bin, "--addr", "0.0.0.0:0", "--dir", dir, "--users", users)
	srv.cmd.Process.Signal(syscall.SIGTERM)
	if code := srv.wait(15 * time.Second); code != 0 {
		t.Fatalf("0.0.0.0 with users: exit %d", code)
	}
}
