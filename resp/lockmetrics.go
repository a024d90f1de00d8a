package resp

import (
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tenure-db/tenure/lockmod"
)

// The lock metrics, by lock (SPEC §14): live leases, places in line,
// grants, renewals, releases, expiries, revocations by cause, LOST replies
// by reason, hold and wait times. They are the one home of these facts for
// /metrics and the dashboard; INFO's # Locks section reads lockmod.Stats,
// the store's totals.
//
// The first LockSeriesCap lock names seen since the store opened have
// series of their own; every later name shares OtherLock's, so that no
// client can grow the series without bound. A LOST reply for a lease the
// store does not know (unknown lease) names no lock: it counts under
// UnknownLock.

// LockSeriesCap is how many lock names have series of their own.
const LockSeriesCap = 1000

// OtherLock and UnknownLock are the label values of the names past
// LockSeriesCap and of LOST replies that name no lock.
const (
	OtherLock   = "_other"
	UnknownLock = "_unknown"
)

// lostReasons are SPEC §4's reasons, in the order lockSeries.lost keeps them.
var lostReasons = [...]string{lockmod.ReasonExpired, lockmod.ReasonMaxHold, lockmod.ReasonAdmin, lockmod.ReasonReleased, lockmod.ReasonUnknownLease}

// lockSeries are one lock label's gauges, counters and histograms. Every
// field is atomic: lockmod's Observer writes them under the Manager's
// lock, LOST replies from any connection, and scrapes read them.
type lockSeries struct {
	lock            string
	leases, waiters atomic.Int64
	grants          atomic.Uint64
	renewals        atomic.Uint64
	releases        atomic.Uint64
	expiries        atomic.Uint64
	revokedMaxHold  atomic.Uint64
	revokedAdmin    atomic.Uint64
	lost            [len(lostReasons)]atomic.Uint64
	hold, wait      histogram
}

// histogram counts observations into fixed buckets, cumulated only when
// read: one atomic add per observation, and the dashboard reads the same
// counts Prometheus does.
type histogram struct {
	bounds []float64 // upper bounds, in seconds
	counts []atomic.Uint64
	sumNs  atomic.Int64
}

func newHistogram(bounds []float64) histogram {
	return histogram{bounds: bounds, counts: make([]atomic.Uint64, len(bounds)+1)}
}

func (h *histogram) observe(d time.Duration) {
	s := d.Seconds()
	i, _ := slices.BinarySearch(h.bounds, s) // the first bound >= s: "le"
	h.counts[i].Add(1)
	h.sumNs.Add(int64(d))
}

// HistogramSnapshot is a histogram as read at one moment: Counts[i] is how
// many observations fell at or under Bounds[i] and over the bound before
// (not cumulated); the last count is over every bound.
type HistogramSnapshot struct {
	Bounds []float64 // seconds
	Counts []uint64
	Sum    time.Duration
}

func (h *histogram) snapshot() HistogramSnapshot {
	s := HistogramSnapshot{Bounds: h.bounds, Counts: make([]uint64, len(h.counts)), Sum: time.Duration(h.sumNs.Load())}
	for i := range h.counts {
		s.Counts[i] = h.counts[i].Load()
	}
	return s
}

// Count is the number of observations.
func (s HistogramSnapshot) Count() uint64 {
	var n uint64
	for _, c := range s.Counts {
		n += c
	}
	return n
}

// Sub is what was observed between before and s.
func (s HistogramSnapshot) Sub(before HistogramSnapshot) HistogramSnapshot {
	d := HistogramSnapshot{Bounds: s.Bounds, Counts: slices.Clone(s.Counts), Sum: s.Sum - before.Sum}
	for i := range before.Counts {
		if i < len(d.Counts) {
			d.Counts[i] -= before.Counts[i]
		}
	}
	return d
}

// Quantile estimates the q-quantile (0 < q < 1) as Prometheus's
// histogram_quantile does: linearly within the bucket it falls in. NaN
// when nothing was observed; the largest bound when it falls over them.
func (s HistogramSnapshot) Quantile(q float64) float64 {
	n := s.Count()
	if n == 0 {
		return math.NaN()
	}
	rank := q * float64(n)
	var seen float64
	for i, c := range s.Counts {
		if seen+float64(c) >= rank && c > 0 {
			if i == len(s.Bounds) {
				return s.Bounds[len(s.Bounds)-1]
			}
			lo := 0.0
			if i > 0 {
				lo = s.Bounds[i-1]
			}
			return lo + (s.Bounds[i]-lo)*(rank-seen)/float64(c)
		}
		seen += float64(c)
	}
	return s.Bounds[len(s.Bounds)-1]
}

