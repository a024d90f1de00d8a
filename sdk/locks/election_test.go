package locks_test

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure"
	"github.com/tenure-db/tenure/internal/testenv"
	"github.com/tenure-db/tenure/sdk/locks"
)

// candidate campaigns for key with value until resign is closed, telling
// its lease on leading; done gets Campaign's result.
type candidate struct {
	leading chan *locks.Lease
	resign  chan struct{}
	done    chan error
	ctx     chan context.Context // fn's context, once it leads
}

func campaign(l *locks.Lock, key, value string) *candidate {
	c := &candidate{leading: make(chan *locks.Lease, 1), resign: make(chan struct{}), done: make(chan error, 1), ctx: make(chan context.Context, 1)}
	go func() {
		c.done <- l.Campaign(context.Background(), key, value, func(ctx context.Context, lease *locks.Lease) error {
			c.ctx <- ctx
			c.leading <- lease
			select {
			case <-c.resign:
			case <-ctx.Done():
			}
			return nil
		})
	}()
	return c
}

// next receives the observer's next leader.
func next(t *testing.T, obs <-chan locks.Leader, what string) locks.Leader {
	t.Helper()
	ld, ok := <-recvOK(t, obs, what)
	if !ok {
		t.Fatalf("%s: the observer's channel closed", what)
	}
	return ld
}

// recvOK is recv for a channel that may close.
func recvOK(t *testing.T, ch <-chan locks.Leader, what string) <-chan locks.Leader {
	t.Helper()
	out := make(chan locks.Leader, 1)
	select {
	case ld, ok := <-ch:
		if ok {
			out <- ld
		}
		close(out)
		return out
	case <-time.After(15 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		return nil
	}
}

// SPEC §12: observe yields none, then A, then B with a larger fence when
// A resigns and B was waiting; Leader agrees at each step.
func TestElectionObserveNoneThenAThenB(t *testing.T) {
	s := startServer(t)
	c := newClient(t, s.Addr)
	l := openLock(t, c, "sched", locks.TTL(5*time.Second))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if ld, err := l.Leader(ctx, "main"); err != nil || ld != nil {
		t.Fatalf("Leader of a free key: %v %v", ld, err)
	}
	obs := l.Observe(ctx, "main")
	if ld := next(t, obs, "the first leader"); !ld.None() {
		t.Fatalf("first: %v, want none", ld)
	}
	a := campaign(l, "main", "node-a:8080")
	la := recv(t, a.leading, 5*time.Second, "A leads")
	if ld := next(t, obs, "A"); ld.Owner != "node-a:8080" || ld.Fence != la.Fence {
		t.Fatalf("observed %v, want A with term %d", ld, la.Fence)
	}
	b := campaign(l, "main", "node-b:8080")
	waitersAre(t, c, "sched", "main", 1)
	if ld, err := l.Leader(ctx, "main"); err != nil || ld == nil || ld.Owner != "node-a:8080" {
		t.Fatalf("Leader while A leads and B waits: %v %v", ld, err)
	}
	close(a.resign)
	if err := recv(t, a.done, 5*time.Second, "A's campaign ends"); err != nil {
		t.Fatalf("A resigned: %v", err)
	}
	lb := recv(t, b.leading, 5*time.Second, "B leads")
	ld := next(t, obs, "B")
	if ld.Owner != "node-b:8080" || ld.Fence != lb.Fence || ld.Fence <= la.Fence {
		t.Fatalf("observed %v after A resigned, want B with term %d > %d", ld, lb.Fence, la.Fence)
	}
	if cur, err := l.Leader(ctx, "main"); err != nil || *cur != ld {
		t.Fatalf("Leader: %v %v, want %v", cur, err, ld)
	}
	close(b.resign)
	<-b.done
	if ld := next(t, obs, "none after B"); !ld.None() {
		t.Fatalf("after B resigned: %v, want none", ld)
	}
	cancel()
	if _, ok := <-recvOK(t, obs, "the channel closing"); ok {
		t.Fatal("the channel yielded after ctx ended")
	}
}

// A leader whose lease is revoked is cancelled as every holder is, and its
// campaign fails lost; observers see it go.
func TestElectionRevokedLeaderIsCancelled(t *testing.T) {
	s := startServer(t)
	c := newClient(t, s.Addr)
	l := openLock(t, c, "sched", locks.TTL(5*time.Second))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	obs := l.Observe(ctx, "main")
	next(t, obs, "none")
	a := campaign(l, "main", "A")
	la := recv(t, a.leading, 5*time.Second, "A leads")
	actx := recv(t, a.ctx, time.Second, "A's context")
	next(t, obs, "A")
	if err := c.Do(ctx, "LOCK.REVOKE", "sched", "main").Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-actx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("a revoked leader's work was not cancelled")
	}
	err := recv(t, a.done, 5*time.Second, "A's campaign ends")
	if !errors.Is(err, locks.ErrLost) || lostReason(err) != locks.ReasonRevoked {
		t.Fatalf("revoked leader's Campaign: %v, want lost, revoked by admin", err)
	}
	if ld := next(t, obs, "none after the revoke"); !ld.None() {
		t.Fatalf("after the revoke: %v (A was %d)", ld, la.Fence)
	}
}

