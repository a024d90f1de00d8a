package dashboard

import (
	"math"
	"sync"
	"time"

	"github.com/tenure-db/tenure/resp"
)

// The charts' history: every sampleEvery the lock metrics are read, and
// what changed since the last reading is kept, for the locks that changed,
// for the last historyLen readings (five minutes).

const (
	sampleEvery = 3 * time.Second
	historyLen  = 100
	// windowLen readings make the lock table's rates and percentiles: the
	// last minute.
	windowLen = 20
)

// delta is what one lock label did between two readings.
type delta struct {
	grants, renewals, releases, expiries, revoked, lost uint64
	hold, wait                                          []uint64 // bucket counts, not cumulated
}

func (d *delta) add(o *delta) {
	d.grants += o.grants
	d.renewals += o.renewals
	d.releases += o.releases
	d.expiries += o.expiries
	d.revoked += o.revoked
	d.lost += o.lost
	d.hold = addCounts(d.hold, o.hold)
	d.wait = addCounts(d.wait, o.wait)
}

func addCounts(a, b []uint64) []uint64 {
	if a == nil {
		a = make([]uint64, len(b))
	}
	for i := range b {
		a[i] += b[i]
	}
	return a
}

func (d *delta) zero() bool {
	return d.grants+d.renewals+d.releases+d.expiries+d.revoked+d.lost == 0
}

type sample struct {
	at    time.Time
	span  time.Duration // since the reading before
	locks map[string]*delta
	all   delta
}

// history is the ring of samples. Its sampler goroutine is owned by the
// Dashboard, which stops it at Close.
type history struct {
	src Source

	mu      sync.Mutex
	samples []sample // oldest first, at most historyLen
	last    map[string]resp.LockStats
	lastAt  time.Time
	bounds  struct{ hold, wait []float64 }
}

func newHistory(src Source) *history {
	h := &history{src: src}
	h.read(time.Now()) // the baseline
	return h
}

func lostOf(s resp.LockStats) uint64 {
	var n uint64
	for _, v := range s.Lost {
		n += v
	}
	return n
}

func sub(a, b []uint64) []uint64 {
	out := make([]uint64, len(a))
	for i := range a {
		out[i] = a[i]
		if i < len(b) {
			out[i] -= b[i]
		}
	}
	return out
}

// read takes a reading at now, and keeps what changed since the last.
func (h *history) read(now time.Time) {
	stats := h.src.LockStats()
	h.mu.Lock()
	defer h.mu.Unlock()
	cur := make(map[string]resp.LockStats, len(stats))
	s := sample{at: now, span: now.Sub(h.lastAt), locks: map[string]*delta{}}
	for _, st := range stats {
		cur[st.Lock] = st
		h.bounds.hold, h.bounds.wait = st.Hold.Bounds, st.Wait.Bounds
		if h.last == nil {
			continue
		}
		was := h.last[st.Lock]
		d := &delta{
			grants: st.Grants - was.Grants, renewals: st.Renewals - was.Renewals, releases: st.Releases - was.Releases,
			expiries: st.Expiries - was.Expiries,
			revoked:  st.RevokedAdmin + st.RevokedMaxHold - was.RevokedAdmin - was.RevokedMaxHold,
			lost:     lostOf(st) - lostOf(was),
			hold:     sub(st.Hold.Counts, was.Hold.Counts), wait: sub(st.Wait.Counts, was.Wait.Counts),
		}
		if !d.zero() {
			s.locks[st.Lock] = d
			s.all.add(d)
		}
	}
	if h.last != nil {
		h.samples = append(h.samples, s)
		if len(h.samples) > historyLen {
			h.samples = append(h.samples[:0], h.samples[len(h.samples)-historyLen:]...)
		}
	}
	h.last, h.lastAt = cur, now
}

// run reads every sampleEvery until stop is closed.
func (h *history) run(stop <-chan struct{}) {
	t := time.NewTicker(sampleEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			h.read(now)
		}
	}
}

// Point is one reading of a chart: rates per second over the interval
// before At, and percentiles in seconds (nil when nothing was observed).
type Point struct {
	At                                   int64 `json:"t"` // ms since the Unix epoch
	Grants, Renewals, Releases, Expiries float64
	Revoked, Lost                        float64
	HoldP50, HoldP99, WaitP50, WaitP99   *float64
}

func quantile(bounds []float64, counts []uint64, q float64) *float64 {
	if counts == nil {
		return nil
	}
	v := resp.HistogramSnapshot{Bounds: bounds, Counts: counts}.Quantile(q)
	if math.IsNaN(v) {
		return nil
	}
	return &v
}

func (h *history) point(at time.Time, span time.Duration, d *delta) Point {
	p := Point{At: at.UnixMilli()}
	if d == nil {
		return p
	}
	per := func(n uint64) float64 {
		if span <= 0 {
			return 0
		}
		return math.Round(float64(n)/span.Seconds()*100) / 100
	}
	p.Grants, p.Renewals, p.Releases, p.Expiries, p.Revoked, p.Lost =
		per(d.grants), per(d.renewals), per(d.releases), per(d.expiries), per(d.revoked), per(d.lost)
	p.HoldP50, p.HoldP99 = quantile(h.bounds.hold, d.hold, 0.5), quantile(h.bounds.hold, d.hold, 0.99)
	p.WaitP50, p.WaitP99 = quantile(h.bounds.wait, d.wait, 0.5), quantile(h.bounds.wait, d.wait, 0.99)
	return p
}

// series is lock's points ("" every lock's), oldest first.
func (h *history) series(lock string) []Point {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Point, 0, len(h.samples))
	for i := range h.samples {
		s := &h.samples[i]
		d := &s.all
		if lock != "" {
			d = s.locks[lock]
		}
		out = append(out, h.point(s.at, s.span, d))
	}
	return out
}

// window is every lock's figures over the last windowLen readings, as
// one Point each.
func (h *history) window() map[string]Point {
	h.mu.Lock()
	defer h.mu.Unlock()
	sum := map[string]*delta{}
	var span time.Duration
	first := max(0, len(h.samples)-windowLen)
	for _, s := range h.samples[first:] {
		span += s.span
		for lock, d := range s.locks {
			if sum[lock] == nil {
				sum[lock] = &delta{}
			}
			sum[lock].add(d)
		}
	}
	out := make(map[string]Point, len(sum))
	for lock, d := range sum {
		out[lock] = h.point(time.Time{}, span, d)
	}
	return out
}
