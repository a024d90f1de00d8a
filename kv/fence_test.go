package kv

import (
	"errors"
	"testing"
	"time"
)

func (ts *testStore) setFence(key, value string, fence uint64) error {
	_, err := ts.Set([]byte(key), []byte(value), SetOptions{Fence: fence})
	return err
}

// LOCK-12: a key written with SET … FENCE f refuses any later SET … FENCE g
// with g < f.
func TestFenceRefusesOlder_LOCK12(t *testing.T) {
	s := openTest(t)
	if err := s.setFence("k", "by 10", 10); err != nil {
		t.Fatal(err)
	}
	if err := s.setFence("k", "by 9", 9); !errors.Is(err, ErrFenced) {
		t.Fatalf("SET FENCE 9 after 10 = %v; want ErrFenced", err)
	}
	s.mustGet("k", "by 10")
	// Refused even with NX/XX/GET: nothing is written, the fence speaks first.
	for _, o := range []SetOptions{{Fence: 9, NX: true}, {Fence: 9, XX: true}, {Fence: 9, Get: true}} {
		if _, err := s.Set([]byte("k"), []byte("x"), o); !errors.Is(err, ErrFenced) {
			t.Errorf("Set(%+v) = %v; want ErrFenced", o, err)
		}
	}
	if err := s.setFence("k", "by 10 again", 10); err != nil {
		t.Fatalf("equal fence refused: %v", err)
	}
	s.mustGet("k", "by 10 again")
	if err := s.setFence("k", "by 11", 11); err != nil {
		t.Fatal(err)
	}
	if err := s.setFence("k", "by 10", 10); !errors.Is(err, ErrFenced) {
		t.Fatalf("SET FENCE 10 after 11 = %v; want ErrFenced", err)
	}
	s.mustGet("k", "by 11")
}

// LOCK-12: a plain SET (and the other writes that are not SET … FENCE) keep
// the remembered fence.
func TestFenceKeptByPlainWrites_LOCK12(t *testing.T) {
	writes := map[string]func(s *testStore) error{
		"SET": func(s *testStore) error { s.set("k", "plain"); return nil },
		"SET KEEPTTL": func(s *testStore) error {
			_, err := s.Set([]byte("k"), []byte("x"), SetOptions{Expiry: Expiry{Mode: ExpiryKeep}})
			return err
		},
		"MSET":     func(s *testStore) error { return s.MSet(bs("k", "m", "k", "m2")) },
		"APPEND":   func(s *testStore) error { _, err := s.Append([]byte("k"), []byte("x")); return err },
		"SETRANGE": func(s *testStore) error { _, err := s.SetRange([]byte("k"), 0, []byte("x")); return err },
		"EXPIRE": func(s *testStore) error {
			_, err := s.ExpireAt([]byte("k"), s.clock.ms(time.Hour), CondNone)
			return err
		},
		"PERSIST": func(s *testStore) error { _, err := s.Persist([]byte("k")); return err },
		"GETEX": func(s *testStore) error {
			_, _, err := s.GetEx([]byte("k"), Expiry{Mode: ExpiryAt, At: s.clock.ms(time.Hour)})
			return err
		},
	}
	for name, write := range writes {
		t.Run(name, func(t *testing.T) {
			s := openTest(t)
			if err := s.setFence("k", "1", 10); err != nil {
				t.Fatal(err)
			}
			if err := write(s); err != nil {
				t.Fatal(err)
			}
			if err := s.setFence("k", "late", 9); !errors.Is(err, ErrFenced) {
				t.Fatalf("after %s, SET FENCE 9 = %v; want ErrFenced", name, err)
			}
		})
	}
	t.Run("INCR", func(t *testing.T) {
		s := openTest(t)
		if err := s.setFence("k", "1", 10); err != nil {
			t.Fatal(err)
		}
		if _, err := s.IncrBy([]byte("k"), 1); err != nil {
			t.Fatal(err)
		}
		if err := s.setFence("k", "late", 9); !errors.Is(err, ErrFenced) {
			t.Fatalf("after INCR, SET FENCE 9 = %v; want ErrFenced", err)
		}
	})
}

// LOCK-12: DEL, and expiry, forget the fence with the key.
func TestFenceForgottenWithKey_LOCK12(t *testing.T) {
	s := openTest(t)
	if err := s.setFence("k", "1", 10); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Del(bs("k")); err != nil {
		t.Fatal(err)
	}
	if err := s.setFence("k", "after del", 9); err != nil {
		t.Fatalf("SET FENCE 9 after DEL = %v; want written", err)
	}
	if _, err := s.Set([]byte("k"), []byte("v"), SetOptions{Fence: 20, Expiry: Expiry{Mode: ExpiryAt, At: s.clock.ms(time.Second)}}); err != nil {
		t.Fatal(err)
	}
	s.clock.Advance(2 * time.Second)
	if err := s.setFence("k", "after expiry", 5); err != nil {
		t.Fatalf("SET FENCE 5 after expiry = %v; want written", err)
	}
	s.mustGet("k", "after expiry")
}

// LOCK-12: the fence is on disk: it survives Close and Open.
func TestFenceSurvivesReopen_LOCK12(t *testing.T) {
	s := openTest(t)
	if err := s.setFence("k", "1", 1<<40); err != nil {
		t.Fatal(err)
	}
	s.reopen()
	if err := s.setFence("k", "late", 1<<40-1); !errors.Is(err, ErrFenced) {
		t.Fatalf("after reopen, older fence = %v; want ErrFenced", err)
	}
	s.mustGet("k", "1")
}

// LOCK-12: RENAME moves the fence with the value; the destination's old
// fence goes with its old value.
func TestFenceMovesWithRename_LOCK12(t *testing.T) {
	s := openTest(t)
	if err := s.setFence("src", "v", 10); err != nil {
		t.Fatal(err)
	}
	if err := s.setFence("dst", "old", 50); err != nil {
		t.Fatal(err)
	}
	if err := s.Rename([]byte("src"), []byte("dst")); err != nil {
		t.Fatal(err)
	}
	if err := s.setFence("dst", "late", 9); !errors.Is(err, ErrFenced) {
		t.Fatalf("SET FENCE 9 on the renamed key = %v; want ErrFenced", err)
	}
	if err := s.setFence("dst", "ok", 20); err != nil {
		t.Fatalf("SET FENCE 20 = %v: the destination's old fence 50 should be gone", err)
	}
	if err := s.setFence("src", "new", 1); err != nil {
		t.Fatalf("SET FENCE 1 on the renamed-away key = %v", err)
	}
}
