package resp_test

// Prometheus metrics (--metrics-addr), scraped over HTTP as Prometheus
// would, before and after a session that moves every one of them.

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure"
	"github.com/tenure-db/tenure/internal/testenv"
	"github.com/tenure-db/tenure/lockmod"
	"github.com/tenure-db/tenure/resp"
	"github.com/tenure-db/tenure/resp/resptest"
)

// serveMetrics starts s's metrics endpoint on a loopback port and returns
// its URL; Shutdown (at the test's end) stops it.
func serveMetrics(t *testing.T, s *resptest.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	db := s.DB
	done := make(chan error, 1)
	go func() { done <- db.ServeMetrics(ln) }()
	t.Cleanup(func() {
		s.Stop()
		select {
		case err := <-done:
			if !errors.Is(err, tenure.ErrClosed) {
				t.Errorf("ServeMetrics: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("ServeMetrics did not stop with the server")
		}
	})
	return "http://" + ln.Addr().String() + "/metrics"
}

// scrape reads the exposition as series -> value, the series spelled as
// Prometheus prints it: name{label="value",…}.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %s", res.Status)
	}
	series := map[string]float64{}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("scrape: bad line %q", line)
		}
		series[line[:i]] = v
	}
	return series
}

func TestMetrics(t *testing.T) {
	clock := lockmod.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	var logs testenv.LogBuffer
	s := resptest.Start(t, tenure.Options{Clock: clock, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	url := serveMetrics(t, s)
	c := s.Client()
	bg := context.Background()

	before := scrape(t, url)
	for series, want := range map[string]float64{
		`tenure_epoch`:                                           1,
		`tenure_lock_leases{lock="_other"}`:                      0,
		`tenure_lock_grants_total{lock="_other"}`:                0,
		`tenure_lock_hold_seconds_count{lock="_other"}`:          0,
		`tenure_commands_total{command="lock.hold",result="ok"}`: 0, // every row, from the start
	} {
		if got, ok := before[series]; !ok || got != want {
			t.Errorf("before: %s = %v (present %v), want %v", series, got, ok, want)
		}
	}

	must := func(args ...any) any {
		t.Helper()
		v, err := c.Do(bg, args...).Result()
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return v
	}
	must("PING")
	must("SET", "k", "v")
	c.Do(bg, "NOSUCHCOMMAND")
	c.Do(bg, "GET") // wrong arity: counted under get
	a := must("LOCK.HOLD", "jobs", "a", "r1").([]any)
	must("LOCK.RENEW", a[0])
	c.Do(bg, "LOCK.RENEW", "00000000000000000000000000000000") // LOST unknown lease
	// A waiter in line behind a; the release grants it.
	waiter := s.Client()
	got := make(chan []any, 1)
	go func() {
		v, _ := waiter.Do(bg, "LOCK.HOLD", "jobs", "a", "r2").Slice()
		got <- v
	}()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		v, _ := c.Do(bg, "LOCK.INFO", "jobs", "a").Result()
		if info, _ := lockInfoFields(v); info["waiters"] == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the waiter never joined the line")
		}
	}
	clock.Advance(1500 * time.Millisecond) // a is held 1.5 s; r2 waits as long
	must("LOCK.RELEASE", a[0])
	b := <-got
	must("LOCK.REVOKE", "jobs", "a") // admin revokes r2's lease
	c.Do(bg, "LOCK.RELEASE", b[0])   // LOST revoked by admin
	m := must("LOCK.HOLD", "jobs", "m", "r3", "MAXHOLD", 1000).([]any)
	clock.Advance(time.Second) // revoked at MAXHOLD
	must("LOCK.HOLD", "jobs", "e", "r4", "TTL", 1000)
	clock.Advance(time.Second) // expires

	after := scrape(t, url)
	for series, want := range map[string]float64{
		`tenure_commands_total{command="ping",result="ok"}`:              1,
		`tenure_commands_total{command="set",result="ok"}`:               1,
		`tenure_commands_total{command="unknown",result="err"}`:          1,
		`tenure_commands_total{command="get",result="err"}`:              1,
		`tenure_commands_total{command="lock.hold",result="ok"}`:         4,
		`tenure_commands_total{command="lock.renew",result="ok"}`:        1,
		`tenure_commands_total{command="lock.renew",result="lost"}`:      1,
		`tenure_commands_total{command="lock.release",result="ok"}`:      1,
		`tenure_commands_total{command="lock.release",result="lost"}`:    1,
		`tenure_command_duration_seconds_count{command="ping"}`:          1,
		`tenure_lock_lost_total{lock="_unknown",reason="unknown lease"}`: 1,
		`tenure_lock_lost_total{lock="jobs",reason="revoked by admin"}`:  1,
		`tenure_lock_lost_total{lock="jobs",reason="expired"}`:           0,
		`tenure_lock_grants_total{lock="jobs"}`:                          4,
		`tenure_lock_renewals_total{lock="jobs"}`:                        1,
		`tenure_lock_releases_total{lock="jobs"}`:                        1,
		`tenure_lock_expiries_total{lock="jobs"}`:                        1,
		`tenure_lock_revocations_total{cause="admin",lock="jobs"}`:       1,
		`tenure_lock_revocations_total{cause="maxhold",lock="jobs"}`:     1,
		`tenure_lock_leases{lock="jobs"}`:                                0,
		`tenure_lock_waiters{lock="jobs"}`:                               0,
		`tenure_lock_hold_seconds_count{lock="jobs"}`:                    4,
		`tenure_lock_hold_seconds_sum{lock="jobs"}`:                      1.5 + 0 + 1 + 1,
		`tenure_lock_wait_seconds_count{lock="jobs"}`:                    4,
		`tenure_lock_wait_seconds_sum{lock="jobs"}`:                      1.5,
		`tenure_lock_wait_seconds_bucket{lock="jobs",le="0.001"}`:        3,
		`tenure_lock_grants_total{lock="_other"}`:                        0,
		`tenure_keys`:                       1,
		`tenure_epoch`:                      1,
		`tenure_connections_received_total`: 2,
		`tenure_connections{role="admin"}`:  2,
		`tenure_connections{role="none"}`:   0,
	} {
		if got, ok := after[series]; !ok || got != want {
			t.Errorf("after: %s = %v (present %v), want %v", series, got, ok, want)
		}
	}
	if after[`process_resident_memory_bytes`] <= 0 && after[`go_goroutines`] <= 0 {
		t.Errorf("no Go or process metrics")
	}

	// One log line per revocation, by an admin and at MAXHOLD; never a
	// lease id.
	var revoked []string
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, `msg="lease revoked"`) {
			revoked = append(revoked, line)
		}
	}
	if len(revoked) != 2 || !strings.Contains(revoked[0], `reason="revoked by admin"`) ||
		!strings.Contains(revoked[1], `reason="revoked maxhold"`) || !strings.Contains(revoked[1], "key=m") {
		t.Errorf("revocation log lines:\n%s", strings.Join(revoked, "\n"))
	}
	for _, id := range []any{a[0], b[0], m[0]} {
		if strings.Contains(logs.String(), id.(string)) {
			t.Errorf("the log shows lease id %s", id)
		}
	}
}

