package kv

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// The collection mechanics (SPEC §13 Storage) through hash and set
// commands: size kept in the header in the member's batch, the key gone
// with its last member, members under one generation, reclaimed after DEL.

func TestCollectionSizeFollowsMembers(t *testing.T) {
	ts := openTest(t)
	if n, err := ts.HSet([]byte("h"), bs("a", "1", "b", "2", "a", "3")); n != 2 || err != nil {
		t.Fatalf("HSET = %d, %v; want 2 (a field set twice counts once)", n, err)
	}
	if n, _ := ts.HLen([]byte("h")); n != 2 {
		t.Errorf("HLEN = %d, want 2", n)
	}
	if v, ok, _ := ts.HGet([]byte("h"), []byte("a")); !ok || string(v) != "3" {
		t.Errorf("HGET a = %q %v, want the last value of the command, 3", v, ok)
	}
	gen := headerOfKey(t, ts, "h").gen
	if got := ts.members(gen); got != 2 {
		t.Errorf("%d member records, want 2", got)
	}
	if n, _ := ts.HDel([]byte("h"), bs("a", "a", "zz")); n != 1 {
		t.Errorf("HDEL = %d, want 1", n)
	}
	if n, _ := ts.HDel([]byte("h"), bs("b")); n != 1 {
		t.Errorf("HDEL b = %d, want 1", n)
	}
	if typ, _ := ts.Type([]byte("h")); typ != "none" {
		t.Errorf("TYPE after the last HDEL = %q, want none", typ)
	}
	if err := ts.reclaimAll(); err != nil || ts.raw(nsMember) != 0 {
		t.Errorf("reclaim: %v, %d member records left", err, ts.raw(nsMember))
	}
	ts.checkCounters()
}

// headerOfKey reads key's collection header from Pebble.
func headerOfKey(t *testing.T, ts *testStore, key string) header {
	t.Helper()
	rec, closer, found, err := getRecord(ts.db, dataKey(hashKey([]byte(key)), []byte(key)))
	if err != nil || !found {
		t.Fatalf("record of %q: found %v, %v", key, found, err)
	}
	defer closer.Close()
	return headerOf(rec)
}

// TestMemberScanMeetsEveryStayingMember: HSCAN/SSCAN's cursor is a hash,
// so a member present for the whole scan is returned, whatever is added
// and removed meanwhile.
func TestMemberScanMeetsEveryStayingMember(t *testing.T) {
	ts := openTest(t)
	var stay [][]byte
	for i := range 500 {
		stay = append(stay, []byte("m"+strconv.Itoa(i)))
	}
	if _, err := ts.SAdd([]byte("s"), stay); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	cursor, round := uint64(0), 0
	for {
		next, out, err := ts.SScan([]byte("s"), cursor, nil, 7)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out {
			seen[string(m)]++
		}
		// Churn: add and remove others between calls.
		churn := bs(fmt.Sprintf("x%d", round), fmt.Sprintf("y%d", round))
		_, _ = ts.SAdd([]byte("s"), churn)
		_, _ = ts.SRem([]byte("s"), bs(fmt.Sprintf("x%d", round-1)))
		round++
		if next == 0 {
			break
		}
		cursor = next
	}
	for _, m := range stay {
		if seen[string(m)] == 0 {
			t.Errorf("member %s, present for the whole scan, never returned", m)
		}
	}
}

func TestCollectionEncodings(t *testing.T) {
	ts := openTest(t)
	enc := func(key string) string {
		o, ok, err := ts.Object([]byte(key))
		if err != nil || !ok {
			t.Fatalf("OBJECT %s: %v %v", key, ok, err)
		}
		return o.Encoding
	}
	_, _ = ts.SAdd([]byte("ints"), bs("1", "2", "3"))
	_, _ = ts.SAdd([]byte("strs"), bs("a"))
	_, _ = ts.HSet([]byte("small"), bs("f", "v"))
	_, _ = ts.HSet([]byte("long"), [][]byte{[]byte("f"), make([]byte, 65)})
	for key, want := range map[string]string{"ints": "intset", "strs": "hashtable", "small": "listpack", "long": "hashtable"} {
		if got := enc(key); got != want {
			t.Errorf("OBJECT ENCODING %s = %s, want %s", key, got, want)
		}
	}
	// Sticky, as Redis converts one way: the long value gone, still a hashtable.
	_, _ = ts.HSet([]byte("long"), bs("f", "short"))
	if got := enc("long"); got != "hashtable" {
		t.Errorf("after shortening: %s, want hashtable", got)
	}
	ts.SetEncodingLimits(EncodingLimits{HashMaxListpackEntries: 2, HashMaxListpackValue: 64, SetMaxIntsetEntries: 3})
	_, _ = ts.SAdd([]byte("ints"), bs("4"))
	_, _ = ts.HSet([]byte("small"), bs("g", "v", "h", "v"))
	if enc("ints") != "hashtable" || enc("small") != "hashtable" {
		t.Errorf("past the limits: %s %s, want hashtable twice", enc("ints"), enc("small"))
	}
	if ms, _ := ts.SMembers([]byte("i2")); len(ms) != 0 {
		t.Errorf("SMEMBERS of a missing key = %q", ms)
	}
	_, _ = ts.SAdd([]byte("i2"), bs("10", "-3", "2"))
	if ms, _ := ts.SMembers([]byte("i2")); !slices.Equal(strs(ms), []string{"-3", "2", "10"}) {
		t.Errorf("SMEMBERS of an intset = %q, want intset order", ms)
	}
}

