package resp_test

// The lock metrics by lock (SPEC §14): the first 1,000 lock names have
// series of their own, every later name shares "_other".

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/tenure-db/tenure"
	"github.com/tenure-db/tenure/resp"
	"github.com/tenure-db/tenure/resp/resptest"
)

func TestLockMetricsCapAtAThousandNames(t *testing.T) {
	s := resptest.Start(t, tenure.Options{})
	url := serveMetrics(t, s)
	c := s.Client()
	bg := context.Background()

	const names = resp.LockSeriesCap + 7
	pipe := c.Pipeline()
	for i := range names {
		pipe.Do(bg, "LOCK.HOLD", fmt.Sprintf("lock-%04d", i), "k", fmt.Sprintf("r%d", i), "WAIT", 0)
	}
	// The first name again, and a waiter on a name past the cap: both
	// count where their names were put.
	pipe.Do(bg, "LOCK.HOLD", "lock-0000", "k2", "again")
	cmds, err := pipe.Exec(bg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Do(bg, "LOCK.HOLD", fmt.Sprintf("lock-%04d", names-1), "k", "waits", "WAIT", 0).Result(); err == nil || err.Error() != "redis: nil" {
		t.Fatalf("a held key granted twice: %v", err)
	}
	// One LOST reply on a name past the cap, one on a name of its own.
	for _, i := range []int{0, names - 1} {
		id := cmds[i].(interface{ Slice() ([]any, error) })
		lease, _ := id.Slice()
		c.Do(bg, "LOCK.REVOKE", fmt.Sprintf("lock-%04d", i), "k")
		if err := c.Do(bg, "LOCK.RENEW", lease[0]).Err(); err == nil || !strings.HasPrefix(err.Error(), "LOST") {
			t.Fatalf("renew of a revoked lease: %v", err)
		}
	}

	m := scrape(t, url)
	labels := map[string]bool{}
	for series := range m {
		if rest, ok := strings.CutPrefix(series, `tenure_lock_grants_total{lock="`); ok {
			labels[strings.TrimSuffix(rest, `"}`)] = true
		}
	}
	if len(labels) != resp.LockSeriesCap+1 || !labels[resp.OtherLock] || !labels["lock-0999"] || labels["lock-1000"] {
		t.Fatalf("%d lock labels (want %d names and _other); lock-0999 %v, lock-1000 %v", len(labels), resp.LockSeriesCap, labels["lock-0999"], labels["lock-1000"])
	}
	for series, want := range map[string]float64{
		`tenure_lock_grants_total{lock="lock-0000"}`:                         2,
		`tenure_lock_leases{lock="lock-0000"}`:                               1,
		`tenure_lock_grants_total{lock="_other"}`:                            7,
		`tenure_lock_leases{lock="_other"}`:                                  6,
		`tenure_lock_revocations_total{cause="admin",lock="_other"}`:         1,
		`tenure_lock_lost_total{lock="_other",reason="revoked by admin"}`:    1,
		`tenure_lock_lost_total{lock="lock-0000",reason="revoked by admin"}`: 1,
		`tenure_lock_hold_seconds_count{lock="_other"}`:                      1,
		`tenure_lock_wait_seconds_count{lock="lock-0999"}`:                   1,
	} {
		if got, ok := m[series]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", series, got, ok, want)
		}
	}
}

// Waiters are counted by lock as they join and leave its lines.
func TestLockMetricsWaitersByLock(t *testing.T) {
	s := resptest.Start(t, tenure.Options{})
	url := serveMetrics(t, s)
	c := s.Client()
	bg := context.Background()
	lease, err := c.Do(bg, "LOCK.HOLD", "jobs", "a", "r1").Slice()
	if err != nil {
		t.Fatal(err)
	}
	// A HOLD whose WAIT runs out leaves a lingering place: a waiter (SPEC §3).
	if err := c.Do(bg, "LOCK.HOLD", "jobs", "a", "r2", "WAIT", 1).Err(); err == nil {
		t.Fatal("granted a held key")
	}
	m := scrape(t, url)
	if m[`tenure_lock_waiters{lock="jobs"}`] != 1 || m[`tenure_lock_leases{lock="jobs"}`] != 1 {
		t.Fatalf("waiters %v, leases %v; want 1 and 1", m[`tenure_lock_waiters{lock="jobs"}`], m[`tenure_lock_leases{lock="jobs"}`])
	}
	// r2 retried takes its place back and is granted at the release.
	if err := c.Do(bg, "LOCK.RELEASE", lease[0]).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(bg, "LOCK.HOLD", "jobs", "a", "r2", "WAIT", 0).Err(); err != nil {
		t.Fatal(err)
	}
	m = scrape(t, url)
	if m[`tenure_lock_waiters{lock="jobs"}`] != 0 || m[`tenure_lock_leases{lock="jobs"}`] != 1 || m[`tenure_lock_releases_total{lock="jobs"}`] != 1 {
		t.Fatalf("after the release: waiters %v, leases %v, releases %v; want 0, 1, 1",
			m[`tenure_lock_waiters{lock="jobs"}`], m[`tenure_lock_leases{lock="jobs"}`], m[`tenure_lock_releases_total{lock="jobs"}`])
	}
}
