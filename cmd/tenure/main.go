// Command tenure runs the tenure server: a Redis-protocol key-value store
// with a lock module of leases and fencing tokens. It is package tenure
// plus flags, signals and logging: it parses flags, opens the store with
// tenure.Open, serves it, and turns SIGINT and SIGTERM into a clean
// shutdown; and it sets the Go runtime up for a server (sysmon.go). It holds
// no logic of the store's own.
//
// "tenure lock … LOCK KEY -- COMMAND" (lock.go) is the other thing it
// does: run a command while holding a lock of a tenure store, through the
// Go SDK (SPEC §14).
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/tenure-db/tenure"
	"github.com/tenure-db/tenure/kv"
	"github.com/tenure-db/tenure/resp"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != "lock" {
		if _, _, ok := parseFlags(os.Args[1:], io.Discard); ok {
			keepSysmonAwake() // sysmon.go; a bad command line fails as it is
		}
	}
	os.Exit(run(os.Args[1:], os.Stderr))
}

func run(args []string, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "lock" {
		return runLock(args[1:], stderr) // lock.go (SPEC §14)
	}
	f, code, ok := parseFlags(args, stderr)
	if !ok {
		return code
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "tenure: %v\n", err)
		return 1
	}
	opts, err := f.options(stderr)
	if err != nil {
		return fail(err)
	}
	if err := serve(f.dir, opts, f.listenAddr(opts.Cluster), f.httpAddr); err != nil {
		return fail(err)
	}
	return 0
}

// flags are tenure's command line (SPEC §9).
type flags struct {
	addr, dir, fsync, usersFile string
	insecure                    bool
	maxConns                    int
	maxBulk                     int64
	logLevel, logFormat         string
	httpAddr                    string // --http-addr, or its alias --metrics-addr
	auditEvents                 int
	tlsCert, tlsKey, tlsCA      string
	cluster                     clusterFlags // cluster.go
	addrSet                     bool         // --addr was given
}

// parseFlags reads args. A bad flag is one line of error (SPEC §9); only -h
// prints the usage. When ok is false, run returns code.
func parseFlags(args []string, stderr io.Writer) (f flags, code int, ok bool) {
	fs := flag.NewFlagSet("tenure", flag.ContinueOnError)
	fs.StringVar(&f.addr, "addr", "127.0.0.1:6379", "`HOST:PORT` to listen on (in a cluster: by default this node's --peers address, which is where the others reach it)")
	fs.StringVar(&f.dir, "dir", "./data", "data `directory`")
	fs.StringVar(&f.fsync, "fsync", "everysec", "durability: always, everysec or no")
	fs.StringVar(&f.usersFile, "users", "", "users `file`: lines of `user NAME ROLE sha256:HEX`")
	fs.BoolVar(&f.insecure, "insecure", false, "allow a non-loopback address without a users file")
	fs.IntVar(&f.maxConns, "max-clients", 10000, "most connections at once")
	fs.Int64Var(&f.maxBulk, "proto-max-bulk-len", 512<<20, "largest bulk string a client may send, in `bytes`")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&f.logFormat, "log-format", "text", "log lines as text (key=value) or json")
	fs.StringVar(&f.httpAddr, "http-addr", "", "serve the dashboard at http://`HOST:PORT`/ and Prometheus metrics at /metrics")
	fs.StringVar(&f.httpAddr, "metrics-addr", "", "the same as --http-addr")
	fs.IntVar(&f.auditEvents, "audit-events", resp.DefaultAuditEvents, "how many lock events to keep in memory for LOCK.EVENTS and the dashboard (0: none)")
	fs.StringVar(&f.tlsCert, "tls-cert", "", "serve TLS with this PEM certificate `file` (with --tls-key)")
	fs.StringVar(&f.tlsKey, "tls-key", "", "PEM private key `file` of --tls-cert")
	fs.StringVar(&f.tlsCA, "tls-client-ca", "", "require client certificates signed by the CAs in this PEM `file`")
	f.cluster.define(fs)
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fmt.Fprintln(stderr, "Usage: tenure [flags]\n       tenure lock [options] LOCK KEY -- COMMAND [ARG...]   (see tenure lock -h)\n\nFlags:")
			fs.PrintDefaults()
			return f, 0, false
		}
		fmt.Fprintf(stderr, "tenure: %v\n", err)
		return f, 2, false
	}
	fs.Visit(func(fl *flag.Flag) { f.addrSet = f.addrSet || fl.Name == "addr" })
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "tenure: %v\n", fmt.Errorf("unexpected argument %q", fs.Arg(0)))
		return f, 1, false
	}
	return f, 0, true
}

