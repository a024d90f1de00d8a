package dashboard

import (
	"cmp"
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tenure-db/tenure/lockmod"
	"github.com/tenure-db/tenure/resp"
)

//go:embed static
var static embed.FS

// Source is what the page shows: a *resp.Server.
type Source interface {
	LockStats() []resp.LockStats
	ListLock(lock string, cursor uint64, count int) (uint64, []lockmod.ListEntry)
	KeyHolders(lock, key string) []lockmod.Holder
	KeyLine(lock, key string) []lockmod.Waiter
	EventsSince(seq uint64, n int) ([]resp.AuditEvent, uint64)
	Node() resp.NodeStatus
}

// Dashboard serves the page and its data. Close stops its sampler.
type Dashboard struct {
	src   Source
	hist  *history
	mux   *http.ServeMux
	stop  chan struct{}
	done  chan struct{}
	close sync.Once

	keysMu sync.Mutex
	keys   map[string]*keySnapshot // by lock, at most maxCachedLocks

	// The summary is made once per summaryEvery at most, whoever asks:
	// every open page gets the same.
	summaryMu   sync.Mutex
	lastSummary Summary
}

// New makes the dashboard of src and starts its sampler.
func New(src Source) *Dashboard {
	d := &Dashboard{src: src, hist: newHistory(src), mux: http.NewServeMux(),
		stop: make(chan struct{}), done: make(chan struct{}), keys: map[string]*keySnapshot{}}
	assets, _ := fs.Sub(static, "static")
	files := http.FileServerFS(assets)
	d.mux.Handle("GET /static/", http.StripPrefix("/static/", files))
	d.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		http.ServeFileFS(w, r, assets, "index.html")
	})
	d.mux.HandleFunc("GET /api/summary", d.serveSummary)
	d.mux.HandleFunc("GET /api/keys", d.serveKeys)
	d.mux.HandleFunc("GET /api/key", d.serveKey)
	d.mux.HandleFunc("GET /api/series", d.serveSeries)
	d.mux.HandleFunc("GET /api/events", d.serveEvents)
	d.mux.HandleFunc("GET /api/stream", d.serveStream)
	go func() {
		defer close(d.done)
		d.hist.run(d.stop)
	}()
	return d
}

// Close stops the sampler; it is safe to call more than once.
func (d *Dashboard) Close() {
	d.close.Do(func() { close(d.stop) })
	<-d.done
}

func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'")
	d.mux.ServeHTTP(w, r)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(v)
}

// Node is the node as the page shows it.
type Node struct {
	Role     string `json:"role"`
	Epoch    uint64 `json:"epoch"`
	Leases   int64  `json:"leases"`
	Waiters  int64  `json:"waiters"`
	Keys     int64  `json:"keys"`
	UptimeS  int64  `json:"uptime_s"`
	Version  string `json:"version"`
	Self     string `json:"self,omitempty"`
	Leader   string `json:"leader,omitempty"`
	LeaderAt string `json:"leader_addr,omitempty"`
	Peers    []Peer `json:"peers,omitempty"`
}

// Peer is a voter of the cluster.
type Peer struct {
	ID      string `json:"id"`
	Addr    string `json:"addr"`
	Applied int64  `json:"applied"`
	Lag     int64  `json:"lag"` // -1: unknown
}

// LockRow is one row of the lock table: gauges now, totals since the store
// opened, and rates and percentiles over the last minute.
type LockRow struct {
	Lock     string   `json:"lock"`
	Leases   int64    `json:"leases"`
	Waiters  int64    `json:"waiters"`
	Grants   uint64   `json:"grants"`
	Renewals uint64   `json:"renewals"`
	Releases uint64   `json:"releases"`
	Expiries uint64   `json:"expiries"`
	Revoked  uint64   `json:"revoked"`
	Lost     uint64   `json:"lost"`
	Rate     float64  `json:"grants_per_s"`
	HoldP50  *float64 `json:"hold_p50"`
	HoldP99  *float64 `json:"hold_p99"`
	WaitP50  *float64 `json:"wait_p50"`
	WaitP99  *float64 `json:"wait_p99"`
}