// An observer outlives a cut connection (CLIENT KILL of its watch): it
// watches again with its last fence and misses no change.
func TestElectionObserverOutlivesCutConnection(t *testing.T) {
	s := startServer(t)
	c := newClient(t, s.Addr)
	watcherClient := newClient(t, s.Addr)
	l := openLock(t, c, "sched")
	lw := openLock(t, watcherClient, "sched")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	obs := lw.Observe(ctx, "main")
	next(t, obs, "none")
	for round := range 3 {
		waitFor(t, 5*time.Second, "the observer watching", func() bool { return lockStats(t, c)["watchers"] == 1 })
		killed, err := c.Do(ctx, "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes").Int64()
		if err != nil || killed == 0 {
			t.Fatalf("CLIENT KILL: %v %v", killed, err)
		}
		a := campaign(l, "main", "A")
		la := recv(t, a.leading, 5*time.Second, "A leads")
		if ld := next(t, obs, "A after the cut"); ld.Fence != la.Fence {
			t.Fatalf("round %d: %v after the cut, want A (%d)", round, ld, la.Fence)
		}
		close(a.resign)
		<-a.done
		if ld := next(t, obs, "none"); !ld.None() {
			t.Fatalf("round %d: %v, want none", round, ld)
		}
	}
}

// An observer outlives a restart of the store (the real binary, killed and
// started again on its directory): the new epoch shows as none, then the
// new leader, with a larger term.
func TestElectionObserverOutlivesRestart(t *testing.T) {
	bin := buildTenure(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	srv := startTenure(t, bin, addr, dir)
	c := newClient(t, addr, func(o *redis.Options) { o.MaxRetries = -1 })
	l := openLock(t, c, "sched", locks.TTL(5*time.Second))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	obs := l.Observe(ctx, "main")
	next(t, obs, "none")
	a := campaign(l, "main", "A")
	la := recv(t, a.leading, 5*time.Second, "A leads")
	if ld := next(t, obs, "A"); ld.Fence != la.Fence {
		t.Fatalf("%v, want A", ld)
	}
	srv.Process.Kill()
	srv.Wait()
	srv = startTenure(t, bin, addr, dir)
	if err := recv(t, a.done, 15*time.Second, "A's campaign ends"); !errors.Is(err, locks.ErrLost) {
		t.Fatalf("A after the restart: %v, want lost", err)
	}
	if ld := next(t, obs, "none after the restart"); !ld.None() {
		t.Fatalf("after the restart: %v, want none", ld)
	}
	b := campaign(l, "main", "B")
	lb := recv(t, b.leading, 10*time.Second, "B leads")
	ld := next(t, obs, "B")
	if ld.Owner != "B" || ld.Fence != lb.Fence || ld.Fence>>32 <= la.Fence>>32 {
		t.Fatalf("after the restart: %v, want B in a later epoch than %d", ld, la.Fence)
	}
	close(b.resign)
	<-b.done
}

// SPEC §11: campaign, leader and observe on the store in this process: the
// same election, its leader cancelled when revoked.
func TestElectionInProcess(t *testing.T) {
	db, err := tenure.Open(t.TempDir(), tenure.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	l := openLock(t, db, "sched")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	obs := l.Observe(ctx, "main")
	next(t, obs, "none")
	a := campaign(l, "main", "in-process")
	la := recv(t, a.leading, 5*time.Second, "A leads")
	if ld := next(t, obs, "A"); ld.Owner != "in-process" || ld.Fence != la.Fence {
		t.Fatalf("observed %v, want the in-process leader (%d)", ld, la.Fence)
	}
	if ld, err := l.Leader(ctx, "main"); err != nil || ld == nil || ld.Fence != la.Fence {
		t.Fatalf("Leader: %v %v", ld, err)
	}
	b := campaign(l, "main", "second")
	waitFor(t, 5*time.Second, "B in line", func() bool {
		v, _ := db.Do(ctx, "LOCK.INFO", "sched", "main").Slice()
		return len(v) == 18 && v[9] == int64(1) // waiters
	})
	actx := recv(t, a.ctx, time.Second, "A's context")
	if err := db.Do(ctx, "LOCK.REVOKE", "sched", "main").Err(); err != nil {
		t.Fatal(err)
	}
	<-actx.Done()
	if err := <-a.done; lostReason(err) != locks.ReasonRevoked {
		t.Fatalf("revoked in-process leader: %v", err)
	}
	lb := recv(t, b.leading, 5*time.Second, "B leads")
	if ld := next(t, obs, "B"); ld.Owner != "second" || ld.Fence != lb.Fence || ld.Fence <= la.Fence {
		t.Fatalf("observed %v, want B (%d)", ld, lb.Fence)
	}
	close(b.resign)
	<-b.done
	cancel()
}

// buildTenure builds cmd/tenure into a temp dir, with -race if this test
// was built so.
func buildTenure(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go tool: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "tenure")
	args := []string{"build", "-o", bin}
	if testenv.RaceEnabled() {
		args = append(args, "-race")
	}
	if out, err := exec.Command(goTool, append(args, "github.com/tenure-db/tenure/cmd/tenure")...).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startTenure runs the binary on addr and dir and waits until it answers.
func startTenure(t *testing.T, bin, addr, dir string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, "--addr", addr, "--dir", dir)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	waitFor(t, 15*time.Second, "the server answering", func() bool {
		err := c.Ping(context.Background()).Err()
		return err == nil || !strings.Contains(err.Error(), "connect")
	})
	return cmd
}
