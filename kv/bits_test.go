package kv

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

// SETBIT grows a string to the byte it names, up to MaxValueLen and not
// one byte further: the limit is checked before anything is allocated.
func TestSetBitGrowsWithinMaxValueLen(t *testing.T) {
	s := openTest(t, func(o *Options) { o.MaxValueLen = 1 << 10 })
	if old, err := s.SetBit([]byte("k"), 8*1024-1, true); err != nil || old != 0 {
		t.Fatalf("SetBit(last bit) = %d, %v", old, err)
	}
	if n, _ := s.StrLen([]byte("k")); n != 1024 {
		t.Fatalf("STRLEN = %d, want 1024", n)
	}
	if _, err := s.SetBit([]byte("k"), 8*1024, true); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("SetBit past MaxValueLen = %v, want ErrTooLarge", err)
	}
	if _, err := s.SetBit([]byte("k"), 1<<62, true); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("SetBit(2^62) = %v, want ErrTooLarge", err)
	}
	if bit, err := s.GetBit([]byte("k"), 1<<62); err != nil || bit != 0 {
		t.Fatalf("GetBit(2^62) = %d, %v", bit, err)
	}
	s.checkCounters()
}

// The bit commands keep the key's TTL and fence, as SETRANGE does; SETBIT
// that changes nothing writes nothing.
func TestSetBitKeepsTTLAndFence(t *testing.T) {
	s := openTest(t)
	if _, err := s.Set([]byte("k"), []byte("a"), SetOptions{Fence: 7, Expiry: Expiry{Mode: ExpiryAt, At: s.clock.ms(time.Minute)}}); err != nil {
		t.Fatal(err)
	}
	if old, err := s.SetBit([]byte("k"), 7, false); err != nil || old != 1 { // 'a' is 0x61
		t.Fatalf("SetBit = %d, %v", old, err)
	}
	s.mustGet("k", "`")
	if ttl := s.ttl("k"); ttl != 60000 {
		t.Errorf("TTL after SETBIT = %d", ttl)
	}
	if err := s.setFence("k", "x", 6); !errors.Is(err, ErrFenced) {
		t.Errorf("SET FENCE 6 after SETBIT on a key fenced at 7 = %v, want ErrFenced (LOCK-12)", err)
	}
	if old, err := s.SetBit([]byte("k"), 7, false); err != nil || old != 0 {
		t.Fatalf("SetBit again = %d, %v", old, err)
	}
	s.checkCounters()
}

// BITCOUNT and BITPOS against a plain bit-by-bit reading of random strings
// and ranges, in bytes and in bits.
func TestBitCountAndPosAgainstBitByBit(t *testing.T) {
	s := openTest(t)
	rng := rand.New(rand.NewPCG(1, 2))
	bitAt := func(v []byte, i int64) int { return int(v[i>>3]>>(7-i&7)) & 1 }
	for round := 0; round < 300; round++ {
		v := make([]byte, rng.IntN(40))
		for i := range v {
			switch rng.IntN(3) {
			case 0:
				v[i] = 0
			case 1:
				v[i] = 0xff
			default:
				v[i] = byte(rng.UintN(256))
			}
		}
		s.set("k", string(v))
		unit := int64(1)
		r := BitRange{HasStart: true, HasEnd: true, Bit: rng.IntN(2) == 0}
		if !r.Bit {
			unit = 8
		}
		total := int64(len(v)) * 8 / unit
		r.Start, r.End = rng.Int64N(2*total+3)-total-1, rng.Int64N(2*total+3)-total-1
		// The reference: clamp as Redis documents, then read bit by bit.
		lo, hi := r.Start, r.End
		if lo < 0 {
			lo += total
		}
		if hi < 0 {
			hi += total
		}
		lo, hi = max(lo, 0), min(max(hi, 0), total-1)
		first, last := lo*unit, hi*unit+unit-1
		var want int64
		for i := first; i <= last; i++ {
			want += int64(bitAt(v, i))
		}
		if r.Start < 0 && r.End < 0 && r.Start > r.End {
			want = 0
		}
		got, err := s.BitCount([]byte("k"), r)
		if err != nil || got != want {
			t.Fatalf("BITCOUNT % x %+v = %d, %v; want %d", v, r, got, err, want)
		}
		for bit := 0; bit <= 1; bit++ {
			want := int64(-1)
			for i := first; i <= last; i++ {
				if bitAt(v, i) == bit {
					want = i
					break
				}
			}
			got, err := s.BitPos([]byte("k"), bit, r)
			if err != nil || got != want {
				t.Fatalf("BITPOS % x %d %+v = %d, %v; want %d", v, bit, r, got, err, want)
			}
		}
	}
}

// BITOP reads its sources and writes its destination at one instant, in
// one batch; the destination keeps its fence and loses its TTL.
func TestBitOpDestination(t *testing.T) {
	s := openTest(t)
	s.set("a", "\x0f\x0f")
	s.set("b", "\xff")
	if _, err := s.Set([]byte("d"), []byte("old"), SetOptions{Fence: 9, Expiry: Expiry{Mode: ExpiryAt, At: s.clock.ms(time.Minute)}}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.BitOp(BitAnd, []byte("d"), bs("a", "b")); err != nil || n != 2 {
		t.Fatalf("BitOp = %d, %v", n, err)
	}
	s.mustGet("d", "\x0f\x00")
	if ttl := s.ttl("d"); ttl != -1 {
		t.Errorf("TTL after BITOP = %d, want -1", ttl)
	}
	if err := s.setFence("d", "x", 8); !errors.Is(err, ErrFenced) {
		t.Errorf("SET FENCE 8 after BITOP on a key fenced at 9 = %v, want ErrFenced (LOCK-12)", err)
	}
	if n, err := s.BitOp(BitOr, []byte("d"), bs("nokey")); err != nil || n != 0 {
		t.Fatalf("BitOp of nothing = %d, %v", n, err)
	}
	s.mustMissing("d")
	s.checkCounters()
}

// LCS refuses a table larger than MaxValueLen before allocating it.
func TestLCSBoundedByMaxValueLen(t *testing.T) {
	s := openTest(t, func(o *Options) { o.MaxValueLen = 4 * 101 * 101 })
	s.set("a", string(make([]byte, 100)))
	s.set("b", string(make([]byte, 100)))
	if res, err := s.LCS([]byte("a"), []byte("b"), false, 0); err != nil || res.Len != 100 {
		t.Fatalf("LCS at the limit = %d, %v", res.Len, err)
	}
	s.set("b", string(make([]byte, 101)))
	if _, err := s.LCS([]byte("a"), []byte("b"), false, 0); !errors.Is(err, ErrLCSTooLarge) {
		t.Fatalf("LCS past the limit = %v, want ErrLCSTooLarge", err)
	}
}
