package kv

import (
	"errors"
	"slices"
	"testing"
	"time"
)

func TestDelExists(t *testing.T) {
	s := openTest(t)
	s.set("a", "1")
	s.set("b", "2")
	s.setPX("x", "gone", time.Second)
	s.clock.Advance(2 * time.Second)
	if n, err := s.Exists(bs("a", "a", "b", "c", "x")); err != nil || n != 3 {
		t.Fatalf("Exists = %d, %v; want 3 (repeats count)", n, err)
	}
	s.set("y", "3")
	s.setPX("x", "gone", time.Second)
	s.clock.Advance(2 * time.Second)
	if n, err := s.Del(bs("a", "a", "c", "x", "y")); err != nil || n != 2 {
		t.Fatalf("Del = %d, %v; want 2 (a repeat counts once, expired counts 0)", n, err)
	}
	s.mustMissing("a")
	s.mustGet("b", "2")
	if n, _ := s.DBSize(); n != 1 {
		t.Errorf("DBSize = %d; want 1", n)
	}
	s.checkCounters()
}

func TestExpireAt(t *testing.T) {
	const noTTL = 0
	later, sooner := 20*time.Second, 5*time.Second
	cases := []struct {
		name    string
		ttl     time.Duration // of the key before; noTTL: none; -1: no key
		at      time.Duration // new deadline from now
		cond    ExpireCond
		want    bool
		wantTTL int64
	}{
		{"set on no TTL", noTTL, later, CondNone, true, 20000},
		{"replace", 10 * time.Second, sooner, CondNone, true, 5000},
		{"missing key", -1, later, CondNone, false, -2},
		{"NX on no TTL", noTTL, later, CondNX, true, 20000},
		{"NX on TTL", 10 * time.Second, later, CondNX, false, 10000},
		{"XX on no TTL", noTTL, later, CondXX, false, -1},
		{"XX on TTL", 10 * time.Second, later, CondXX, true, 20000},
		{"GT on no TTL (infinite)", noTTL, later, CondGT, false, -1},
		{"GT later", 10 * time.Second, later, CondGT, true, 20000},
		{"GT sooner", 10 * time.Second, sooner, CondGT, false, 10000},
		{"GT equal", 10 * time.Second, 10 * time.Second, CondGT, false, 10000},
		{"LT on no TTL (infinite)", noTTL, later, CondLT, true, 20000},
		{"LT sooner", 10 * time.Second, sooner, CondLT, true, 5000},
		{"LT later", 10 * time.Second, later, CondLT, false, 10000},
		{"LT equal", 10 * time.Second, 10 * time.Second, CondLT, false, 10000},
		{"past deletes", noTTL, -time.Second, CondNone, true, -2},
		{"now deletes", 10 * time.Second, 0, CondNone, true, -2},
		{"past with LT deletes", 10 * time.Second, -time.Second, CondLT, true, -2},
		{"past fails NX first", 10 * time.Second, -time.Second, CondNX, false, 10000},
		{"past fails GT first", 10 * time.Second, -time.Second, CondGT, false, 10000},
		{"past on missing", -1, -time.Second, CondNone, false, -2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := openTest(t)
			switch {
			case tc.ttl == noTTL:
				s.set("k", "v")
			case tc.ttl > 0:
				s.setPX("k", "v", tc.ttl)
			}
			got, err := s.ExpireAt([]byte("k"), s.clock.ms(tc.at), tc.cond)
			if err != nil || got != tc.want {
				t.Fatalf("ExpireAt = %v, %v; want %v", got, err, tc.want)
			}
			if ttl := s.ttl("k"); ttl != tc.wantTTL {
				t.Errorf("ttl = %d; want %d", ttl, tc.wantTTL)
			}
			if tc.wantTTL != -2 {
				s.mustGet("k", "v")
			}
			s.checkCounters()
		})
	}
}

