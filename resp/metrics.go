package resp

import (
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tenure-db/tenure/lockmod"
)

// Prometheus metrics, served by ServeMetrics (--metrics-addr). Each Server
// has its own registry, so servers in one process (tests) do not mix.
//
// What is counted as it happens: commands by row and result, and their
// latency (exec, through counters resolved once per row at Open: no map
// lookup and no string built per command); grants' wait times and leases'
// hold times (the lock module's Observer); LOST replies by reason;
// connections accepted and refused. What is read at scrape time: the lock
// module's Stats, the keyspace's, and the connections by role.

// Bucket bounds, in seconds.
var (
	commandBuckets = prometheus.ExponentialBuckets(10e-6, 4, 10) // 10µs … 2.6s
	waitBuckets    = prometheus.ExponentialBuckets(1e-3, 4, 10)  // 1ms … 262s
	holdBuckets    = prometheus.ExponentialBuckets(10e-3, 4, 10) // 10ms … 44min
)

type metrics struct {
	reg      *prometheus.Registry
	own      []prometheus.Collector // every collector but Go's and the process's
	log      *slog.Logger
	commands *prometheus.CounterVec
	duration *prometheus.HistogramVec
	unknown  *commandMetrics // requests naming no command
	holdTime prometheus.Histogram
	waitTime prometheus.Histogram
	lostBy   map[string]prometheus.Counter // by SPEC §4 reason; read-only after newMetrics
	accepted prometheus.Counter
	refused  prometheus.Counter
}

// commandMetrics are one command row's series.
type commandMetrics struct {
	name     string
	vec      *prometheus.CounterVec
	ok       prometheus.Counter
	duration prometheus.Observer
	mu       sync.Mutex                    // guards adding to errs
	errs     atomic.Pointer[[]codeCounter] // by error code word; copied on write
	// rejected counts the requests refused before the handler ran (arity,
	// role), for INFO's rejected_calls; they are in the series above too.
	rejected atomic.Int64
	// base is what INFO's Commandstats showed at the last CONFIG
	// RESETSTAT, and is subtracted from them: the series never go back.
	base atomic.Pointer[commandStat]
}

type codeCounter struct {
	code string // as sent: "ERR", "LOST", …
	c    prometheus.Counter
}

func newMetrics(log *slog.Logger) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		log: log,
		commands: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tenure_commands_total",
			Help: "Commands run, by command (the command table's name, e.g. lock.hold or config|get) and result: ok, or the error's code word in lower case (err, lost, fenced, noperm, …).",
		}, []string{"command", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tenure_command_duration_seconds",
			Help:    "Time to run a command, from dispatch to its reply (a LOCK.HOLD's wait in line included).",
			Buckets: commandBuckets,
		}, []string{"command"}),
		holdTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tenure_lock_hold_seconds",
			Help:    "How long leases were held, from grant to release, expiry or revocation.",
			Buckets: holdBuckets,
		}),
		waitTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tenure_lock_wait_seconds",
			Help:    "How long granted requests waited in line (0 for a key granted at once).",
			Buckets: waitBuckets,
		}),
		accepted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tenure_connections_received_total",
			Help: "Connections accepted.",
		}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tenure_connections_rejected_total",
			Help: "Connections refused over --max-clients.",
		}),
		lostBy: map[string]prometheus.Counter{},
	}
	lost := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tenure_lock_lost_total",
		Help: "LOST replies: a holder told that its lease is lost, by reason (SPEC §4).",
	}, []string{"reason"})
	for _, r := range []string{lockmod.ReasonExpired, lockmod.ReasonMaxHold, lockmod.ReasonAdmin, lockmod.ReasonReleased, lockmod.ReasonUnknownLease} {
		m.lostBy[r] = lost.WithLabelValues(r)
	}
	m.unknown = m.row("unknown")
	m.own = []prometheus.Collector{m.commands, m.duration, m.holdTime, m.waitTime, m.accepted, m.refused, lost}
	m.reg.MustRegister(m.own...)
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// row makes the series of one command row.
func (m *metrics) row(name string) *commandMetrics {
	return &commandMetrics{
		name:     name,
		vec:      m.commands,
		ok:       m.commands.WithLabelValues(name, "ok"),
		duration: m.duration.WithLabelValues(name),
	}
}

// bind gives every row of s's table its series and registers what is read
// from s at scrape time.
func (m *metrics) bind(s *Server) {
	for _, c := range s.table {
		c.metrics = m.row(c.Name)
		for _, sc := range c.Subcommands {
			sc.metrics = m.row(sc.Name)
		}
	}
	sc := &serverCollector{s: s}
	m.own = append(m.own, sc)
	m.reg.MustRegister(sc)
}

// done counts one command: cmd is the row that answered (nil: no such
// command), reply what it answered.
func (m *metrics) done(cmd *command, start time.Time, reply []byte) {
	m.doneAt(cmd, start, time.Now(), reply)
}

