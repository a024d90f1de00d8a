package kv

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TestConcurrentIncr: read-modify-write commands are atomic per key.
func TestConcurrentIncr(t *testing.T) {
	s := openTest(t)
	const workers, each = 16, 200
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				if _, err := s.IncrBy([]byte("n"), 1); err != nil {
					t.Error(err)
					return
				}
				if _, err := s.Append([]byte("log"), []byte("x")); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	s.mustGet("n", strconv.Itoa(workers*each))
	if n, _ := s.StrLen([]byte("log")); n != workers*each {
		t.Errorf("StrLen = %d; want %d", n, workers*each)
	}
}

// TestConcurrentMixed: multi-key commands over overlapping keys, expiry and
// the sweeper, all at once, neither deadlock nor leave the counters wrong.
func TestConcurrentMixed(t *testing.T) {
	s := openTest(t, func(o *Options) { o.SweepInterval = time.Millisecond })
	key := func(i int) []byte { return fmt.Appendf(nil, "k%d", i%40) }
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 300 {
				a, b, c := key(w*7+i), key(i*3+w), key(i+w*11)
				var err error
				switch i % 8 {
				case 0:
					err = s.MSet([][]byte{a, []byte("1"), b, []byte("2"), c, []byte("3")})
				case 1:
					_, err = s.Del([][]byte{c, a})
				case 2:
					err = s.Rename(a, b)
					if err == ErrNoSuchKey {
						err = nil
					}
				case 3:
					_, err = s.RenameNX(b, c)
					if err == ErrNoSuchKey {
						err = nil
					}
				case 4:
					_, err = s.Set(a, []byte("v"), SetOptions{Expiry: Expiry{Mode: ExpiryAt, At: s.clock.ms(time.Millisecond)}})
				case 5:
					_, err = s.MSetNX([][]byte{c, []byte("x"), b, []byte("y")})
				case 6:
					_, err = s.ExpireAt(b, s.clock.ms(2*time.Millisecond), CondNone)
				case 7:
					s.clock.Advance(time.Millisecond)
					_, err = s.MGet([][]byte{a, b, c})
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	// Finish what the sweeper has left, then the counters kept while all
	// that ran must match the disk, and what Open counts.
	if err := s.sweep(0); err != nil {
		t.Fatal(err)
	}
	s.checkCounters()
	before := s.Stats()
	s.reopen()
	if after := s.Stats(); after.Keys != before.Keys || after.KeysWithExpiry != before.KeysWithExpiry {
		t.Errorf("counters kept %+v; counted at Open %+v", before, after)
	}
}

// TestConcurrentCountersLive: the counters a running store keeps match disk.
func TestConcurrentCountersLive(t *testing.T) {
	s := openTest(t)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 300 {
				k := fmt.Appendf(nil, "k%d", (w+i)%25)
				var err error
				switch i % 5 {
				case 0:
					_, err = s.Set(k, k, SetOptions{Expiry: Expiry{Mode: ExpiryAt, At: s.clock.ms(time.Duration(i%3) * time.Millisecond)}})
				case 1:
					_, err = s.Del([][]byte{k})
				case 2:
					_, err = s.Append(k, k)
				case 3:
					_, err = s.Persist(k)
				case 4:
					s.clock.Advance(time.Millisecond)
					_, _, err = s.Get(k)
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	s.checkCounters()
}