func strs(b [][]byte) []string {
	out := make([]string, len(b))
	for i := range b {
		out[i] = string(b[i])
	}
	return out
}

// TestCollectionInTx: a transaction's commands see its own member writes,
// and the whole of it commits at once.
func TestCollectionInTx(t *testing.T) {
	ts := openTest(t)
	var got []byte
	var n int64
	_, err := ts.Tx(nil, func(tx *Store) {
		_, _ = tx.HSet([]byte("h"), bs("a", "1"))
		_, _ = tx.HIncrBy([]byte("h"), []byte("a"), 5)
		got, _, _ = tx.HGet([]byte("h"), []byte("a"))
		_, _ = tx.SAdd([]byte("s"), bs("x", "y"))
		_, _ = tx.SMove([]byte("s"), []byte("d"), []byte("x"))
		n, _ = tx.SCard([]byte("d"))
	})
	if err != nil || string(got) != "6" || n != 1 {
		t.Fatalf("in tx: HGET %q, SCARD d %d, %v", got, n, err)
	}
	if ms, _ := ts.SMembers([]byte("s")); !slices.Equal(strs(ms), []string{"y"}) {
		t.Errorf("after tx: s = %q", ms)
	}
	ts.checkCounters()
}

// TestCollectionExpiryReclaims: an expired hash is gone for every command,
// and its members are reclaimed.
func TestCollectionExpiryReclaims(t *testing.T) {
	ts := openTest(t)
	_, _ = ts.HSet([]byte("h"), bs("a", "1", "b", "2"))
	if ok, _ := ts.ExpireAt([]byte("h"), ts.clock.ms(time.Second), CondNone); !ok {
		t.Fatal("EXPIRE refused")
	}
	_, _ = ts.HSet([]byte("h"), bs("c", "3")) // keeps the TTL
	if ttl := ts.ttl("h"); ttl <= 0 {
		t.Errorf("TTL after HSET = %d, want it kept", ttl)
	}
	ts.clock.Advance(2 * time.Second)
	if n, _ := ts.HLen([]byte("h")); n != 0 {
		t.Errorf("HLEN of an expired hash = %d", n)
	}
	if err := ts.sweep(time.Second); err != nil {
		t.Fatal(err)
	}
	if err := ts.reclaimAll(); err != nil || ts.raw(nsMember) != 0 {
		t.Errorf("after sweep and reclaim: %v, %d member records", err, ts.raw(nsMember))
	}
	ts.checkCounters()
}

