package locks

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// OpenLock refuses options out of SPEC §3's ranges, and sends nothing.
func TestOpenLockChecksOptions(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // nothing listens: OpenLock must not dial
	defer c.Close()
	for _, tc := range []struct {
		name string
		lock string
		opts []Option
		ok   bool
	}{
		{"defaults", "l", nil, true},
		{"ttl 1s", "l", []Option{TTL(time.Second)}, true},
		{"ttl 1h", "l", []Option{TTL(time.Hour)}, true},
		{"ttl under 1s", "l", []Option{TTL(999 * time.Millisecond)}, false},
		{"ttl over 1h", "l", []Option{TTL(time.Hour + time.Millisecond)}, false},
		{"ttl 0", "l", []Option{TTL(0)}, false},
		{"maxhold 1s", "l", []Option{TTL(time.Second), MaxHold(time.Second)}, true},
		{"maxhold under 1s", "l", []Option{MaxHold(999 * time.Millisecond)}, false},
		{"maxhold over 24h", "l", []Option{MaxHold(24*time.Hour + time.Millisecond)}, false},
		{"maxhold under the margin", "l", []Option{TTL(time.Hour), MaxHold(time.Second)}, false},
		{"wait 0", "l", []Option{Wait(0)}, true},
		{"wait negative", "l", []Option{Wait(-time.Millisecond)}, false},
		{"margin 0", "l", []Option{Margin(0)}, true},
		{"margin negative", "l", []Option{Margin(-time.Millisecond)}, false},
		{"margin half the ttl", "l", []Option{TTL(time.Second), Margin(500 * time.Millisecond)}, false},
		{"empty name", "", nil, false},
		{"name of 257 bytes", string(make([]byte, 257)), nil, false},
	} {
		l, err := OpenLock(c, tc.lock, tc.opts...)
		if (err == nil) != tc.ok {
			t.Errorf("%s: OpenLock = %v, want ok %v", tc.name, err, tc.ok)
		}
		if err == nil && l == nil {
			t.Errorf("%s: nil Lock", tc.name)
		}
	}
	if _, err := OpenLock(nil, "l"); err == nil {
		t.Error("OpenLock(nil client) succeeded")
	}
}

func TestDefaultMargin(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	for ttl, want := range map[time.Duration]time.Duration{
		time.Second:      100 * time.Millisecond,
		10 * time.Second: time.Second,
		time.Minute:      2 * time.Second,
	} {
		l, err := OpenLock(c, "l", TTL(ttl))
		if err != nil {
			t.Fatal(err)
		}
		if l.margin != want {
			t.Errorf("ttl %v: margin %v, want %v", ttl, l.margin, want)
		}
	}
}

// doer is a Store whose options the Lock cannot read.
type doer struct{}

func (doer) Do(ctx context.Context, args ...any) *redis.Cmd { return redis.NewCmd(ctx, args...) }

// The wait chunk is half the client's read timeout, read from its options
// (go-redis v9.23 normalizes them: its default is 5 s; -1 means none, as -2).
func TestWaitChunkFollowsReadTimeout(t *testing.T) {
	client := func(rt time.Duration) Store {
		c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ReadTimeout: rt})
		t.Cleanup(func() { c.Close() })
		return c
	}
	cluster := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}, ReadTimeout: time.Second})
	defer cluster.Close()
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}})
	defer ring.Close()
	var universal redis.UniversalClient = redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{"127.0.0.1:1"}, ReadTimeout: 800 * time.Millisecond})
	defer universal.Close()

	for _, tc := range []struct {
		name  string
		store Store
		want  time.Duration
	}{
		{"client default", client(0), 2500 * time.Millisecond},
		{"client 1s", client(time.Second), 500 * time.Millisecond},
		{"client without timeout (-1)", client(-1), unboundedChunk},
		{"client without deadlines (-2)", client(-2), unboundedChunk},
		{"cluster 1s", cluster, 500 * time.Millisecond},
		{"ring default", ring, assumedReadTimeout / 2},
		{"universal 800ms", universal, 400 * time.Millisecond},
		{"unknown store", doer{}, assumedReadTimeout / 2},
	} {
		if got := waitChunk(tc.store); got != tc.want {
			t.Errorf("%s: chunk %v, want %v", tc.name, got, tc.want)
		}
	}
}
