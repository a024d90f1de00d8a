package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// A target is one server configuration the scenarios run against.
type target struct {
	Name  string // tenure, redis-aof, redis, etcd
	Redis bool   // a redis-server (the SET NX PX recipe) rather than tenure
	AOF   bool   // redis-server with appendonly yes, appendfsync everysec
	Etcd  bool   // etcd-server, locks through concurrency.Mutex; lock scenarios only
	// Dashboard: tenure with --http-addr and its dashboard open for the
	// whole run (an event stream read as a page reads it), for its cost
	// (SPEC §14).
	Dashboard bool
	About     string // one line for the header
}

var allTargets = []*target{
	{Name: "tenure", About: "tenure --fsync everysec (leases in memory, epoch on disk; keys on Pebble)"},
	{Name: "redis-aof", Redis: true, AOF: true, About: "redis-server, appendonly yes, appendfsync everysec (the fair comparison)"},
	{Name: "redis", Redis: true, About: "redis-server, persistence off (save \"\", appendonly no)"},
	{Name: "etcd", Etcd: true, About: "etcd-server, one member, defaults (fsync on every commit); lock scenarios only"},
	{Name: "tenure-dashboard", Dashboard: true, About: "tenure as above, with --http-addr and a dashboard open: its event stream (/api/stream) read for the whole run"},
}

// startOptions are what a scenario asks of the server it runs against.
type startOptions struct {
	// fsyncAlways: every write durable before it is answered (the
	// durability scenarios): tenure --fsync always, redis-server
	// appendfsync always. etcd does so always.
	fsyncAlways bool
	// node, if not nil, makes the server one member of a cluster (the
	// cluster mode, cluster_members.go).
	node *clusterNode
}

// process is one running server, started fresh for each run so that no run
// inherits another's leases, garbage or CPU time.
type process struct {
	target *target
	cmd    *exec.Cmd
	pid    int
	addr   string
	dir    string
	logf   *os.File
	exited chan struct{} // closed when the process has exited
	logged chan struct{} // closed when all its output is in its log
	err    error         // its Wait error, once exited is closed
	ready  chan string   // tenure's address, from its ready line
	// httpAddr is the dashboard's address (target.Dashboard); streamed
	// counts the bytes its event stream sent.
	httpAddr string
	streamed atomic.Int64
}

// launcher starts servers: the tenure binary it built, redis-server from
// PATH, both under the same taskset (or neither).
type launcher struct {
	tenureBin string
	redisBin  string
	etcdBin   string
	taskset   string // path of taskset; empty: no pinning
	cpus      string // CPU list for the servers, as taskset -c takes it
	tmp       string // the run's temp dir; each server gets a dir inside
	seq       int
}

// start launches a fresh server for t and waits until it answers PING.
func (l *launcher) start(ctx context.Context, t *target, opt startOptions) (*process, error) {
	l.seq++
	p, err := l.spawn(t, opt, filepath.Join(l.tmp, fmt.Sprintf("%03d-%s", l.seq, t.Name)))
	if err != nil {
		return nil, err
	}
	if err := p.waitReady(ctx); err != nil {
		return nil, err
	}
	if t.Dashboard {
		if err := p.openDashboard(ctx); err != nil {
			p.stop()
			return nil, err
		}
	}
	return p, nil
}

// openDashboard reads the dashboard's event stream, as an open page does,
// until the server stops.
func (p *process) openDashboard(ctx context.Context) error {
	var res *http.Response
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var err error
		if res, err = http.Get("http://" + p.httpAddr + "/api/stream"); err == nil {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("the dashboard's event stream: %w", err)
		}
	}
	go func() {
		defer res.Body.Close()
		buf := make([]byte, 64<<10)
		for {
			n, err := res.Body.Read(buf)
			p.streamed.Add(int64(n))
			if err != nil {
				return
			}
		}
	}()
	return nil
}