// lockTable finds a lock's series, making them for the first LockSeriesCap
// names.
type lockTable struct {
	byName  sync.Map // lock name -> *lockSeries
	mu      sync.Mutex
	list    []*lockSeries // in the order made; other and unknown first; guarded by mu
	named   int           // names with series of their own; guarded by mu
	cap     int
	other   *lockSeries
	unknown *lockSeries
}

func newLockTable(capacity int) *lockTable {
	t := &lockTable{cap: capacity}
	t.other = t.make(OtherLock)
	t.unknown = t.make(UnknownLock)
	return t
}

func (t *lockTable) make(label string) *lockSeries {
	s := &lockSeries{lock: label, hold: newHistogram(holdBuckets), wait: newHistogram(waitBuckets)}
	t.list = append(t.list, s)
	return s
}

// of is lock's series: its own, or OtherLock's past the cap.
func (t *lockTable) of(lock string) *lockSeries {
	if s, ok := t.byName.Load(lock); ok {
		return s.(*lockSeries)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.byName.Load(lock); ok {
		return s.(*lockSeries)
	}
	if t.named >= t.cap {
		return t.other
	}
	t.named++
	lock = strings.Clone(lock) // lockmod's and the connection's strings may be views
	s := t.make(lock)
	t.byName.Store(lock, s)
	return s
}

// all is every lock label's series, OtherLock and UnknownLock first.
func (t *lockTable) all() []*lockSeries {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.list)
}

func (t *lockTable) lost(lock, reason string) {
	s := t.unknown
	if lock != "" {
		s = t.of(lock)
	}
	for i, r := range lostReasons {
		if r == reason {
			s.lost[i].Add(1)
			return
		}
	}
}

// lockObserver is the lock module's CountObserver: it keeps the series by
// lock, and logs every revocation, by an admin or at MAXHOLD, in one line.
// lockmod calls it under its lock; it only counts and logs.
type lockObserver struct {
	m *metrics
}

func (o lockObserver) LeaseGranted(e lockmod.GrantEvent) {
	s := o.m.locks.of(e.Lock)
	s.leases.Add(1)
	s.grants.Add(1)
	s.wait.observe(e.Waited)
}

func (o lockObserver) LeaseEnded(e lockmod.EndEvent) {
	s := o.m.locks.of(e.Lock)
	s.leases.Add(-1)
	s.hold.observe(e.Held)
	switch e.Reason {
	case lockmod.ReasonExpired:
		s.expiries.Add(1)
	case lockmod.ReasonReleased:
		s.releases.Add(1)
	case lockmod.ReasonMaxHold:
		s.revokedMaxHold.Add(1)
	default:
		s.revokedAdmin.Add(1)
	}
	if e.Reason == lockmod.ReasonAdmin || e.Reason == lockmod.ReasonMaxHold {
		// Never the lease id: it is the holder's secret (LOCK-04).
		o.m.log.Info("lease revoked", "lock", e.Lock, "key", e.Key, "fence", e.Fence,
			"reason", e.Reason, "held_ms", e.Held.Milliseconds())
	}
}

func (o lockObserver) LeaseRenewed(lock string) { o.m.locks.of(lock).renewals.Add(1) }

func (o lockObserver) LineChanged(lock string, delta int) {
	o.m.locks.of(lock).waiters.Add(int64(delta))
}

func (o lockObserver) AllDropped() {
	for _, s := range o.m.locks.all() {
		s.leases.Store(0)
		s.waiters.Store(0)
	}
}

