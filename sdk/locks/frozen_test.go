package locks_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure/sdk/locks"
)

// A frozen holder: a holder in a child process is stopped with SIGSTOP.
// Its renewals stop with it, so a second holder gets the key within the ttl.
// On SIGCONT the first holder's context is already done, its Hold returns
// ErrLost though its function returned nil, and its late SET … FENCE with
// the old fence is refused (LOCK-12). The child reports over stdout.
func TestFrozenHolder(t *testing.T) {
	const ttl = time.Second
	s := startServer(t)

	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), helperEnv+"=frozen-holder", "TENURE_ADDR="+s.Addr)
	var stderr bytes.Buffer
	child.Stderr = &stderr
	stdin, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{}) // closed once childErr is set
	var childErr error
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		childErr = child.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		child.Process.Signal(syscall.SIGCONT)
		child.Process.Kill()
		<-exited
	})
	report := func(what string) string {
		t.Helper()
		line, ok := <-lines
		if !ok {
			t.Fatalf("child exited before reporting %s; stderr:\n%s", what, stderr.String())
		}
		got, value, _ := strings.Cut(line, " ")
		if got != what {
			t.Fatalf("child reported %q, want %s", line, what)
		}
		return value
	}

	first, err := strconv.ParseInt(report("held"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()

	c := s.Client()
	lk := openLock(t, c, "frozen", locks.TTL(ttl))
	err = lk.Hold(context.Background(), "job", func(ctx context.Context, lease *locks.Lease) error {
		took := time.Since(stopped)
		// The store grants within 10 ms of the deadline (LOCK-06), which is
		// within a ttl of the freeze; the rest is this Hold's own work.
		if took > ttl+500*time.Millisecond {
			t.Errorf("the key came %v after the holder froze, want within the ttl (%v)", took, ttl)
		}
		if left := time.Until(lease.Deadline()); left < 600*time.Millisecond {
			t.Errorf("after waiting in line, fn starts with %v to its deadline: want it renewed first", left)
		}
		if lease.Fence <= first {
			t.Errorf("second fence %#x, first %#x", lease.Fence, first)
		}
		if err := c.Do(ctx, "SET", "report", "fresh", "FENCE", lease.Fence).Err(); err != nil {
			t.Errorf("fenced write of the live holder: %v", err)
		}

		// Wake the frozen holder while this one still holds the key.
		if err := child.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(stdin, "resumed")
		if got := report("ctx-done"); got != "true" {
			t.Errorf("the woken holder's context done: %s, want true at once", got)
		}
		if got := report("lost"); !strings.Contains(got, "lease lost: expired") {
			t.Errorf("the woken holder's Lease.Lost: %s", got)
		}
		if got := report("late-write"); !strings.HasPrefix(got, "FENCED") {
			t.Errorf("the woken holder's late write with fence %#x: %s, want FENCED", first, got)
		}
		if got := report("hold"); !strings.HasPrefix(got, "lost=true ") {
			t.Errorf("the woken holder's Hold: %s, want ErrLost though fn returned nil", got)
		}
		t.Logf("key came back %v after the freeze; fences %#x then %#x", took, first, lease.Fence)
		return nil
	})
	if err != nil {
		t.Fatalf("second Hold: %v", err)
	}
	if v, err := c.Get(context.Background(), "report").Result(); v != "fresh" || err != nil {
		t.Errorf("GET report = %q, %v: want the live holder's write", v, err)
	}
	recv(t, exited, 10*time.Second, "the child to exit")
	if childErr != nil {
		t.Errorf("child: %v; stderr:\n%s", childErr, stderr.String())
	}
	noLeaks(t)
}

// runHelper runs a helper mode in a child process and returns its exit code.
func runHelper(mode string) int {
	switch mode {
	case "frozen-holder":
		return frozenHolder(os.Getenv("TENURE_ADDR"))
	}
	fmt.Fprintf(os.Stderr, "unknown helper mode %q\n", mode)
	return 2
}

// frozenHolder holds frozen/job and reports over stdout: "held FENCE"; then,
// once stdin says it was resumed, what its lease looks like and what its late
// write gets; then what Hold returned.
func frozenHolder(addr string) int {
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	lk, err := locks.OpenLock(c, "frozen", locks.TTL(time.Second))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	in := bufio.NewScanner(os.Stdin)
	err = lk.Hold(context.Background(), "job", func(ctx context.Context, lease *locks.Lease) error {
		fmt.Printf("held %d\n", lease.Fence)
		in.Scan() // the parent stops this process here, and says when it resumed it
		fmt.Printf("ctx-done %v\n", ctx.Err() != nil)
		fmt.Printf("lost %v\n", lease.Lost())
		late := c.Do(context.Background(), "SET", "report", "late", "FENCE", lease.Fence).Err()
		fmt.Printf("late-write %v\n", late)
		return nil // the function thinks it succeeded
	})
	fmt.Printf("hold lost=%v %v\n", errors.Is(err, locks.ErrLost), err)
	return 0
}