// spawn launches a server for t in dir (a dir of an earlier server: it
// starts again on that server's data) and does not wait for it.
func (l *launcher) spawn(t *target, opt startOptions, dir string) (*process, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(filepath.Join(dir, "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	p := &process{target: t, dir: dir, logf: logf, exited: make(chan struct{}), logged: make(chan struct{}), ready: make(chan string, 1)}
	var argv []string
	switch {
	case opt.node != nil && t.Etcd:
		p.addr = opt.node.addr
		argv = append([]string{l.etcdBin}, opt.node.etcdArgs(filepath.Join(dir, "data"))...)
	case opt.node != nil:
		p.addr = opt.node.addr
		argv = append([]string{l.tenureBin, "--node-id", opt.node.id, "--peers", opt.node.peers, "--dir", filepath.Join(dir, "data"),
			"--fsync", "everysec", "--max-clients", "19000"}, opt.node.extra...)
	case t.Redis:
		port, err := freePort()
		if err != nil {
			logf.Close()
			return nil, err
		}
		p.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		conf := filepath.Join(dir, "redis.conf")
		if err := os.WriteFile(conf, redisConf(port, dir, t.AOF, opt.fsyncAlways), 0o644); err != nil {
			logf.Close()
			return nil, err
		}
		argv = []string{l.redisBin, conf}
	case t.Etcd:
		ports, err := freePorts(2)
		if err != nil {
			logf.Close()
			return nil, err
		}
		p.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
		argv = append([]string{l.etcdBin}, etcdArgs(filepath.Join(dir, "data"), "bench", ports[0], ports[1], "")...)
	default:
		fsync := "everysec"
		if opt.fsyncAlways {
			fsync = "always"
		}
		// Port 0: tenure logs the address it got, and we read it there.
		argv = []string{l.tenureBin, "--addr", "127.0.0.1:0", "--dir", filepath.Join(dir, "data"),
			"--fsync", fsync, "--max-clients", "19000"}
		if t.Dashboard {
			port, err := freePort()
			if err != nil {
				logf.Close()
				return nil, err
			}
			p.httpAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
			argv = append(argv, "--http-addr", p.httpAddr)
		}
	}
	if l.taskset != "" {
		// taskset execs the server in place, so the pid stays the server's.
		argv = append([]string{l.taskset, "-c", l.cpus}, argv...)
	}
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.Stdout = logf
	p.cmd.Stderr = logf
	var pw *io.PipeWriter
	isTenure := !t.Redis && !t.Etcd
	if isTenure {
		var pr *io.PipeReader
		pr, pw = io.Pipe()
		p.cmd.Stderr = pw
		go func() {
			defer close(p.logged)
			watchReady(pr, logf, p.ready)
		}()
	} else {
		close(p.logged)
	}
	if err := p.cmd.Start(); err != nil {
		if pw != nil {
			pw.Close()
			<-p.logged
		}
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", t.Name, err)
	}
	p.pid = p.cmd.Process.Pid
	go func() {
		p.err = p.cmd.Wait()
		if pw != nil {
			pw.Close() // watchReady drains what is left and returns
		}
		close(p.exited)
	}()
	return p, nil
}

// waitReady waits until the server answers: tenure's ready line logged and
// PING answered, etcd's Status.
func (p *process) waitReady(ctx context.Context) error {
	t := p.target
	isTenure := !t.Redis && !t.Etcd
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	if isTenure {
		select {
		case p.addr = <-p.ready:
		case <-p.exited:
			return fmt.Errorf("tenure exited before it was ready (%v): %s", p.err, p.logTail())
		case <-deadline.C:
			p.stop()
			return fmt.Errorf("tenure did not log %q within 30s: %s", readyLine, p.logTail())
		case <-ctx.Done():
			p.stop()
			return ctx.Err()
		}
	}
	// Both must answer before a run starts: wait for the listener, not a
	// sleep. (A raw PING: go-redis's pool backs off for a second after a
	// failed dial, which would add a second to every run.)
	answers := ping
	if t.Etcd {
		answers = etcdAnswers
	}
	for {
		err := answers(p.addr)
		if err == nil {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited before it was ready (%v): %s", t.Name, p.err, p.logTail())
		case <-deadline.C:
			p.stop()
			return fmt.Errorf("%s was not ready within 30s (%v): %s", t.Name, err, p.logTail())
		case <-ctx.Done():
			p.stop()
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// ping sends PING on a fresh connection and wants +PONG.
func ping(addr string) error {
	nc, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(time.Second))
	if _, err := nc.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(nc).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	return nil
}

const readyLine = "ready to accept connections"

// watchReady copies tenure's stderr to its log and sends the address of its
// "ready to accept connections addr=HOST:PORT" line.
func watchReady(r io.Reader, log io.Writer, ready chan<- string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	sent := false
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(log, line)
		if sent || !strings.Contains(line, readyLine) {
			continue
		}
		for _, f := range strings.Fields(line) {
			if a, ok := strings.CutPrefix(f, "addr="); ok {
				ready <- strings.Trim(a, `"`)
				sent = true
			}
		}
	}
	io.Copy(log, r)
}

// redisConf is a redis.conf for a benchmark server: loopback, its own dir,
// no RDB snapshots, AOF as asked, and room for as many clients as tenure.
func redisConf(port int, dir string, aof, fsyncAlways bool) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "bind 127.0.0.1\nport %d\nprotected-mode no\ndaemonize no\n", port)
	fmt.Fprintf(&b, "dir %q\nlogfile \"\"\nloglevel warning\nsave \"\"\nmaxclients 19000\n", dir)
	switch {
	case aof && fsyncAlways:
		b.WriteString("appendonly yes\nappendfsync always\n")
	case aof:
		b.WriteString("appendonly yes\nappendfsync everysec\n")
	default:
		b.WriteString("appendonly no\n")
	}
	return b.Bytes()
}

// stop asks the server to exit (SIGTERM) and kills it if it has not within
// 20 seconds; it removes the server's data.
func (p *process) stop() {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		p.cmd.Process.Kill()
		<-p.exited
	}
	<-p.logged
	p.logf.Close()
	os.RemoveAll(filepath.Join(p.dir, "data"))
	os.RemoveAll(filepath.Join(p.dir, "appendonlydir"))
}

// logTail is the end of the server's log, for an error message.
func (p *process) logTail() string {
	b, _ := os.ReadFile(p.logf.Name())
	if len(b) > 600 {
		b = b[len(b)-600:]
	}
	return strings.TrimSpace(string(b))
}

// cpuTime is the server's user+system CPU time so far, from /proc/PID/stat
// (fields 14 and 15, in USER_HZ ticks: 100 a second on Linux).
func (p *process) cpuTime() (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; fields after it may not.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("unreadable /proc/PID/stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("short /proc/PID/stat")
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(utime+stime) * (time.Second / 100), nil
}

// rss is the server's resident set (VmRSS of /proc/PID/status), in bytes.
func (p *process) rss() (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) != 2 || f[1] != "kB" {
				break
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmRSS in /proc/PID/status")
}

// freePort asks the kernel for a free loopback port. Another process could
// take it before the server binds it; start then fails and says so.
func freePort() (int, error) {
	ps, err := freePorts(1)
	if err != nil {
		return 0, err
	}
	return ps[0], nil
}

// freePorts is n distinct free loopback ports, all held open until all are
// found so that none is handed out twice.
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer ln.Close()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