var (
	descLeases      = prometheus.NewDesc("tenure_lock_leases", "Live leases, by lock.", []string{"lock"}, nil)
	descWaiters     = prometheus.NewDesc("tenure_lock_waiters", "Places in line, lingering ones included, by lock.", []string{"lock"}, nil)
	descGrants      = prometheus.NewDesc("tenure_lock_grants_total", "Leases granted, by lock.", []string{"lock"}, nil)
	descRenewals    = prometheus.NewDesc("tenure_lock_renewals_total", "Successful renewals, by lock.", []string{"lock"}, nil)
	descReleases    = prometheus.NewDesc("tenure_lock_releases_total", "Leases ended by LOCK.RELEASE, by lock.", []string{"lock"}, nil)
	descExpiries    = prometheus.NewDesc("tenure_lock_expiries_total", "Leases that reached their deadline without a renewal, by lock.", []string{"lock"}, nil)
	descRevocations = prometheus.NewDesc("tenure_lock_revocations_total", "Leases revoked, by lock and cause: maxhold (MAXHOLD reached) or admin (LOCK.REVOKE).", []string{"lock", "cause"}, nil)
	descLost        = prometheus.NewDesc("tenure_lock_lost_total", "LOST replies: a holder told that its lease is lost, by lock (_unknown for an unknown lease) and reason (SPEC §4).", []string{"lock", "reason"}, nil)
	descHold        = prometheus.NewDesc("tenure_lock_hold_seconds", "How long leases were held, from grant to release, expiry or revocation, by lock.", []string{"lock"}, nil)
	descWait        = prometheus.NewDesc("tenure_lock_wait_seconds", "How long granted requests waited in line (0 for a key granted at once), by lock.", []string{"lock"}, nil)
)

// lockCollector serves the series by lock to Prometheus.
type lockCollector struct{ t *lockTable }

func (lc lockCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descLeases, descWaiters, descGrants, descRenewals, descReleases,
		descExpiries, descRevocations, descLost, descHold, descWait} {
		ch <- d
	}
}

func (lc lockCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range lc.t.all() {
		l := s.lock
		if s != lc.t.unknown {
			gauge := func(d *prometheus.Desc, v int64) {
				ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), l)
			}
			counter := func(d *prometheus.Desc, v uint64, labels ...string) {
				ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), append([]string{l}, labels...)...)
			}
			gauge(descLeases, s.leases.Load())
			gauge(descWaiters, s.waiters.Load())
			counter(descGrants, s.grants.Load())
			counter(descRenewals, s.renewals.Load())
			counter(descReleases, s.releases.Load())
			counter(descExpiries, s.expiries.Load())
			counter(descRevocations, s.revokedMaxHold.Load(), "maxhold")
			counter(descRevocations, s.revokedAdmin.Load(), "admin")
			ch <- constHistogram(descHold, s.hold.snapshot(), l)
			ch <- constHistogram(descWait, s.wait.snapshot(), l)
		}
		for i, r := range lostReasons {
			if n := s.lost[i].Load(); n > 0 || s != lc.t.unknown {
				ch <- prometheus.MustNewConstMetric(descLost, prometheus.CounterValue, float64(n), l, r)
			}
		}
	}
}

func constHistogram(d *prometheus.Desc, s HistogramSnapshot, label string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(s.Bounds))
	var cum uint64
	for i, b := range s.Bounds {
		cum += s.Counts[i]
		buckets[b] = cum
	}
	return prometheus.MustNewConstHistogram(d, cum+s.Counts[len(s.Bounds)], s.Sum.Seconds(), buckets, label)
}

// LockStats are one lock label's figures, as the dashboard shows them.
type LockStats struct {
	Lock                                 string
	Leases, Waiters                      int64
	Grants, Renewals, Releases, Expiries uint64
	RevokedMaxHold, RevokedAdmin         uint64
	Lost                                 map[string]uint64 // by SPEC §4 reason; only those above 0
	Hold, Wait                           HistogramSnapshot
}

func (s *lockSeries) stats() LockStats {
	st := LockStats{
		Lock: s.lock, Leases: s.leases.Load(), Waiters: s.waiters.Load(),
		Grants: s.grants.Load(), Renewals: s.renewals.Load(), Releases: s.releases.Load(), Expiries: s.expiries.Load(),
		RevokedMaxHold: s.revokedMaxHold.Load(), RevokedAdmin: s.revokedAdmin.Load(),
		Hold: s.hold.snapshot(), Wait: s.wait.snapshot(),
	}
	for i, r := range lostReasons {
		if n := s.lost[i].Load(); n > 0 {
			if st.Lost == nil {
				st.Lost = map[string]uint64{}
			}
			st.Lost[r] = n
		}
	}
	return st
}

// LockStats reads every lock label's figures: OtherLock's and
// UnknownLock's first, then the names in the order first seen.
func (s *Server) LockStats() []LockStats {
	all := s.metrics.locks.all()
	out := make([]LockStats, len(all))
	for i, ls := range all {
		out[i] = ls.stats()
	}
	return out
}
