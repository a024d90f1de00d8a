// Command tenure runs the tenure server: a Redis-protocol key-value store
// with a lock module of leases and fencing tokens. It parses flags, wires
// the store, the lock module and the listener together, and turns SIGINT
// and SIGTERM into a clean shutdown. It holds no logic of its own.
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
	"time"

	"github.com/tenure-db/tenure/kv"
	"github.com/tenure-db/tenure/resp"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

// shutdownGrace is how long running commands get to finish on SIGTERM.
const shutdownGrace = 30 * time.Second

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("tenure", flag.ContinueOnError)
	var (
		addr      = fs.String("addr", "127.0.0.1:6379", "`HOST:PORT` to listen on")
		dir       = fs.String("dir", "./data", "data `directory`")
		fsync     = fs.String("fsync", "everysec", "durability: always, everysec or no")
		usersFile = fs.String("users", "", "users `file`: lines of `user NAME ROLE sha256:HEX`")
		insecure  = fs.Bool("insecure", false, "allow a non-loopback address without a users file")
		maxConns  = fs.Int("max-clients", 10000, "most connections at once")
		maxBulk   = fs.Int64("proto-max-bulk-len", 512<<20, "largest bulk string a client may send, in `bytes`")
		logLevel  = fs.String("log-level", "info", "debug, info, warn or error")
		logFormat = fs.String("log-format", "text", "log lines as text (key=value) or json")
		metrics   = fs.String("metrics-addr", "", "serve Prometheus metrics at http://`HOST:PORT`/metrics")
		tlsCert   = fs.String("tls-cert", "", "serve TLS with this PEM certificate `file` (with --tls-key)")
		tlsKey    = fs.String("tls-key", "", "PEM private key `file` of --tls-cert")
		tlsCA     = fs.String("tls-client-ca", "", "require client certificates signed by the CAs in this PEM `file`")
	)
	// A bad flag is one line of error (SPEC §9); only -h prints the usage.
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fs.PrintDefaults()
			return 0
		}
		fmt.Fprintf(stderr, "tenure: %v\n", err)
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "tenure: %v\n", err)
		return 1
	}
	if fs.NArg() > 0 {
		return fail(fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	mode, err := kv.ParseFsyncMode(*fsync)
	if err != nil {
		return fail(err)
	}
	level := new(slog.LevelVar)
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fail(fmt.Errorf("--log-level %q: want debug, info, warn or error", *logLevel))
	}
	if *logFormat != "text" && *logFormat != "json" {
		return fail(fmt.Errorf("--log-format %q: want text or json", *logFormat))
	}
	if *maxConns < 1 {
		return fail(fmt.Errorf("--max-clients must be at least 1"))
	}
	if *maxBulk < 1 {
		return fail(fmt.Errorf("--proto-max-bulk-len must be at least 1"))
	}
	var users *resp.Users
	if *usersFile != "" {
		if users, err = resp.LoadUsers(*usersFile); err != nil {
			return fail(err)
		}
	}
	var tlsConfig *tls.Config
	switch {
	case (*tlsCert == "") != (*tlsKey == ""):
		return fail(fmt.Errorf("--tls-cert and --tls-key go together"))
	case *tlsCA != "" && *tlsCert == "":
		return fail(fmt.Errorf("--tls-client-ca needs --tls-cert and --tls-key"))
	case *tlsCert != "":
		if tlsConfig, err = resp.LoadTLS(*tlsCert, *tlsKey, *tlsCA); err != nil {
			return fail(err)
		}
	}
	if users == nil && !*insecure && !isLoopback(*addr) {
		return fail(fmt.Errorf("refusing to listen on %s without a users file (--users): anyone who can reach it would be admin; pass --insecure to do it anyway", *addr))
	}
	// The metrics listener follows the same rule: without users, only
	// loopback unless --insecure.
	if *metrics != "" && users == nil && !*insecure && !isLoopback(*metrics) {
		return fail(fmt.Errorf("refusing to serve metrics on %s without a users file (--users); pass --insecure to do it anyway", *metrics))
	}
	var handler slog.Handler = slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})
	if *logFormat == "json" {
		handler = slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level})
	}
	log := slog.New(handler)

	srv, err := resp.Open(resp.Config{
		Dir:        *dir,
		Fsync:      mode,
		MaxClients: *maxConns,
		Limits:     resp.Limits{MaxBulkLen: *maxBulk},
		Logger:     log,
		Users:      users,
		LogLevel:   level,
		TLS:        tlsConfig,
	})
	if err != nil {
		return fail(err)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		srv.Shutdown(context.Background())
		return fail(err)
	}
	if *metrics != "" {
		mln, err := net.Listen("tcp", *metrics)
		if err != nil {
			ln.Close()
			srv.Shutdown(context.Background())
			return fail(fmt.Errorf("--metrics-addr: %w", err))
		}
		// The server owns it: Shutdown stops it.
		go func() {
			if err := srv.ServeMetrics(mln); !errors.Is(err, resp.ErrServerClosed) {
				log.Error("metrics server stopped", "err", err)
			}
		}()
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		select {
		case <-ctx.Done():
			log.Info("signal received; shutting down")
			sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
			defer cancel()
			srv.Shutdown(sctx)
		case <-srv.Done():
		}
	}()
	if err := srv.Serve(ln); !errors.Is(err, resp.ErrServerClosed) {
		return fail(err)
	}
	return 0
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