// options checks the flags against each other and reads the files they
// name, in the order a user meets the errors; the logger writes to stderr.
func (f flags) options(stderr io.Writer) (tenure.Options, error) {
	mode, err := kv.ParseFsyncMode(f.fsync)
	if err != nil {
		return tenure.Options{}, err
	}
	level := new(slog.LevelVar)
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return tenure.Options{}, fmt.Errorf("--log-level %q: want debug, info, warn or error", f.logLevel)
	}
	if f.logFormat != "text" && f.logFormat != "json" {
		return tenure.Options{}, fmt.Errorf("--log-format %q: want text or json", f.logFormat)
	}
	if f.maxConns < 1 {
		return tenure.Options{}, fmt.Errorf("--max-clients must be at least 1")
	}
	if f.maxBulk < 1 {
		return tenure.Options{}, fmt.Errorf("--proto-max-bulk-len must be at least 1")
	}
	var users *resp.Users
	if f.usersFile != "" {
		if users, err = resp.LoadUsers(f.usersFile); err != nil {
			return tenure.Options{}, err
		}
	}
	tlsConfig, err := f.tls()
	if err != nil {
		return tenure.Options{}, err
	}
	clusterOpts, err := f.clusterOptions(users != nil)
	if err != nil {
		return tenure.Options{}, err
	}
	if addr := f.listenAddr(clusterOpts); users == nil && !f.insecure && !isLoopback(addr) {
		return tenure.Options{}, fmt.Errorf("refusing to listen on %s without a users file (--users): anyone who can reach it would be admin; pass --insecure to do it anyway", addr)
	}
	// The dashboard and metrics listener follows the same rule: without
	// users, only loopback unless --insecure (SPEC §14).
	if f.httpAddr != "" && users == nil && !f.insecure && !isLoopback(f.httpAddr) {
		return tenure.Options{}, fmt.Errorf("refusing to serve the dashboard and metrics on %s without a users file (--users): anyone who can reach it would see every lock; pass --insecure to do it anyway", f.httpAddr)
	}
	if f.auditEvents < 0 {
		return tenure.Options{}, fmt.Errorf("--audit-events must be 0 or more")
	}
	auditEvents := f.auditEvents
	if auditEvents == 0 {
		auditEvents = -1 // none: tenure.Options' 0 is the default
	}
	var handler slog.Handler = slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})
	if f.logFormat == "json" {
		handler = slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level})
	}
	return tenure.Options{
		Fsync:       mode,
		MaxClients:  f.maxConns,
		Limits:      resp.Limits{MaxBulkLen: f.maxBulk},
		Logger:      slog.New(handler),
		Users:       users,
		LogLevel:    level,
		TLS:         tlsConfig,
		Cluster:     clusterOpts,
		AuditEvents: auditEvents,
	}, nil
}

// tls is the TLS configuration the --tls flags ask for, nil for none.
func (f flags) tls() (*tls.Config, error) {
	switch {
	case (f.tlsCert == "") != (f.tlsKey == ""):
		return nil, fmt.Errorf("--tls-cert and --tls-key go together")
	case f.tlsCA != "" && f.tlsCert == "":
		return nil, fmt.Errorf("--tls-client-ca needs --tls-cert and --tls-key")
	case f.tlsCert != "":
		return resp.LoadTLS(f.tlsCert, f.tlsKey, f.tlsCA)
	}
	return nil, nil
}

// serve opens the store, listens on addr (and httpAddr, if set), and
// serves until SIGINT or SIGTERM, or SHUTDOWN, has closed it.
func serve(dir string, opts tenure.Options, addr, httpAddr string) error {
	log := opts.Logger
	db, err := tenure.Open(dir, opts)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		db.Close()
		return err
	}
	if httpAddr != "" {
		hln, err := net.Listen("tcp", httpAddr)
		if err != nil {
			ln.Close()
			db.Close()
			return fmt.Errorf("--http-addr: %w", err)
		}
		// The store owns it: Close stops it.
		go func() {
			if err := db.ServeHTTP(hln); !errors.Is(err, tenure.ErrClosed) {
				log.Error("dashboard and metrics server stopped", "err", err)
			}
		}()
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		select {
		case <-ctx.Done():
			log.Info("signal received; shutting down")
			db.Close()
		case <-db.Done():
		}
	}()
	if err := db.Serve(ln); !errors.Is(err, tenure.ErrClosed) {
		db.Close()
		return err
	}
	<-db.Done()
	return nil
}

// isLoopback says whether addr's host is a loopback address or name.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
