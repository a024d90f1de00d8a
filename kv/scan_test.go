package kv

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// scanAll walks the whole keyspace with SCAN, calling between (if not nil)
// after each call, and returns how often each key was returned and how many
// calls it took.
func scanAll(t *testing.T, s *testStore, match []byte, count int, between func()) (map[string]int, int) {
	t.Helper()
	seen := map[string]int{}
	var cursor uint64
	calls := 0
	for {
		next, keys, err := s.Scan(cursor, match, count, "")
		if err != nil {
			t.Fatal(err)
		}
		calls++
		for _, k := range keys {
			seen[string(k)]++
		}
		if next == 0 {
			return seen, calls
		}
		if next <= cursor {
			t.Fatalf("cursor went from %d to %d", cursor, next)
		}
		cursor = next
		if calls > 1e6 {
			t.Fatal("scan does not end")
		}
		if between != nil {
			between()
		}
	}
}

func TestScanExactlyOnce(t *testing.T) {
	s := openTest(t)
	const n = 1000
	for i := range n {
		s.set(fmt.Sprintf("key:%d", i), "v")
	}
	seen, calls := scanAll(t, s, nil, 10, nil)
	if len(seen) != n {
		t.Errorf("scan returned %d distinct keys; want %d", len(seen), n)
	}
	for k, c := range seen {
		if c != 1 {
			t.Errorf("key %q returned %d times", k, c)
		}
	}
	if calls < n/10 {
		t.Errorf("walk took %d calls; COUNT 10 over %d keys wants about %d", calls, n, n/10)
	}
}

// TestScanDuringWrites: a key present for the whole walk is returned, while
// other keys come and go.
func TestScanDuringWrites(t *testing.T) {
	s := openTest(t)
	const stable, churn = 500, 500
	for i := range stable {
		s.set(fmt.Sprintf("stable:%d", i), "v")
	}
	for i := range churn {
		s.set(fmt.Sprintf("churn:%d", i), "v")
	}
	round := 0
	seen, _ := scanAll(t, s, nil, 7, func() {
		// Delete some churn keys and add new ones, all over the hash space.
		for j := range 10 {
			if _, err := s.Del(bs(fmt.Sprintf("churn:%d", (round*10+j)%churn))); err != nil {
				t.Fatal(err)
			}
			s.set(fmt.Sprintf("new:%d:%d", round, j), "v")
		}
		round++
	})
	for i := range stable {
		if k := fmt.Sprintf("stable:%d", i); seen[k] != 1 {
			t.Errorf("stable key %q returned %d times; want 1", k, seen[k])
		}
	}
	if round == 0 {
		t.Fatal("the walk ended in one call; nothing was written during it")
	}
}

func TestScanMatchCountType(t *testing.T) {
	s := openTest(t)
	for i := range 50 {
		s.set(fmt.Sprintf("user:%d", i), "v")
		s.set(fmt.Sprintf("order:%d", i), "v")
	}
	s.setPX("user:expired", "v", time.Second)
	s.clock.Advance(2 * time.Second)

	seen, _ := scanAll(t, s, []byte("user:*"), 10, nil)
	if len(seen) != 50 {
		t.Errorf("MATCH user:* found %d keys; want 50", len(seen))
	}
	for k := range seen {
		if !strings.HasPrefix(k, "user:") || k == "user:expired" {
			t.Errorf("MATCH user:* returned %q", k)
		}
	}

	// COUNT is the number of records examined: one call with a large
	// COUNT walks everything; COUNT 5 returns at most 5 keys.
	next, keys, err := s.Scan(0, nil, 1000, "")
	if err != nil || next != 0 || len(keys) != 100 {
		t.Errorf("Scan COUNT 1000 = cursor %d, %d keys, %v; want 0, 100", next, len(keys), err)
	}
	next, keys, err = s.Scan(0, nil, 5, "")
	if err != nil || next == 0 || len(keys) > 5 {
		t.Errorf("Scan COUNT 5 = cursor %d, %d keys, %v", next, len(keys), err)
	}
	next, keys, err = s.Scan(0, nil, 0, "")
	if err != nil || next == 0 || len(keys) > 10 {
		t.Errorf("Scan default COUNT = cursor %d, %d keys, %v; want at most 10", next, len(keys), err)
	}

	next, keys, err = s.Scan(0, nil, 1000, "STRING")
	if err != nil || next != 0 || len(keys) != 100 {
		t.Errorf("Scan TYPE string = %d, %d keys, %v", next, len(keys), err)
	}
	next, keys, err = s.Scan(0, nil, 1000, "hash")
	if err != nil || next != 0 || len(keys) != 0 {
		t.Errorf("Scan TYPE hash = %d, %d keys, %v; want none", next, len(keys), err)
	}
}

// TestScanKeepsHashGroups: keys that share a hash come back in one call, so
// that a cursor (the next hash) never splits them. Real collisions are rare,
// so the records are planted under one hash by hand.
func TestScanKeepsHashGroups(t *testing.T) {
	s := openTest(t)
	plant := func(h uint64, key string) {
		dk := dataKey(h, []byte(key))
		r := record{value: []byte("v")}
		buf := make([]byte, r.encodedLen())
		r.encodeTo(buf)
		if err := s.db.Set(dk, buf, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"a", "b", "c"} {
		plant(100, k)
	}
	plant(200, "d")
	plant(300, "e")
	next, keys, err := s.Scan(0, nil, 1, "")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, k := range keys {
		names = append(names, string(k))
	}
	if !slices.Equal(names, []string{"a", "b", "c"}) || next != 200 {
		t.Errorf("Scan COUNT 1 = %d, %q; want cursor 200 and the whole group a, b, c", next, names)
	}
	next, keys, err = s.Scan(next, nil, 1, "")
	if err != nil || next != 300 || len(keys) != 1 || string(keys[0]) != "d" {
		t.Errorf("second Scan = %d, %q, %v", next, keys, err)
	}
	// The cursor is the hash: resuming anywhere inside the hash space works.
	next, keys, err = s.Scan(250, nil, 10, "")
	if err != nil || next != 0 || len(keys) != 1 || string(keys[0]) != "e" {
		t.Errorf("Scan from 250 = %d, %q, %v", next, keys, err)
	}
}
