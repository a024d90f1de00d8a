// Package resptest starts real tenure servers inside a test process, on
// 127.0.0.1:0 with a real Pebble directory, as net/http/httptest does for
// HTTP handlers. Tests talk to them with go-redis or raw TCP. It is for
// tests, not for embedding a server in a program: that is package tenure.
package resptest

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure"
)

// Server is a tenure store open in this process and served on a socket.
type Server struct {
	*tenure.DB
	Addr string         // host:port it listens on
	Dir  string         // its data directory
	Opts tenure.Options // what it was opened with; Restart reuses them
	t    testing.TB
	done chan error
}

// Start opens a store on a fresh temp dir and serves it on 127.0.0.1:0.
// It is shut down by t.Cleanup.
func Start(t testing.TB, o tenure.Options) *Server {
	t.Helper()
	return StartIn(t, t.TempDir(), o)
}

// StartIn is Start on dir (a path in o.FS, when that is set).
func StartIn(t testing.TB, dir string, o tenure.Options) *Server {
	t.Helper()
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Server{Dir: dir, Opts: o, t: t}
	s.start("127.0.0.1:0")
	t.Cleanup(func() { s.Stop() })
	return s
}

func (s *Server) start(addr string) {
	s.t.Helper()
	db, err := tenure.Open(s.Dir, s.Opts)
	if err != nil {
		s.t.Fatalf("open store: %v", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		db.Close()
		s.t.Fatalf("listen: %v", err)
	}
	s.DB, s.Addr, s.done = db, ln.Addr().String(), make(chan error, 1)
	go func() { s.done <- db.Serve(ln) }()
}

// Stop shuts the server down cleanly and waits for Serve to return.
func (s *Server) Stop() {
	if s.DB == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		s.t.Errorf("shutdown: %v", err)
	}
	if err := <-s.done; !errors.Is(err, tenure.ErrClosed) {
		s.t.Errorf("serve: %v", err)
	}
	s.DB = nil
}

// Restart stops the server and opens it again on the same directory and
// address, as a restarted process would.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.start(s.Addr)
}

// Client returns a go-redis client with its default options, closed by
// t.Cleanup.
func (s *Server) Client() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	s.t.Cleanup(func() { c.Close() })
	return c
}

// Dial opens a raw TCP connection, closed by t.Cleanup.
func (s *Server) Dial() net.Conn {
	s.t.Helper()
	nc, err := net.Dial("tcp", s.Addr)
	if err != nil {
		s.t.Fatalf("dial: %v", err)
	}
	s.t.Cleanup(func() { nc.Close() })
	return nc
}