func TestTTLAndPersist(t *testing.T) {
	s := openTest(t)
	s.setPX("k", "v", 1500*time.Millisecond)
	s.set("p", "v")
	if ttl := s.ttl("k"); ttl != 1500 {
		t.Errorf("ttl = %d; want 1500", ttl)
	}
	if ttl := s.ttl("p"); ttl != -1 {
		t.Errorf("ttl without expiry = %d; want -1", ttl)
	}
	if ttl := s.ttl("nokey"); ttl != -2 {
		t.Errorf("ttl of missing key = %d; want -2", ttl)
	}
	s.clock.Advance(1500 * time.Millisecond)
	if ttl := s.ttl("k"); ttl != 0 {
		t.Errorf("ttl at the deadline = %d; want 0 (Redis keeps a key up to its deadline)", ttl)
	}
	for key, want := range map[string]bool{"k": true, "p": false, "nokey": false} {
		if got, err := s.Persist([]byte(key)); err != nil || got != want {
			t.Errorf("Persist(%q) = %v, %v; want %v", key, got, err, want)
		}
	}
	if ttl := s.ttl("k"); ttl != -1 {
		t.Errorf("ttl after Persist = %d", ttl)
	}
	s.clock.Advance(time.Hour)
	s.mustGet("k", "v")
	s.checkCounters()
}

func TestType(t *testing.T) {
	s := openTest(t)
	s.set("k", "v")
	for key, want := range map[string]string{"k": "string", "nokey": "none"} {
		if got, err := s.Type([]byte(key)); err != nil || got != want {
			t.Errorf("Type(%q) = %q, %v; want %q", key, got, err, want)
		}
	}
}

func TestKeys(t *testing.T) {
	s := openTest(t)
	for _, k := range []string{"hello", "hallo", "hxllo", "hllo", "heeeello", "h*llo", "", "other"} {
		s.set(k, "v")
	}
	s.setPX("hullo", "gone", time.Second)
	s.clock.Advance(2 * time.Second)
	cases := []struct {
		pattern string
		want    []string
	}{
		{"*", []string{"", "h*llo", "hallo", "heeeello", "hello", "hllo", "hxllo", "other"}},
		{"h?llo", []string{"h*llo", "hallo", "hello", "hxllo"}},
		{"h*llo", []string{"h*llo", "hallo", "heeeello", "hello", "hllo", "hxllo"}},
		{"h[ae]llo", []string{"hallo", "hello"}},
		{"h[^e]llo", []string{"h*llo", "hallo", "hxllo"}},
		{"h[a-b]llo", []string{"hallo"}},
		{`h\*llo`, []string{"h*llo"}},
		{"hello", []string{"hello"}},
		{"hullo", []string{}}, // expired
		{"nokey", []string{}},
	}
	for _, tc := range cases {
		got, err := s.Keys([]byte(tc.pattern))
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, k := range got {
			names = append(names, string(k))
		}
		slices.Sort(names)
		if !slices.Equal(names, tc.want) {
			t.Errorf("Keys(%q) = %q; want %q", tc.pattern, names, tc.want)
		}
	}
}

