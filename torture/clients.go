package main

// The child processes of lock clients, which the nemesis freezes: how the
// harness starts them, and what they run.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// clientConfig is what a child process of clients is told, in TORTURE_CLIENT.
type clientConfig struct {
	ID      string        `json:"id"`
	Addrs   []string      `json:"addrs"` // the proxies
	Nodes   []string      `json:"nodes"` // a cluster's nodes' advertised addresses (their proxies')
	Keys    keySet        `json:"keys"`
	TTL     time.Duration `json:"ttl"`
	Workers int           `json:"workers"`
	Retries int           `json:"retries"`
	Seed    uint64        `json:"seed"`
}

type childClients struct {
	id     string
	cmd    *exec.Cmd
	stdin  io.Closer
	done   chan struct{}
	mu     sync.Mutex
	frozen bool
	stderr strings.Builder
}

// startChild starts a child process of clients, whose events come as JSON
// lines on its stdout.
func (h *harness) startChild(cc clientConfig) (*childClients, error) {
	b, _ := json.Marshal(cc)
	exe := h.cfg.ClientExe
	cmd := exec.Command(exe[0], exe[1:]...)
	cmd.Env = append(os.Environ(), "TORTURE_CLIENT="+string(b))
	c := &childClients{id: cc.ID, cmd: cmd, done: make(chan struct{})}
	cmd.Stderr = &lockedWriter{mu: &c.mu, w: &c.stderr}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c.stdin = stdin
	go func() {
		defer close(c.done)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var e Event
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				c.mu.Lock()
				c.stderr.WriteString("stdout: " + sc.Text() + "\n")
				c.mu.Unlock()
				continue
			}
			h.history.Add(e)
		}
		cmd.Wait()
	}()
	return c, nil
}

func (c *childClients) freeze() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.frozen {
		c.cmd.Process.Signal(syscall.SIGSTOP)
		c.frozen = true
	}
}

func (c *childClients) thaw() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.frozen {
		c.cmd.Process.Signal(syscall.SIGCONT)
		c.frozen = false
	}
}

func (c *childClients) isFrozen() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.frozen
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *strings.Builder
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.w.Len() < 64<<10 {
		l.w.Write(p)
	}
	return len(p), nil
}

// clientMain is a child process of clients: it runs its workers until its
// stdin closes, and writes their events to stdout.
func clientMain(env string) int {
	var cc clientConfig
	if err := json.Unmarshal([]byte(env), &cc); err != nil {
		fmt.Fprintf(os.Stderr, "TORTURE_CLIENT: %v\n", err)
		return 2
	}
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(out)
	emit := func(e Event) {
		mu.Lock()
		enc.Encode(e)
		out.Flush()
		mu.Unlock()
	}
	ctx, stop := context.WithCancel(context.Background())
	go func() {
		io.Copy(io.Discard, os.Stdin)
		stop()
	}()
	var wg sync.WaitGroup
	for i := range cc.Workers {
		w, closeW, err := newWorker(cc.ID+"."+strconv.Itoa(i), cc.Addrs, cc.Nodes, cc.Keys, cc.TTL, cc.Retries, cc.Seed+uint64(i), emit)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		defer closeW()
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.run(ctx)
		}()
	}
	// An observer of one mutex key (observer.go), frozen with the workers.
	if len(cc.Keys.Mutex) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runObserver(ctx, cc.ID+".o", cc.Addrs, cc.Nodes, cc.Keys.Mutex[int(cc.Seed/1000)%len(cc.Keys.Mutex)], cc.TTL, emit)
		}()
	}
	wg.Wait()
	return 0
}