// doneAt is done for a command that ended at end.
func (m *metrics) doneAt(cmd *command, start, end time.Time, reply []byte) {
	cm := m.unknown
	if cmd != nil && cmd.metrics != nil {
		cm = cmd.metrics
	}
	cm.duration.Observe(end.Sub(start).Seconds())
	if len(reply) == 0 || reply[0] != '-' {
		cm.ok.Inc()
		return
	}
	code := reply[1:]
	for i, ch := range code {
		if ch == ' ' || ch == '\r' {
			code = code[:i]
			break
		}
	}
	cm.failed(code)
}

// failed counts an error reply by its code word. The first of each code
// takes the row's lock; later ones only scan a short slice.
func (cm *commandMetrics) failed(code []byte) {
	if p := cm.errs.Load(); p != nil {
		for _, e := range *p {
			if e.code == string(code) {
				e.c.Inc()
				return
			}
		}
	}
	cm.mu.Lock()
	defer cm.mu.Unlock()
	var errs []codeCounter
	if p := cm.errs.Load(); p != nil {
		errs = *p
	}
	for _, e := range errs {
		if e.code == string(code) {
			e.c.Inc()
			return
		}
	}
	label := strings.ToLower(string(code))
	if len(code) == 0 || len(code) > 16 || strings.ToUpper(label) != string(code) {
		label = "err" // not a code word; every reply here starts with one
	}
	c := cm.vec.WithLabelValues(cm.name, label)
	errs = append(errs[:len(errs):len(errs)], codeCounter{code: string(code), c: c})
	cm.errs.Store(&errs)
	c.Inc()
}

// lost counts a LOST reply.
func (m *metrics) lost(reason string) {
	if c := m.lostBy[reason]; c != nil {
		c.Inc()
	}
}

// leaseObserver is the lock module's Observer: it times holds and waits,
// and logs every revocation, by an admin or at MAXHOLD, in one line.
// lockmod calls it under its lock; it only observes and logs.
type leaseObserver struct {
	m   *metrics
	log *slog.Logger
}

func (o leaseObserver) LeaseGranted(e lockmod.GrantEvent) {
	o.m.waitTime.Observe(e.Waited.Seconds())
}

func (o leaseObserver) LeaseEnded(e lockmod.EndEvent) {
	o.m.holdTime.Observe(e.Held.Seconds())
	if e.Reason == lockmod.ReasonAdmin || e.Reason == lockmod.ReasonMaxHold {
		// Never the lease id: it is the holder's secret (LOCK-04).
		o.log.Info("lease revoked", "lock", e.Lock, "key", e.Key, "fence", e.Fence,
			"reason", e.Reason, "held_ms", e.Held.Milliseconds())
	}
}

// Metrics are a server's Prometheus series. They are made before the
// server so that the lock module can be given their Observer when it is
// made; New binds them to the server's command table.
type Metrics struct{ m *metrics }

// NewMetrics makes the series; log gets one line per revoked lease.
func NewMetrics(log *slog.Logger) *Metrics { return &Metrics{m: newMetrics(log)} }

// Observer is what the lock module reports grants and ends of leases to:
// it times holds and waits, and logs revocations.
func (m *Metrics) Observer() lockmod.Observer { return leaseObserver{m: m.m, log: m.m.log} }

