package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure/sdk/locks"
)

// tenure lock (SPEC §14): a command held by a lock, for shell scripts and
// cron, as consul lock and etcdctl lock are. It is the Go SDK's Hold
// around a child process: the lease's loss, the child's exit and the
// signals tenure lock receives are what it waits on.

// Exit statuses of tenure lock's own, apart from COMMAND's.
const (
	exitLockError = 1  // a bad flag, or the store refused or could not be reached
	exitNotHeld   = 75 // not held within --wait (sysexits' EX_TEMPFAIL: try again later)
	exitLost      = 76 // the lease was lost while COMMAND ran; COMMAND was stopped
)

const lockUsage = `Usage: tenure lock [options] LOCK KEY -- COMMAND [ARG...]

  Holds the key KEY of the lock LOCK in a tenure store while COMMAND runs,
  so that only one COMMAND (or N with --limit) runs at a time for that key,
  wherever it is started.

  COMMAND runs in its own process group, with these in its environment:

      TENURE_LOCK    the lock's name
      TENURE_KEY     the key held
      TENURE_FENCE   the lease's fence: a number larger than every fence
                     granted before it. Hand it to what COMMAND writes to
                     (SET … FENCE, or a column the writes compare), so that
                     a COMMAND that lost its lease cannot overwrite the
                     work of the next one.

  The lease is renewed while COMMAND runs and let go when it exits. SIGINT,
  SIGTERM and SIGHUP are passed on to COMMAND's process group. If the lease
  is lost (revoked, or not renewed in time: a frozen tenure lock, a store
  out of reach for a ttl), COMMAND's process group gets SIGTERM, then
  SIGKILL after --grace. Should tenure lock itself be killed, COMMAND gets
  SIGTERM (on Linux).

Exit status:

  COMMAND's own status (128 + the signal's number if a signal ended it), or:

      75   not held within --wait: another holder has the key
      76   the lease was lost while COMMAND ran, and COMMAND was stopped
       1   a bad flag, or the store refused the request or was out of reach
           (2 for a flag tenure lock does not know)
     127   COMMAND was not found (126: it could not be started)

Options:

  --url=URL
      The store: redis://[user:password@]host:port, or rediss:// for TLS
      (the system's certificate roots, or the file SSL_CERT_FILE names).
      Repeat it, one URL a node, for a cluster: the leader is followed.
      Default: $TENURE_URL (URLs separated by commas), else
      redis://127.0.0.1:6379.

  --ttl=30s
      How long the lease lasts without a renewal (1s to 1h): within about
      this long of tenure lock freezing or losing the store, another may
      hold the key.

  --wait=0s
      How long to wait in line for the key. 0s tries once; a negative
      value waits without a limit.

  --limit=N
      Let up to N holders hold the key at once (a semaphore). Every holder
      of the key must use the same N.

  --shared
      Hold the key as a reader: shared with other --shared holders, never
      with a plain one.

  --owner=TEXT
      What LOCK.INFO and the dashboard show of this holder. Default:
      hostname:pid.

  --max-hold=D
      Give the key up D after it was granted (1s to 24h), renewals
      notwithstanding: COMMAND is stopped as if the lease were lost.

  --grace=10s
      How long COMMAND has between SIGTERM and SIGKILL once the lease is
      lost.
`

// urlList is a repeatable --url.
type urlList []string

func (u *urlList) String() string     { return strings.Join(*u, ",") }
func (u *urlList) Set(s string) error { *u = append(*u, s); return nil }

// lockFlags are tenure lock's command line.
type lockFlags struct {
	urls               urlList
	ttl, wait          time.Duration
	maxHold, grace     time.Duration
	limit              int
	shared             bool
	owner              string
	lock, key          string
	command            []string
	ownerSet, limitSet bool
}

