package resp

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenure-db/tenure/kv"
	"github.com/tenure-db/tenure/lockmod"
)

// Version is tenure's version; RedisVersion is the Redis whose commands and
// replies it follows, reported where clients look for redis_version.
const (
	Version      = "0.1.0"
	RedisVersion = "7.2.0"
)

// ErrServerClosed is returned by Serve after Shutdown.
var ErrServerClosed = errors.New("resp: server closed")

// Config is what a Server is made with. Zero fields take SPEC §9's defaults.
type Config struct {
	// Dir and Fsync are what the caller opened the keyspace with, shown by
	// INFO and CONFIG GET; the server does not open it.
	Dir        string
	Fsync      kv.FsyncMode
	MaxClients int    // --max-clients; 10000 when 0
	Limits     Limits // --proto-max-bulk-len and Redis's other caps
	Logger     *slog.Logger
	Users      *Users         // --users; nil: every connection is admin
	LogLevel   *slog.LevelVar // CONFIG SET loglevel changes it; may be nil
	TLS        *tls.Config    // serve RESP over TLS (--tls-cert, --tls-key); nil: plain TCP
	// AuditEvents is how many lock events the audit keeps (LOCK.EVENTS,
	// the dashboard): DefaultAuditEvents when 0, none when negative.
	AuditEvents int
}

// Backends are what a Server acts on, opened and wired by its caller
// (package tenure): the keyspace, the lock module, and the metrics the lock
// module reports its grants and ends of leases to (Metrics.Observer). The
// server closes the lock module when it shuts down (its waiters are
// answered then); the keyspace is the caller's to close after Shutdown.
type Backends struct {
	Store   *kv.Store
	Locks   *lockmod.Manager
	Metrics *Metrics
	// Cluster, in a cluster, is this node's (resp/routing.go); nil for a
	// single server.
	Cluster Cluster
}

// Server is tenure's RESP server: the listener, the connections, the
// command table, and the store and lock module they act on.
type Server struct {
	cfg   Config
	log   *slog.Logger
	table map[string]*command
	store *kv.Store
	locks *lockmod.Manager
	// cluster is nil for a single server (resp/routing.go).
	cluster Cluster
	users   *Users
	start   time.Time
	runID   string // INFO's run_id, new at each open
	// maxClients is --max-clients, changed by CONFIG SET maxclients.
	maxClients atomic.Int64
	// saving: a BGSAVE is under way; saveMu orders the saves it schedules.
	saving atomic.Bool
	saveMu sync.Mutex
	// saveParam is CONFIG's save, kept for CONFIG GET: nothing is
	// snapshotted on a schedule, every write being in the log (SAVE makes
	// a durable point on demand).
	saveParam atomic.Pointer[string]

	closing  atomic.Bool
	shutdown sync.Once
	done     chan struct{} // closed when Shutdown has closed everything
	nextID   atomic.Int64

	mu          sync.Mutex
	lns         map[net.Listener]struct{} // every listener Serve was given
	firstAddr   net.Addr                  // the first one's address
	metricsHTTP []*http.Server            // started by ServeMetrics
	conns       map[*conn]struct{}
	wg          sync.WaitGroup // connection goroutines

	stats   serverStats
	metrics *metrics
	scripts scripts      // resp/scripting.go
	blocks  blocking     // resp/blocking.go: clients blocked in BLPOP and the like
	lists   listSettings // resp/config_collections.go
	pubsub  pubsub       // resp/pubsub.go, resp/notify.go
	// monitors are the MONITOR connections (resp/monitor.go).
	monitors monitors
	audit    *auditRing // resp/audit.go; nil when off
}

type serverStats struct {
	connectionsTotal atomic.Int64
	commandsTotal    atomic.Int64
	rejectedConns    atomic.Int64
	blocked          atomic.Int64
	authFailures     atomic.Int64
	errorReplies     atomic.Int64
	errors           errorCounts  // by code: INFO's Errorstats (errorstats.go)
	netInput         atomic.Int64 // bytes read from clients
	netOutput        atomic.Int64 // bytes written to clients
	opsRate          opsRate
	heapPeak         atomic.Uint64 // the largest used_memory INFO has read
}

// New makes a server on the backends b, which the caller has opened with a
// new epoch made durable (LOCK-10). It does not listen: call Serve.
func New(cfg Config, b Backends) *Server {
	if cfg.MaxClients <= 0 {
		cfg.MaxClients = 10000
	}
	cfg.Limits = cfg.Limits.WithDefaults()
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if b.Metrics == nil {
		b.Metrics = NewMetrics(cfg.Logger)
	}
	s := &Server{
		cfg:     cfg,
		log:     cfg.Logger,
		table:   commandTable(),
		store:   b.Store,
		locks:   b.Locks,
		cluster: b.Cluster,
		users:   cfg.Users,
		start:   time.Now(),
		runID:   newRunID(),
		done:    make(chan struct{}),
		lns:     map[net.Listener]struct{}{},
		conns:   map[*conn]struct{}{},
		metrics: b.Metrics.m,
	}
	s.metrics.bind(s)
	if cfg.AuditEvents >= 0 && b.Locks != nil {
		s.audit = newAuditRing(cmp.Or(cfg.AuditEvents, DefaultAuditEvents))
		b.Locks.AddEventSink(s.audit)
	}
	s.maxClients.Store(int64(cfg.MaxClients))
	s.scripts.init()
	s.pubsub.init()
	return s
}