// Summary is the node and its lock table.
type Summary struct {
	Node  Node      `json:"node"`
	Locks []LockRow `json:"locks"`
	At    int64     `json:"t"`
	// The histograms' first bucket bounds, in seconds: a percentile at or
	// under one says only that it is under it.
	HoldFirstBound float64 `json:"hold_first_bound"`
	WaitFirstBound float64 `json:"wait_first_bound"`
}

func (d *Dashboard) summary() Summary {
	d.summaryMu.Lock()
	defer d.summaryMu.Unlock()
	if time.Since(time.UnixMilli(d.lastSummary.At)) < summaryEvery-100*time.Millisecond {
		return d.lastSummary
	}
	d.lastSummary = d.makeSummary()
	return d.lastSummary
}

func (d *Dashboard) makeSummary() Summary {
	n := d.src.Node()
	s := Summary{At: time.Now().UnixMilli(), Locks: []LockRow{}, Node: Node{Role: n.Role, Epoch: n.Epoch, Leases: n.Leases, Waiters: n.Waiters,
		Keys: n.Keys, UptimeS: int64(n.Uptime.Seconds()), Version: n.Version, Self: n.Self, Leader: n.Leader, LeaderAt: n.LeaderAt}}
	for _, p := range n.Peers {
		s.Node.Peers = append(s.Node.Peers, Peer(p))
	}
	win := d.hist.window()
	for _, st := range d.src.LockStats() {
		if st.Lock == resp.UnknownLock {
			continue
		}
		row := LockRow{Lock: st.Lock, Leases: st.Leases, Waiters: st.Waiters, Grants: st.Grants, Renewals: st.Renewals,
			Releases: st.Releases, Expiries: st.Expiries, Revoked: st.RevokedAdmin + st.RevokedMaxHold, Lost: lostOf(st)}
		if st.Lock == resp.OtherLock && row.Grants == 0 && row.Waiters == 0 && row.Lost == 0 {
			continue // no name past the cap yet
		}
		s.HoldFirstBound, s.WaitFirstBound = st.Hold.Bounds[0], st.Wait.Bounds[0]
		if p, ok := win[st.Lock]; ok {
			row.Rate, row.HoldP50, row.HoldP99, row.WaitP50, row.WaitP99 = p.Grants, p.HoldP50, p.HoldP99, p.WaitP50, p.WaitP99
		}
		s.Locks = append(s.Locks, row)
	}
	return s
}

func (d *Dashboard) serveSummary(w http.ResponseWriter, r *http.Request) { writeJSON(w, d.summary()) }

func (d *Dashboard) serveSeries(w http.ResponseWriter, r *http.Request) {
	lock := r.URL.Query().Get("lock")
	writeJSON(w, map[string]any{"lock": lock, "every_s": sampleEvery.Seconds(), "points": d.hist.series(lock)})
}

// Event is a lock event as the page shows it. Fence is a string, as in
// SPEC §13's lock events, so that no digit is lost.
type Event struct {
	Seq    uint64 `json:"seq"`
	At     int64  `json:"t"`
	Kind   string `json:"event"`
	Lock   string `json:"lock,omitempty"`
	Key    string `json:"key,omitempty"`
	Fence  string `json:"fence,omitempty"`
	Owner  string `json:"owner,omitempty"`
	Reason string `json:"reason,omitempty"`
	Epoch  string `json:"epoch,omitempty"`
}

func eventOf(e resp.AuditEvent) Event {
	ev := Event{Seq: e.Seq, At: e.At.UnixMilli(), Kind: e.Kind.String(), Lock: e.Lock, Key: e.Key, Owner: e.Owner, Reason: e.Reason}
	if e.Kind == lockmod.EventEpoch {
		ev.Epoch = strconv.FormatUint(e.Epoch, 10)
	} else {
		ev.Fence = strconv.FormatUint(e.Fence, 10)
	}
	return ev
}