func parseLockFlags(args []string, stderr io.Writer) (f lockFlags, code int, ok bool) {
	fs := flag.NewFlagSet("tenure lock", flag.ContinueOnError)
	fs.Var(&f.urls, "url", "")
	fs.DurationVar(&f.ttl, "ttl", 30*time.Second, "")
	fs.DurationVar(&f.wait, "wait", 0, "")
	fs.IntVar(&f.limit, "limit", 0, "")
	fs.BoolVar(&f.shared, "shared", false, "")
	fs.StringVar(&f.owner, "owner", "", "")
	fs.DurationVar(&f.maxHold, "max-hold", 0, "")
	fs.DurationVar(&f.grace, "grace", 10*time.Second, "")
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fail := func(format string, a ...any) (lockFlags, int, bool) {
		fmt.Fprintf(stderr, "tenure lock: "+format+"\n", a...)
		fmt.Fprintln(stderr, "Run 'tenure lock -h' for its usage.")
		return f, 2, false
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stderr, lockUsage)
			return f, 0, false
		}
		return fail("%v", err)
	}
	fs.Visit(func(fl *flag.Flag) {
		f.ownerSet = f.ownerSet || fl.Name == "owner"
		f.limitSet = f.limitSet || fl.Name == "limit"
	})
	rest := fs.Args()
	if len(rest) < 2 {
		return fail("want LOCK KEY -- COMMAND [ARG...]")
	}
	f.lock, f.key, rest = rest[0], rest[1], rest[2:]
	if len(rest) > 0 && rest[0] == "--" {
		rest = rest[1:]
	}
	if len(rest) == 0 {
		return fail("no COMMAND to run after %s %s --", f.lock, f.key)
	}
	f.command = rest
	if f.shared && f.limitSet {
		return fail("--limit and --shared do not go together")
	}
	if f.grace < 0 {
		return fail("--grace must not be negative")
	}
	if len(f.urls) == 0 {
		if env := os.Getenv("TENURE_URL"); env != "" {
			f.urls = strings.Split(env, ",")
		} else {
			f.urls = urlList{"redis://127.0.0.1:6379"}
		}
	}
	return f, 0, true
}

// client is the go-redis client the URLs describe: one node, or a cluster
// client seeded with every node (SPEC §10), its user, password and TLS
// those of the first URL.
func (f lockFlags) client() (redis.UniversalClient, error) {
	var opts []*redis.Options
	for _, u := range f.urls {
		o, err := redis.ParseURL(strings.TrimSpace(u))
		if err != nil {
			return nil, fmt.Errorf("--url %q: %w", u, err)
		}
		opts = append(opts, o)
	}
	if len(opts) == 1 {
		return redis.NewClient(opts[0]), nil
	}
	first := opts[0]
	if first.TLSConfig != nil {
		// Each node is checked against its own name, not the first's.
		first.TLSConfig.ServerName = ""
	}
	co := &redis.ClusterOptions{
		Username: first.Username, Password: first.Password, TLSConfig: first.TLSConfig,
		ClusterStateReloadInterval: 300 * time.Millisecond, // find a new leader soon after a failover
		MaxRedirects:               8,
	}
	for _, o := range opts {
		co.Addrs = append(co.Addrs, o.Addr)
	}
	return redis.NewClusterClient(co), nil
}

func (f lockFlags) lockOptions() []locks.Option {
	opts := []locks.Option{locks.TTL(f.ttl)}
	if f.maxHold != 0 {
		opts = append(opts, locks.MaxHold(f.maxHold))
	}
	if f.limitSet {
		opts = append(opts, locks.Limit(f.limit))
	}
	if f.ownerSet {
		opts = append(opts, locks.Owner(f.owner))
	}
	if f.wait > 0 {
		opts = append(opts, locks.Wait(f.wait))
	}
	return opts
}