// Connections are counted by role, as AUTH changes it.
func TestMetricsConnectionsByRole(t *testing.T) {
	sum := sha256.Sum256([]byte("w-pass"))
	users, err := resp.ParseUsers(strings.NewReader("user worker write sha256:" + hex.EncodeToString(sum[:]) + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := resptest.Start(t, tenure.Options{Users: users})
	url := serveMetrics(t, s)
	anon := s.Dial()
	io.WriteString(anon, "PING\r\n")
	bufio.NewReader(anon).ReadString('\n')
	worker := redis.NewClient(&redis.Options{Addr: s.Addr, Username: "worker", Password: "w-pass"})
	t.Cleanup(func() { worker.Close() })
	if err := worker.Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	// With users, /metrics asks for a user's password (SPEC §14).
	m := scrape(t, strings.Replace(url, "http://", "http://worker:w-pass@", 1))
	for role, want := range map[string]float64{"none": 1, "read": 0, "write": 1, "admin": 0} {
		if got := m[`tenure_connections{role="`+role+`"}`]; got != want {
			t.Errorf("role %s: %v connections, want %v", role, got, want)
		}
	}
}

// A server shut down before ServeMetrics runs refuses to serve.
func TestServeMetricsAfterShutdown(t *testing.T) {
	s := resptest.Start(t, tenure.Options{})
	db := s.DB
	s.Stop()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.ServeMetrics(ln); !errors.Is(err, tenure.ErrClosed) {
		t.Fatalf("ServeMetrics after Shutdown: %v", err)
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Fatalf("the metrics listener is still open")
	}
}