// serveEvents is the newest events the audit keeps (count, default 200),
// of one lock or all, oldest first.
func (d *Dashboard) serveEvents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	n := intParam(q.Get("count"), 200, 1, 10000)
	lock := q.Get("lock")
	_, last := d.src.EventsSince(^uint64(0), 0)
	var out []Event
	// Walk back from the newest in steps until n of lock's are found.
	for seq := last; seq > 0 && len(out) < n; {
		from := seq - min(seq, 1000)
		batch, _ := d.src.EventsSince(from, int(seq-from))
		if len(batch) == 0 {
			break
		}
		var picked []Event
		for _, e := range batch {
			if lock == "" || e.Lock == lock || e.Kind == lockmod.EventEpoch {
				picked = append(picked, eventOf(e))
			}
		}
		out = append(picked, out...)
		seq = from
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	if out == nil {
		out = []Event{}
	}
	writeJSON(w, map[string]any{"events": out})
}

func intParam(s string, def, lo, hi int) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return def
	}
	return min(max(n, lo), hi)
}

// Stream beats: events are sent every streamBeat, at most streamBatch at a
// time; the summary every summaryEvery.
const (
	streamBeat   = 250 * time.Millisecond
	streamBatch  = 200
	summaryEvery = time.Second
)

// serveStream is the page's live feed, as server-sent events: "summary"
// (the node and the lock table) every second, and "lock", one lock event
// each. A reader that falls behind skips ahead, told by a "skipped" event.
func (d *Dashboard) serveStream(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)

	_, last := d.src.EventsSince(^uint64(0), 0)
	seq := last - min(last, uint64(intParam(r.URL.Query().Get("backlog"), 50, 0, streamBatch)))
	send := func(kind string, v any) bool {
		b, err := json.Marshal(v)
		if err != nil {
			return false
		}
		if _, err := w.Write([]byte("event: " + kind + "\ndata: ")); err != nil {
			return false
		}
		_, err = w.Write(append(b, '\n', '\n'))
		return err == nil
	}
	beat := time.NewTicker(streamBeat)
	defer beat.Stop()
	var sentSummary time.Time
	for {
		events, newest := d.src.EventsSince(seq, streamBatch)
		if len(events) > 0 {
			if skipped := int64(events[0].Seq) - int64(seq) - 1; skipped > 0 {
				send("skipped", map[string]int64{"events": skipped})
			}
			for _, e := range events {
				if !send("lock", eventOf(e)) {
					return
				}
			}
			seq = events[len(events)-1].Seq
			if newest > seq+streamBatch {
				// Too many to show: go on from the newest.
				send("skipped", map[string]uint64{"events": newest - seq - streamBatch})
				seq = newest - streamBatch
			}
		}
		if now := time.Now(); now.Sub(sentSummary) >= summaryEvery {
			if !send("summary", d.summary()) {
				return
			}
			sentSummary = now
		}
		fl.Flush()
		select {
		case <-r.Context().Done():
			return
		case <-beat.C:
		}
	}
}

// Keys of a lock: walked whole on the server, then filtered, sorted and
// paged for each request. A walk is reused for keysFresh, or for
// freshFactor times what it cost when that is longer, so that watching a
// lock of 100,000 keys costs the server a few percent of a CPU, and a small
// lock is read afresh at every request; an order once sorted (by column,
// direction and filter) is reused with its walk.
const (
	keysFresh      = 200 * time.Millisecond
	freshFactor    = 20
	maxKeysWalked  = 200000
	maxCachedLocks = 16
	maxOrders      = 8
	walkStep       = 512
)

type keySnapshot struct {
	mu        sync.Mutex // guards everything below; one walk at a time per lock
	at        time.Time
	cost      time.Duration
	entries   []lockmod.ListEntry
	truncated bool
	orders    map[string][]int32 // "sort desc filter" -> indexes into entries
}