// runLock is tenure lock: it returns the exit status.
func runLock(args []string, stderr io.Writer) int {
	f, code, ok := parseLockFlags(args, stderr)
	if !ok {
		return code
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "tenure lock: %v\n", err)
		return exitLockError
	}
	// go-redis logs each failed dial; what matters reaches the user as
	// the error that ends the hold.
	redis.SetLogger(quiet{})
	client, err := f.client()
	if err != nil {
		return fail(err)
	}
	defer client.Close()
	l, err := locks.OpenLock(client, f.lock, f.lockOptions()...)
	if err != nil {
		return fail(err)
	}

	// A signal while waiting in line gives up the wait; once COMMAND runs,
	// signals are COMMAND's (see runHeld).
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(signals)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	waiting := make(chan struct{})
	var gotSignal os.Signal
	go func() {
		select {
		case sig := <-signals:
			gotSignal = sig
			cancel(fmt.Errorf("%v while waiting in line", sig))
		case <-waiting:
		}
	}()

	status := 0
	hold := l.Hold
	switch {
	case f.shared && f.wait == 0:
		hold = l.TryHoldShared
	case f.shared:
		hold = l.HoldShared
	case f.wait == 0:
		hold = l.TryHold
	}
	err = hold(ctx, f.key, func(ctx context.Context, lease *locks.Lease) error {
		close(waiting)
		status = runHeld(ctx, f, lease, signals, stderr)
		return nil
	})
	switch {
	case errors.Is(err, locks.ErrLost):
		fmt.Fprintf(stderr, "tenure lock: %s %s: %v\n", f.lock, f.key, err)
		return exitLost
	case errors.Is(err, locks.ErrNotHeld) && gotSignal != nil:
		return 128 + int(gotSignal.(syscall.Signal))
	case errors.Is(err, locks.ErrNotHeld):
		who := ""
		if ld, lerr := l.Leader(context.Background(), f.key); lerr == nil && ld != nil {
			who = fmt.Sprintf(": held by %q (fence %d)", ld.Owner, ld.Fence)
		}
		fmt.Fprintf(stderr, "tenure lock: %s %s not held within --wait %v%s\n", f.lock, f.key, f.wait, who)
		return exitNotHeld
	case err != nil:
		return fail(err)
	}
	return status
}

// runHeld runs COMMAND while the lease is held, and returns its exit
// status (127 if it was not found, 126 if it could not start, as a shell). Signals are passed on to
// its process group; when ctx ends (the lease was lost) the group gets
// SIGTERM, then SIGKILL after --grace.
func runHeld(ctx context.Context, f lockFlags, lease *locks.Lease, signals <-chan os.Signal, stderr io.Writer) int {
	cmd := exec.Command(f.command[0], f.command[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(),
		"TENURE_LOCK="+f.lock, "TENURE_KEY="+f.key, "TENURE_FENCE="+strconv.FormatInt(lease.Fence, 10))
	cmd.SysProcAttr = commandAttr()
	// Pdeathsig follows the thread that started COMMAND (lock_linux.go):
	// keep it for COMMAND's life.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "tenure lock: %v\n", err)
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return 127 // as a shell says it
		}
		return 126
	}
	pgid := cmd.Process.Pid
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	var kill <-chan time.Time
	lost := ctx.Done()
	for {
		select {
		case <-exited:
			return exitStatus(cmd.ProcessState)
		case sig := <-signals:
			syscall.Kill(-pgid, sig.(syscall.Signal))
		case <-lost:
			lost = nil
			fmt.Fprintf(stderr, "tenure lock: %s %s: the lease was lost (%v); stopping COMMAND\n", f.lock, f.key, context.Cause(ctx))
			syscall.Kill(-pgid, syscall.SIGTERM)
			t := time.NewTimer(f.grace)
			defer t.Stop()
			kill = t.C
		case <-kill:
			kill = nil
			syscall.Kill(-pgid, syscall.SIGKILL)
		}
	}
}

// quiet is a go-redis logger that says nothing.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// exitStatus is a shell's: the code, or 128 + the signal that ended it.
func exitStatus(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