// TestCrashMidReclaimShowsNoDeletedMember: DELs of big hashes, then
// crashes (keeping any share of what was not synced) before, during and
// after their reclaim: every reopened store has the hashes gone, a hash
// made again under the same name holds its new field alone, and the
// reclaim ends with no member left but the new ones (SPEC §13 Storage).
func TestCrashMidReclaimShowsNoDeletedMember(t *testing.T) {
	fs := vfs.NewCrashableMem()
	s := openOn(t, fs, FsyncAlways)
	const hashes, fields = 5, 2000
	for k := range hashes {
		var pairs [][]byte
		for i := range fields {
			pairs = append(pairs, []byte("f"+strconv.Itoa(i)), []byte("v"))
		}
		if _, err := s.HSet([]byte("big"+strconv.Itoa(k)), pairs); err != nil {
			t.Fatal(err)
		}
	}
	for k := range hashes {
		if n, err := s.Del([][]byte{[]byte("big" + strconv.Itoa(k))}); n != 1 || err != nil {
			t.Fatalf("DEL = %d, %v", n, err)
		}
	}
	rng := rand.New(rand.NewPCG(7, 8))
	var clones []vfs.FS
	for range hashes + 1 {
		clones = append(clones, fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(101), RNG: rng}))
		if _, err := s.reclaim(1); err != nil { // one generation between crashes
			t.Fatal(err)
		}
	}
	for i, clone := range clones {
		c := openOn(t, clone, FsyncAlways)
		for k := range hashes {
			key := []byte("big" + strconv.Itoa(k))
			if all, err := c.HGetAll(key, true, true); err != nil || len(all) != 0 {
				t.Fatalf("crash %d: HGETALL %s = %d entries, %v", i, key, len(all), err)
			}
			if _, err := c.HSet(key, bs("new", "1")); err != nil {
				t.Fatal(err)
			}
			all, err := c.HGetAll(key, true, false)
			if n, _ := c.HLen(key); err != nil || n != 1 || len(all) != 1 || string(all[0]) != "new" {
				t.Fatalf("crash %d: %s made again: HLEN %d, fields %q, %v", i, key, n, all, err)
			}
		}
		if err := c.reclaimAll(); err != nil {
			t.Fatal(err)
		}
		ts := &testStore{Store: c, t: t}
		if n := ts.raw(nsMember); n != hashes {
			t.Errorf("crash %d: %d member records after reclaim, want the %d new ones", i, n, hashes)
		}
		ts.checkCounters()
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// A pipeline of 16 HSETs and SADDs is one WAL write and, with
// FsyncAlways, one fsync, as one of SETs is (TestPipelineIsOneCommit),
// and reads its own writes. (FsyncAlways: no everysec syncer writes
// meanwhile.)
func TestCollectionPipelineIsOneCommit(t *testing.T) {
	s, writes, syncs := openCounted(t, FsyncAlways)
	if err := s.Sync(); err != nil { // nothing left for a read to settle
		t.Fatal(err)
	}
	p := s.NewPipeline()
	before, beforeSyncs := writes.Load(), syncs.Load()
	for i := range 8 {
		if _, err := p.View().HSet([]byte("h"), bs("f"+strconv.Itoa(i), "v")); err != nil {
			t.Fatal(err)
		}
		if _, err := p.View().SAdd([]byte("s"+strconv.Itoa(i%2)), bs(strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := p.View().HLen([]byte("h")); n != 8 {
		t.Errorf("the pipeline reads HLEN %d, want 8", n)
	}
	if n, _ := s.HLen([]byte("h")); n != 0 {
		t.Errorf("the store sees HLEN %d before Commit", n)
	}
	if err := p.Commit(); err != nil {
		t.Fatal(err)
	}
	if n, m := writes.Load()-before, syncs.Load()-beforeSyncs; n != 1 || m != 1 {
		t.Errorf("a pipeline of 16 HSET/SADD made %d WAL writes and %d fsyncs; want 1 and 1", n, m)
	}
	if n, _ := s.SCard([]byte("s1")); n != 4 {
		t.Errorf("SCARD s1 = %d, want 4", n)
	}
}

// WATCH of a hash or set breaks on a write of one member, on HDEL of the
// last field and on SPOP, and not on a write that changes nothing (an
// SADD of a member already there), as in Redis.
func TestCollectionWatch(t *testing.T) {
	ts := openTest(t)
	_, _ = ts.HSet([]byte("h"), bs("a", "1"))
	_, _ = ts.SAdd([]byte("s"), bs("x", "y"))
	for _, tc := range []struct {
		name   string
		key    string
		write  func()
		breaks bool
	}{
		{"HSET of a field", "h", func() { _, _ = ts.HSet([]byte("h"), bs("b", "2")) }, true},
		{"HDEL of every field", "h", func() { _, _ = ts.HDel([]byte("h"), bs("a", "b")) }, true},
		{"SADD of a member there", "s", func() { _, _ = ts.SAdd([]byte("s"), bs("x")) }, false},
		{"SPOP", "s", func() { _, _ = ts.SPop([]byte("s"), 1) }, true},
	} {
		var w Watch
		if err := ts.Watch(&w, []byte(tc.key)); err != nil {
			t.Fatal(err)
		}
		tc.write()
		ran, err := ts.Tx(&w, func(*Store) {})
		if err != nil || ran == tc.breaks {
			t.Errorf("%s: EXEC ran %v, %v; want ran %v", tc.name, ran, err, !tc.breaks)
		}
		ts.Unwatch(&w)
	}
}
