package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// epochBinary builds ./cmd/tenure once into a temp dir.
func epochBinary(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go tool to build the server: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "tenure")
	cmd := exec.Command(goTool, "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

var epochReady = regexp.MustCompile(`ready to accept connections.* addr=(\S+)`)

// epochProcess is one run of the server binary.
type epochProcess struct {
	cmd  *exec.Cmd
	addr string
	mu   sync.Mutex
	log  []string // its stderr, for failures
	done chan struct{}
}

// epochStart starts the binary on dir and a free port, and waits for the
// line that says it listens.
func epochStart(t *testing.T, bin, dir string) *epochProcess {
	t.Helper()
	cmd := exec.Command(bin, "--addr", "127.0.0.1:0", "--dir", dir)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &epochProcess{cmd: cmd, done: make(chan struct{})}
	t.Cleanup(p.kill)
	ready := make(chan string, 1)
	go func() {
		// Read stderr to its end, so the server never blocks on a full pipe.
		defer close(p.done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.log = append(p.log, sc.Text())
			p.mu.Unlock()
			if m := epochReady.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case ready <- m[1]:
				default:
				}
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	select {
	case p.addr = <-ready:
	case <-p.done:
		p.kill()
		t.Fatalf("server exited before it was ready:\n%s", p.stderr())
	case <-time.After(20 * time.Second):
		p.kill()
		t.Fatalf("server not ready within 20s:\n%s", p.stderr())
	}
	return p
}

func (p *epochProcess) stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.log, "\n")
}

// kill sends SIGKILL and reaps the process; calling it again does nothing.
func (p *epochProcess) kill() {
	if p.cmd.ProcessState != nil {
		return
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.cmd.Wait()
	<-p.done
}

// LOCK-02, LOCK-10: a real server process killed with SIGKILL 20 times in a
// row, some times while clients are taking leases, some times as soon as it
// says it listens: every fence after each restart is larger than every
// fence before it, each open has made a new epoch durable (the epoch
// grows by exactly one per open), and a reopened store holds no lease.
func TestLOCK02FencesGrowAcrossKills(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the server 20 times")
	}
	bin := epochBinary(t)
	dir := filepath.Join(t.TempDir(), "data")
	var maxFence, lastEpoch int64
	var lastID string
	for round := range 20 {
		p := epochStart(t, bin, dir)
		if round%5 == 4 {
			// Killed at once: the epoch was made durable before it listened.
			p.kill()
			lastEpoch++
			continue
		}
		rdb := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1})
		ctx := context.Background()
		if lastID != "" {
			if err := rdb.Do(ctx, "LOCK.RENEW", lastID).Err(); err == nil || err.Error() != "LOST unknown lease" {
				t.Fatalf("round %d: renewing a lease from before the kill: %v, want LOST unknown lease", round, err)
			}
		}
		// First fences by hand, then a stream of HOLD/RELEASE from a few
		// clients that the kill interrupts.
		for i := range 3 {
			fence, id := epochHold(t, rdb, fmt.Sprint("k", i), fmt.Sprintf("r%d-%d", round, i))
			if fence <= maxFence {
				t.Fatalf("round %d: fence %d (epoch %d) not above %d (epoch %d) from before the kill",
					round, fence, fence>>32, maxFence, maxFence>>32)
			}
			if epoch := fence >> 32; epoch != lastEpoch+1 {
				t.Fatalf("round %d: epoch %d, the open before had %d: each open adds 1", round, epoch, lastEpoch)
			}
			maxFence, lastID = fence, id
		}
		lastEpoch = maxFence >> 32
		var wg sync.WaitGroup
		fences := make(chan int64, 1<<16)
		for c := range 4 {
			nc, err := net.Dial("tcp", p.addr)
			if err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer nc.Close()
				epochStream(nc, fmt.Sprint(c), fmt.Sprintf("s%d-%d-", round, c), fences)
			}()
		}
		// Kill once the stream has granted a little.
		for range 20 {
			select {
			case f := <-fences:
				maxFence = max(maxFence, f)
			case <-time.After(10 * time.Second):
				t.Fatalf("round %d: the stream of holds stalled:\n%s", round, p.stderr())
			}
		}
		p.kill()
		wg.Wait()
		close(fences)
		for f := range fences {
			maxFence = max(maxFence, f)
		}
		rdb.Close()
	}
	p := epochStart(t, bin, dir)
	rdb := redis.NewClient(&redis.Options{Addr: p.addr})
	defer rdb.Close()
	if fence, _ := epochHold(t, rdb, "last", "last"); fence <= maxFence || fence>>32 != lastEpoch+1 {
		t.Fatalf("after 20 kills: fence %d (epoch %d), before %d (epoch %d)", fence, fence>>32, maxFence, lastEpoch)
	}
	// A clean stop still works on a directory killed 20 times.
	p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.cmd.Wait(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("SIGTERM: exit %v\n%s", err, p.stderr())
		}
	}
	<-p.done
}

func epochHold(t *testing.T, rdb *redis.Client, key, reqid string) (int64, string) {
	t.Helper()
	v, err := rdb.Do(context.Background(), "LOCK.HOLD", "L", key, reqid, "TTL", 60000).Slice()
	if err != nil || len(v) != 3 {
		t.Fatalf("LOCK.HOLD L %s %s: %v %v", key, reqid, v, err)
	}
	return v[1].(int64), v[0].(string)
}

// epochStream holds and releases key of lock "stream" over nc until the
// connection fails (the kill), sending each fence it is granted. It speaks
// RESP by hand: go-redis would log its failed redials after the kill.
func epochStream(nc net.Conn, key, reqid string, fences chan<- int64) {
	br := bufio.NewReader(nc)
	send := func(args ...string) error {
		b := fmt.Appendf(nil, "*%d\r\n", len(args))
		for _, a := range args {
			b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(a), a)
		}
		_, err := nc.Write(b)
		return err
	}
	line := func() string {
		l, err := br.ReadString('\n')
		if err != nil {
			return ""
		}
		return strings.TrimSuffix(l, "\r\n")
	}
	for i := 0; ; i++ {
		// A grant is *3, $32, the id, :fence, :ttl.
		if send("LOCK.HOLD", "stream", key, reqid+strconv.Itoa(i), "WAIT", "0") != nil || line() != "*3" || line() != "$32" {
			return
		}
		id := line()
		fence, err := strconv.ParseInt(strings.TrimPrefix(line(), ":"), 10, 64)
		if err != nil || line() == "" {
			return
		}
		fences <- fence
		if send("LOCK.RELEASE", id) != nil || line() != ":1" {
			return
		}
	}
}