func TestRename(t *testing.T) {
	t.Run("missing source", func(t *testing.T) {
		s := openTest(t)
		if err := s.Rename([]byte("a"), []byte("b")); !errors.Is(err, ErrNoSuchKey) {
			t.Fatalf("Rename = %v; want ErrNoSuchKey", err)
		}
		if _, err := s.RenameNX([]byte("a"), []byte("b")); !errors.Is(err, ErrNoSuchKey) {
			t.Fatalf("RenameNX = %v; want ErrNoSuchKey", err)
		}
		if err := s.Rename([]byte("a"), []byte("a")); !errors.Is(err, ErrNoSuchKey) {
			t.Fatalf("Rename to itself of a missing key = %v; want ErrNoSuchKey", err)
		}
	})
	t.Run("expired source", func(t *testing.T) {
		s := openTest(t)
		s.setPX("a", "v", time.Second)
		s.clock.Advance(2 * time.Second)
		if err := s.Rename([]byte("a"), []byte("b")); !errors.Is(err, ErrNoSuchKey) {
			t.Fatalf("Rename = %v; want ErrNoSuchKey", err)
		}
		s.checkCounters()
	})
	t.Run("to itself", func(t *testing.T) {
		s := openTest(t)
		s.setPX("a", "v", time.Minute)
		if err := s.Rename([]byte("a"), []byte("a")); err != nil {
			t.Fatal(err)
		}
		s.mustGet("a", "v")
		if ttl := s.ttl("a"); ttl != 60000 {
			t.Errorf("ttl = %d", ttl)
		}
		if ok, err := s.RenameNX([]byte("a"), []byte("a")); err != nil || ok {
			t.Fatalf("RenameNX to itself = %v, %v; want false", ok, err)
		}
	})
	t.Run("moves value and TTL, replaces destination", func(t *testing.T) {
		s := openTest(t)
		s.setPX("a", "va", time.Minute)
		s.setPX("b", "vb", time.Hour)
		if err := s.Rename([]byte("a"), []byte("b")); err != nil {
			t.Fatal(err)
		}
		s.mustMissing("a")
		s.mustGet("b", "va")
		if ttl := s.ttl("b"); ttl != 60000 {
			t.Errorf("ttl = %d; want the source's 60000", ttl)
		}
		if n, _ := s.DBSize(); n != 1 {
			t.Errorf("DBSize = %d", n)
		}
		s.checkCounters()
	})
	t.Run("NX", func(t *testing.T) {
		s := openTest(t)
		s.set("a", "va")
		s.set("b", "vb")
		if ok, err := s.RenameNX([]byte("a"), []byte("b")); err != nil || ok {
			t.Fatalf("RenameNX onto an existing key = %v, %v", ok, err)
		}
		s.mustGet("a", "va")
		s.mustGet("b", "vb")
		if ok, err := s.RenameNX([]byte("a"), []byte("c")); err != nil || !ok {
			t.Fatalf("RenameNX = %v, %v", ok, err)
		}
		s.mustMissing("a")
		s.mustGet("c", "va")
		s.checkCounters()
	})
}

func TestDBSizeAndFlushAll(t *testing.T) {
	s := openTest(t)
	if _, err := s.BumpEpoch(); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b", "c"} {
		s.set(k, "v")
	}
	s.setPX("d", "v", time.Minute)
	if n, _ := s.DBSize(); n != 4 {
		t.Fatalf("DBSize = %d; want 4", n)
	}
	s.reopen()
	if n, _ := s.DBSize(); n != 4 {
		t.Fatalf("DBSize after reopen = %d; want 4", n)
	}
	if st := s.Stats(); st.KeysWithExpiry != 1 {
		t.Errorf("KeysWithExpiry = %d", st.KeysWithExpiry)
	}
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.DBSize(); n != 0 {
		t.Fatalf("DBSize after FlushAll = %d", n)
	}
	s.mustMissing("a")
	s.checkCounters()
	// LOCK-02: FLUSHALL keeps the epoch.
	if e, err := s.BumpEpoch(); err != nil || e != 2 {
		t.Fatalf("BumpEpoch after FlushAll = %d, %v; want 2", e, err)
	}
}

// TestNamespaces: no user key reaches the internal namespace, whatever its
// bytes, and the internal namespace shows through no command.
func TestNamespaces(t *testing.T) {
	s := openTest(t)
	if _, err := s.BumpEpoch(); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"\x00epoch", "epoch", "\x00", "\x02", "\x01"} {
		s.set(k, "user")
	}
	keys, err := s.Keys([]byte("*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 5 {
		t.Errorf("Keys(*) = %q; want the 5 user keys only", keys)
	}
	var scanned int
	var cursor uint64
	for {
		next, ks, err := s.Scan(cursor, nil, 100, "")
		if err != nil {
			t.Fatal(err)
		}
		scanned += len(ks)
		if cursor = next; cursor == 0 {
			break
		}
	}
	if scanned != 5 {
		t.Errorf("Scan found %d keys; want 5", scanned)
	}
	if e, err := s.BumpEpoch(); err != nil || e != 2 {
		t.Fatalf("BumpEpoch = %d, %v; want 2: a user key touched the epoch", e, err)
	}
	if s.raw(nsMeta) != 2 {
		t.Errorf("internal namespace holds %d keys; want 2 (the epoch and the format)", s.raw(nsMeta))
	}
	s.mustGet("\x00epoch", "user")
}

func TestClosed(t *testing.T) {
	s := openTest(t)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Get([]byte("k")); !errors.Is(err, ErrClosed) {
		t.Errorf("Get after Close = %v", err)
	}
	if _, err := s.Set([]byte("k"), nil, SetOptions{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Set after Close = %v", err)
	}
	if err := s.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close = %v", err)
	}
}
