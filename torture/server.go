package main

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// server is the tenure process under test, started (and SIGKILLed, and
// started again) on one data directory.
type server struct {
	bin, dir string
	addrFlag string   // --addr; "": any port
	extra    []string // more flags: a cluster node's
	// stopWait is how long stop waits after SIGTERM before it dumps the
	// server's goroutines (0: 40 s).
	stopWait time.Duration

	mu   sync.Mutex
	cmd  *exec.Cmd
	addr string
	done chan struct{} // closed when cmd has exited
	tail []string      // its last lines of stderr, over every run
	// panics are its first lines that tell of a panic, over every run: a
	// hung stop's cause may be one logged long before the tail.
	panics []string
	dump   []string // stderr after a SIGQUIT (a hung stop's goroutines), nil before
	crash  []string // how runs ended that nobody killed
}

var readyLine = regexp.MustCompile(`ready to accept connections.* addr=(\S+)`)

// buildServer builds cmd/tenure into dir, with -race when race is set.
func buildServer(dir string, race bool) (string, error) {
	bin := filepath.Join(dir, "tenure")
	args := []string{"build", "-o", bin}
	if race {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, "github.com/tenure-db/tenure/cmd/tenure")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
}

// start runs the server with --fsync always (the counters are the
// resource, and must not lose an acknowledged write to a SIGKILL) and waits
// until it listens.
func (s *server) start() (string, error) {
	addr := s.addrFlag
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	cmd := exec.Command(s.bin, append([]string{"--addr", addr, "--dir", s.dir, "--fsync", "always", "--max-clients", "2000"}, s.extra...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	done := make(chan struct{})
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			if s.dump != nil {
				s.dump = append(s.dump, line)
			}
			s.tail = append(s.tail, line)
			if strings.Contains(line, "panic") && len(s.panics) < 20 {
				s.panics = append(s.panics, line)
			}
			if len(s.tail) > 400 {
				s.tail = s.tail[len(s.tail)-200:]
			}
			s.mu.Unlock()
			if m := readyLine.FindStringSubmatch(line); m != nil {
				select {
				case ready <- m[1]:
				default:
				}
			}
		}
		err := cmd.Wait()
		// Our SIGKILL, or a clean exit on our SIGTERM: anything else is
		// the server failing.
		killed := false
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			killed = true
		}
		s.mu.Lock()
		quit := s.dump != nil // our SIGQUIT of a hung stop, told by stop
		if !killed && !quit && cmd.ProcessState.ExitCode() != 0 {
			s.crash = append(s.crash, fmt.Sprintf("exited by itself: %v", err))
		}
		s.mu.Unlock()
		close(done)
	}()
	select {
	case addr := <-ready:
		s.mu.Lock()
		s.cmd, s.addr, s.done = cmd, addr, done
		s.mu.Unlock()
		return addr, nil
	case <-done:
		return "", fmt.Errorf("the server exited before it listened:\n%s", s.lastLines(20))
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
		return "", fmt.Errorf("the server did not listen within 30s:\n%s", s.lastLines(20))
	}
}

// kill SIGKILLs the server and waits for it to be gone.
func (s *server) kill() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// signal sends sig to the server, if it runs.
func (s *server) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		s.cmd.Process.Signal(sig)
	}
}

// stop asks the server to shut down cleanly, and kills it if it does not.
func (s *server) stop() error {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return nil
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
		if code := cmd.ProcessState.ExitCode(); code != 0 {
			return fmt.Errorf("the server exited %d after SIGTERM:\n%s", code, s.lastLines(20))
		}
		return nil
	case <-time.After(cmp.Or(s.stopWait, 40*time.Second)):
		// SIGQUIT: Go prints every goroutine's stack, which says what
		// held the shutdown up; it goes to a file beside the history,
		// after what the server logged before it (a panic a connection
		// recovered from is logged there, and is not in the stacks).
		logged := s.lastLines(200)
		s.mu.Lock()
		if len(s.panics) > 0 {
			logged = "lines that tell of a panic, from its whole log:\n" + strings.Join(s.panics, "\n") + "\n\nits last lines:\n" + logged
		}
		s.mu.Unlock()
		s.mu.Lock()
		s.dump = []string{}
		s.mu.Unlock()
		cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		s.mu.Lock()
		dump := strings.Join(s.dump, "\n")
		s.dump = nil
		s.mu.Unlock()
		where := "(not written)"
		if f, err := os.CreateTemp("", "torture-hung-stop-*.txt"); err == nil {
			f.WriteString("the server's log before SIGQUIT:\n" + logged + "\n\nafter SIGQUIT:\n" + dump)
			f.Close()
			where = f.Name()
		}
		return fmt.Errorf("the server did not exit within %v of SIGTERM (its log and goroutines, after SIGQUIT: %s):\n%s", cmp.Or(s.stopWait, 40*time.Second), where, s.lastLines(20))
	}
}

// running says whether the server runs.
func (s *server) running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

func (s *server) address() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

func (s *server) lastLines(n int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.tail[max(0, len(s.tail)-n):], "\n")
}

// info reads INFO locks from the server directly, not through the proxy.
func (s *server) info(ctx context.Context) (map[string]string, error) {
	rdb := redis.NewClient(&redis.Options{Addr: s.address(), MaxRetries: 2})
	defer rdb.Close()
	text, err := rdb.Info(ctx, "locks").Result()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(text, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = v
		}
	}
	return out, nil
}

func removeAll(dir string) { os.RemoveAll(dir) }