// Key is one held or waited-for key as the page shows it: the newest live
// lease's fence, owner, ttl and held-for. Never a lease id.
type Key struct {
	Key       string `json:"key"`
	Fence     string `json:"fence"` // "" when free (only lingering places wait)
	Owner     string `json:"owner"`
	TTLMs     int64  `json:"ttl_ms"`       // -1: no deadline (free, or held in process)
	LeaseTTLs int64  `json:"lease_ttl_ms"` // the ttl it was granted with, for the bar
	HeldMs    int64  `json:"held_ms"`
	Holders   int    `json:"holders"`
	Limit     int    `json:"limit"`
	Waiters   int    `json:"waiters"`
	InProcess bool   `json:"in_process,omitempty"`
}

// page is a page of lock's keys: those whose key or owner holds filter
// (lower case), sorted by column, from offset; and how many there are, how
// many match, and whether the walk stopped at maxKeysWalked.
func (d *Dashboard) page(lock, filter, column string, desc bool, offset, limit int) (page []lockmod.ListEntry, total, matched int, truncated bool) {
	d.keysMu.Lock()
	ks := d.keys[lock]
	if ks == nil {
		for l := range d.keys { // forget one, whichever: a page asks again
			if len(d.keys) < maxCachedLocks {
				break
			}
			delete(d.keys, l)
		}
		ks = &keySnapshot{}
		d.keys[lock] = ks
	}
	d.keysMu.Unlock()

	ks.mu.Lock()
	defer ks.mu.Unlock()
	if time.Since(ks.at) >= max(keysFresh, freshFactor*ks.cost) {
		start := time.Now()
		var all []lockmod.ListEntry
		truncated := false
		for cursor := uint64(0); ; {
			next, entries := d.src.ListLock(lock, cursor, walkStep)
			all = append(all, entries...)
			if next == 0 {
				break
			}
			if len(all) >= maxKeysWalked {
				truncated = true
				break
			}
			cursor = next
		}
		ks.entries, ks.truncated, ks.orders = all, truncated, map[string][]int32{}
		ks.at = time.Now()
		ks.cost = ks.at.Sub(start)
	}
	name := column + " " + strconv.FormatBool(desc) + " " + filter
	order, ok := ks.orders[name]
	if !ok {
		start := time.Now()
		order = sortedKeys(ks.entries, filter, column, desc)
		if len(ks.orders) >= maxOrders {
			clear(ks.orders)
		}
		ks.orders[name] = order
		ks.cost += time.Since(start)
	}
	offset = min(offset, len(order))
	for _, i := range order[offset:min(len(order), offset+limit)] {
		page = append(page, ks.entries[i])
	}
	return page, len(ks.entries), len(order), ks.truncated
}

// byColumn orders two keys by a column of the page.
var byColumn = map[string]func(a, b *lockmod.ListEntry) int{
	"key":     func(a, b *lockmod.ListEntry) int { return strings.Compare(a.Key, b.Key) },
	"owner":   func(a, b *lockmod.ListEntry) int { return strings.Compare(a.Owner, b.Owner) },
	"fence":   func(a, b *lockmod.ListEntry) int { return cmp.Compare(a.Fence, b.Fence) },
	"ttl":     func(a, b *lockmod.ListEntry) int { return cmp.Compare(a.TTL, b.TTL) },
	"held":    func(a, b *lockmod.ListEntry) int { return cmp.Compare(a.Held, b.Held) },
	"holders": func(a, b *lockmod.ListEntry) int { return cmp.Compare(a.Holders, b.Holders) },
	"waiters": func(a, b *lockmod.ListEntry) int { return cmp.Compare(a.Waiters, b.Waiters) },
}

