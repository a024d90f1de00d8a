// Package resptest starts real tenure servers inside a test process, on
// 127.0.0.1:0 with a real Pebble directory, as net/http/httptest does for
// HTTP handlers. Tests talk to them with go-redis or raw TCP. It is for
// tests, not for embedding a server in a program: that is resp.Open.
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

	"github.com/tenure-db/tenure/resp"
)

// Server is a tenure server running in this process.
type Server struct {
	*resp.Server
	Addr string      // host:port it listens on
	Cfg  resp.Config // what it was opened with; Restart reuses it
	t    testing.TB
	done chan error
}

// Start opens a server on a fresh temp dir (unless cfg.Dir or cfg.FS says
// otherwise) and serves on 127.0.0.1:0. It is shut down by t.Cleanup.
func Start(t testing.TB, cfg resp.Config) *Server {
	t.Helper()
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Server{Cfg: cfg, t: t}
	s.start("127.0.0.1:0")
	t.Cleanup(func() { s.Stop() })
	return s
}

func (s *Server) start(addr string) {
	s.t.Helper()
	srv, err := resp.Open(s.Cfg)
	if err != nil {
		s.t.Fatalf("open server: %v", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		srv.Shutdown(context.Background())
		s.t.Fatalf("listen: %v", err)
	}
	s.Server, s.Addr, s.done = srv, ln.Addr().String(), make(chan error, 1)
	go func() { s.done <- srv.Serve(ln) }()
}

// Stop shuts the server down cleanly and waits for Serve to return.
func (s *Server) Stop() {
	if s.Server == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		s.t.Errorf("shutdown: %v", err)
	}
	if err := <-s.done; !errors.Is(err, resp.ErrServerClosed) {
		s.t.Errorf("serve: %v", err)
	}
	s.Server = nil
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