// Register adds the series to r as well (Go's and the process's own
// collectors excepted: a program registers those itself), so that a
// program embedding the store serves them with its own.
func (m *Metrics) Register(r prometheus.Registerer) error {
	for _, c := range m.m.own {
		if err := r.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// serverCollector reads gauges and counters that already exist elsewhere
// (lockmod.Stats, kv.Stats, the connection set) at scrape time, so that
// they cost nothing between scrapes.
type serverCollector struct{ s *Server }

var (
	descConnections = prometheus.NewDesc("tenure_connections", "Open connections, by role (none: not yet authenticated).", []string{"role"}, nil)
	descBlocked     = prometheus.NewDesc("tenure_blocked_clients", "Connections blocked in LOCK.HOLD, waiting in line.", nil, nil)
	descLeases      = prometheus.NewDesc("tenure_lock_leases", "Live leases.", nil, nil)
	descWaiters     = prometheus.NewDesc("tenure_lock_waiters", "Places in line, lingering ones included.", nil, nil)
	descEpoch       = prometheus.NewDesc("tenure_epoch", "The epoch this open of the store made durable (SPEC §2): fence >> 32.", nil, nil)
	descGrants      = prometheus.NewDesc("tenure_lock_grants_total", "Leases granted.", nil, nil)
	descRenewals    = prometheus.NewDesc("tenure_lock_renewals_total", "Successful renewals.", nil, nil)
	descReleases    = prometheus.NewDesc("tenure_lock_releases_total", "Leases ended by LOCK.RELEASE.", nil, nil)
	descExpiries    = prometheus.NewDesc("tenure_lock_expiries_total", "Leases that reached their deadline without a renewal.", nil, nil)
	descRevocations = prometheus.NewDesc("tenure_lock_revocations_total", "Leases revoked, by cause: maxhold (MAXHOLD reached) or admin (LOCK.REVOKE).", []string{"cause"}, nil)
	descKeys        = prometheus.NewDesc("tenure_keys", "Keys in the keyspace (expired ones not yet swept included, as DBSIZE).", nil, nil)
	descDiskBytes   = prometheus.NewDesc("tenure_disk_bytes", "Bytes of the store's files on disk.", nil, nil)
	descPubSubCut   = prometheus.NewDesc("tenure_pubsub_output_limit_disconnects_total", "Subscribers disconnected for passing client-output-buffer-limit pubsub.", nil, nil)
	descPubSubChans = prometheus.NewDesc("tenure_pubsub_channels", "Channels, patterns and shard channels with a subscriber, by kind.", []string{"kind"}, nil)
)

func (sc *serverCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descConnections, descBlocked, descLeases, descWaiters, descEpoch,
		descGrants, descRenewals, descReleases, descExpiries, descRevocations, descKeys, descDiskBytes,
		descPubSubCut, descPubSubChans} {
		ch <- d
	}
}

func (sc *serverCollector) Collect(ch chan<- prometheus.Metric) {
	s := sc.s
	var byRole [RoleAdmin + 1]int
	s.mu.Lock()
	for c := range s.conns {
		c.mu.Lock()
		byRole[c.role]++
		c.mu.Unlock()
	}
	s.mu.Unlock()
	for r, n := range byRole {
		ch <- prometheus.MustNewConstMetric(descConnections, prometheus.GaugeValue, float64(n), Role(r).String())
	}
	ch <- prometheus.MustNewConstMetric(descBlocked, prometheus.GaugeValue, float64(s.stats.blocked.Load()))

	st := s.locks.Stats()
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge(descLeases, float64(st.Leases))
	gauge(descWaiters, float64(st.Waiters))
	gauge(descEpoch, float64(st.Epoch))
	counter(descGrants, st.GrantsTotal)
	counter(descRenewals, st.RenewalsTotal)
	counter(descReleases, st.ReleasedTotal)
	counter(descExpiries, st.ExpiredTotal)
	counter(descRevocations, st.RevokedMaxHoldTotal, "maxhold")
	counter(descRevocations, st.RevokedAdminTotal, "admin")

	ks := s.store.Stats()
	gauge(descKeys, float64(ks.Keys))
	gauge(descDiskBytes, float64(ks.DiskUsage))

	counter(descPubSubCut, uint64(s.pubsub.cut.Load()))
	channels, patterns, shard := s.pubsub.stats()
	for kind, n := range map[string]int{"channel": channels, "pattern": patterns, "shard": shard} {
		ch <- prometheus.MustNewConstMetric(descPubSubChans, prometheus.GaugeValue, float64(n), kind)
	}
}

// ServeMetrics serves this server's Prometheus metrics over HTTP at
// /metrics on ln, until Shutdown; then it returns ErrServerClosed.
func (s *Server) ServeMetrics(ln net.Listener) error {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{
		ErrorLog:            slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		MaxRequestsInFlight: 4,
		Timeout:             10 * time.Second,
	}))
	hs := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second, // a stalled scraper holds up nobody
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	s.mu.Lock()
	if s.closing.Load() {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	s.metricsHTTP = append(s.metricsHTTP, hs)
	s.mu.Unlock()
	s.log.Info("serving metrics", "addr", ln.Addr().String(), "path", "/metrics")
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return ErrServerClosed
}

// opsRate is INFO's instantaneous_ops_per_sec without a ticker: each
// reading keeps a sample (at most one per 100ms, the last 16), and the
// rate is taken over the samples of the last two seconds, or since the
// latest sample when INFO is read less often than that.
type opsRate struct {
	mu      sync.Mutex
	samples [16]opsSample
	next    int
}

type opsSample struct {
	at  time.Time
	ops int64
}

func (o *opsRate) read(now time.Time, ops int64) int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	latest := o.samples[(o.next+len(o.samples)-1)%len(o.samples)]
	base := latest
	for _, sm := range o.samples {
		if !sm.at.IsZero() && now.Sub(sm.at) <= 2*time.Second && sm.at.Before(base.at) {
			base = sm
		}
	}
	if latest.at.IsZero() || now.Sub(latest.at) >= 100*time.Millisecond {
		o.samples[o.next] = opsSample{at: now, ops: ops}
		o.next = (o.next + 1) % len(o.samples)
	}
	dt := now.Sub(base.at)
	if base.at.IsZero() || dt <= 0 {
		return 0
	}
	return int64(float64(ops-base.ops) / dt.Seconds())
}