// sortedKeys is the indexes of the entries that match filter, in column's
// order (then the key's: a total order, as keys are unique).
func sortedKeys(entries []lockmod.ListEntry, filter, column string, desc bool) []int32 {
	order := make([]int32, 0, len(entries))
	for i := range entries {
		e := &entries[i]
		if filter == "" || strings.Contains(strings.ToLower(e.Key), filter) || strings.Contains(strings.ToLower(e.Owner), filter) {
			order = append(order, int32(i))
		}
	}
	less := byColumn[column]
	if less == nil {
		less = byColumn["key"]
	}
	slices.SortFunc(order, func(i, j int32) int {
		a, b := &entries[i], &entries[j]
		c := cmp.Or(less(a, b), strings.Compare(a.Key, b.Key))
		if desc {
			return -c
		}
		return c
	})
	return order
}

func ms(d time.Duration) int64 { return d.Milliseconds() }

// serveKeys is a page of a lock's keys: lock, q (a filter on key and
// owner), sort (key, owner, fence, ttl, held, holders, waiters), desc,
// offset, limit (default 100, at most 1000).
func (d *Dashboard) serveKeys(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	lock := q.Get("lock")
	if lock == "" {
		writeJSON(w, map[string]any{"lock": lock, "total": 0, "matched": 0, "keys": []Key{}})
		return
	}
	// _other is no lock but the names past the cap: it lists the keys of a
	// lock that is named so, if any.
	offset := intParam(q.Get("offset"), 0, 0, maxKeysWalked)
	page, total, matched, truncated := d.page(lock, strings.ToLower(q.Get("q")), q.Get("sort"), q.Get("desc") == "1",
		offset, intParam(q.Get("limit"), 100, 1, 1000))
	out := make([]Key, len(page))
	for i, e := range page {
		k := Key{Key: e.Key, Owner: e.Owner, TTLMs: -1, HeldMs: ms(e.Held), Holders: e.Holders, Limit: e.Limit,
			Waiters: e.Waiters, InProcess: e.InProcess}
		if e.Fence != 0 {
			k.Fence = strconv.FormatUint(e.Fence, 10)
			if !e.InProcess {
				k.TTLMs, k.LeaseTTLs = ms(e.TTL), ms(e.LeaseTTL)
			}
		}
		out[i] = k
	}
	writeJSON(w, map[string]any{"lock": lock, "total": total, "matched": matched, "offset": min(offset, matched),
		"truncated": truncated, "keys": out})
}

// Holder is a live lease of a key as the page shows it. Never a lease id.
type Holder struct {
	Fence     string `json:"fence"`
	Owner     string `json:"owner"`
	TTLMs     int64  `json:"ttl_ms"` // -1: held in process
	HeldMs    int64  `json:"held_ms"`
	MaxHoldMs int64  `json:"maxhold_ms"` // -1: no MAXHOLD
	Shared    bool   `json:"shared,omitempty"`
}

// Waiter is a place in a key's line: who waits, and how long.
type Waiter struct {
	Owner     string `json:"owner"`
	WaitedMs  int64  `json:"waited_ms"`
	Shared    bool   `json:"shared,omitempty"`
	Lingering bool   `json:"lingering,omitempty"`
}

// serveKey is one key's holders, oldest first, and its line, first first:
// who holds it, since when, and who waits.
func (d *Dashboard) serveKey(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	lock, key := q.Get("lock"), q.Get("key")
	holders, line := []Holder{}, []Waiter{}
	if lock != "" && key != "" {
		for _, h := range d.src.KeyHolders(lock, key) {
			ho := Holder{Fence: strconv.FormatUint(h.Fence, 10), Owner: h.Owner, TTLMs: -1, HeldMs: ms(h.Held), MaxHoldMs: -1, Shared: h.Shared}
			if !h.InProcess {
				ho.TTLMs = ms(h.TTL)
			}
			if h.MaxHold > 0 {
				ho.MaxHoldMs = ms(h.MaxHold)
			}
			holders = append(holders, ho)
		}
		for _, wt := range d.src.KeyLine(lock, key) {
			line = append(line, Waiter{Owner: wt.Owner, WaitedMs: ms(wt.Waited), Shared: wt.Shared, Lingering: wt.Lingering})
		}
	}
	writeJSON(w, map[string]any{"lock": lock, "key": key, "holders": holders, "line": line})
}