// Epoch is the epoch this open made durable.
func (s *Server) Epoch() uint64 { return s.locks.Stats().Epoch }

// Serve accepts connections on ln until Shutdown, then returns
// ErrServerClosed once every connection has finished. Any number of
// listeners may be served at once. It logs "ready to accept connections" when it starts.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closing.Load() {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	if s.cfg.TLS != nil {
		// The handshake runs on the connection's first read, in its own
		// goroutine: a slow or plain-text peer holds up nobody else.
		ln = tls.NewListener(ln, s.cfg.TLS)
	}
	s.lns[ln] = struct{}{}
	if s.firstAddr == nil {
		s.firstAddr = ln.Addr()
	}
	s.mu.Unlock()
	s.log.Info("ready to accept connections", "addr", ln.Addr().String(), "tls", s.cfg.TLS != nil, "epoch", s.Epoch())
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.closing.Load() {
				<-s.done
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			// Out of file descriptors and the like: back off, as net/http does.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			s.log.Warn("accept failed", "err", err, "retry_in", delay)
			time.Sleep(delay)
			continue
		}
		delay = 0
		s.accept(nc)
	}
}

func (s *Server) accept(nc net.Conn) {
	s.mu.Lock()
	if s.closing.Load() {
		s.mu.Unlock()
		nc.Close()
		return
	}
	if int64(len(s.conns)) >= s.maxClients.Load() {
		s.mu.Unlock()
		s.stats.rejectedConns.Add(1)
		s.metrics.refused.Inc()
		// One short write to a fresh socket does not block.
		nc.SetWriteDeadline(time.Now().Add(time.Second))
		nc.Write([]byte("-ERR max number of clients reached\r\n"))
		nc.Close()
		return
	}
	c := newConn(s, nc)
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	s.stats.connectionsTotal.Add(1)
	s.metrics.accepted.Inc()
	go func() {
		defer s.wg.Done()
		c.serve()
	}()
}

// Addr is the address of the first listener Serve was given (INFO's
// tcp_port, CONFIG GET port), nil before Serve.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.firstAddr
}

func (s *Server) forget(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// Shutdown stops accepting, lets running commands finish (blocked LOCK.HOLDs
// are answered with an error: the lock module is closed), and closes every
// connection. The keyspace stays open for the caller to close.
// When ctx ends first, connections still running are cut. It is safe to
// call more than once; every call waits for the end.
func (s *Server) Shutdown(ctx context.Context) error {
	var err error
	s.shutdown.Do(func() {
		err = s.close(ctx)
		close(s.done)
	})
	select {
	case <-s.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	return err
}

// cutGrace is how long Shutdown waits for connections it cut to finish.
const cutGrace = 5 * time.Second

func (s *Server) close(ctx context.Context) error {
	s.mu.Lock()
	s.closing.Store(true)
	s.scripts.abort() // a script running commits nothing (resp/scripting.go)
	for ln := range s.lns {
		ln.Close()
	}
	metricsHTTP := s.metricsHTTP
	s.mu.Unlock()
	for _, hs := range metricsHTTP {
		hs.Shutdown(ctx) // a scrape in progress finishes; none starts
	}
	// Waiters in line are answered now; leases end with the process.
	s.locks.Close()
	s.blocks.unblockAll("closing")
	s.wakeConns()
	finished := make(chan struct{})
	go func() { s.wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-ctx.Done():
		s.log.Warn("shutdown: cutting connections still running", "err", ctx.Err())
		s.mu.Lock()
		for c := range s.conns {
			c.nc.Close()
		}
		s.mu.Unlock()
		select {
		case <-finished:
		case <-time.After(cutGrace):
			// A command that no cut reaches: a write caught inside a
			// Pebble that a failed disk wedged (see kv.ErrDiskFailed). It
			// must not hold the process up for ever.
			s.log.Error("shutdown: connections still running after they were cut; closing the store anyway", "waited", cutGrace)
		}
	}
	return nil
}

// wakeConns makes idle connections' reads return, so they see the
// server is closing; a connection running a command finishes it first.
func (s *Server) wakeConns() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.nc.SetReadDeadline(time.Unix(1, 0))
	}
}

// requestShutdown is what the SHUTDOWN command does: the server closes in
// the background, after the asking connection has gone.
func (s *Server) requestShutdown() {
	go s.Shutdown(context.Background())
}

// Done is closed once the server has shut down, whoever asked.
func (s *Server) Done() <-chan struct{} { return s.done }
