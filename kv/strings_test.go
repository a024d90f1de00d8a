package kv

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"testing"
	"time"
)

func TestSet(t *testing.T) {
	const old = "old"
	type state int
	const (
		missing state = iota
		plain         // "old", no TTL
		withTTL       // "old", 5s TTL
		expired       // "old", TTL already passed
	)
	at := func(d time.Duration) Expiry { return Expiry{Mode: ExpiryAt, At: t0.Add(d).UnixMilli()} }
	cases := []struct {
		name      string
		before    state
		opts      SetOptions
		want      SetResult
		wantValue string // "" with wantGone
		wantGone  bool
		wantTTL   int64
	}{
		{"plain on missing", missing, SetOptions{}, SetResult{Written: true}, "new", false, -1},
		{"plain overwrites", plain, SetOptions{}, SetResult{Written: true}, "new", false, -1},
		{"plain clears TTL", withTTL, SetOptions{}, SetResult{Written: true}, "new", false, -1},
		{"KEEPTTL keeps TTL", withTTL, SetOptions{Expiry: Expiry{Mode: ExpiryKeep}}, SetResult{Written: true}, "new", false, 5000},
		{"KEEPTTL on missing", missing, SetOptions{Expiry: Expiry{Mode: ExpiryKeep}}, SetResult{Written: true}, "new", false, -1},
		{"KEEPTTL on expired", expired, SetOptions{Expiry: Expiry{Mode: ExpiryKeep}}, SetResult{Written: true}, "new", false, -1},
		{"NX on missing", missing, SetOptions{NX: true}, SetResult{Written: true}, "new", false, -1},
		{"NX on existing", plain, SetOptions{NX: true}, SetResult{}, old, false, -1},
		{"NX on expired", expired, SetOptions{NX: true}, SetResult{Written: true}, "new", false, -1},
		{"XX on missing", missing, SetOptions{XX: true}, SetResult{}, "", true, -2},
		{"XX on existing", withTTL, SetOptions{XX: true}, SetResult{Written: true}, "new", false, -1},
		{"XX on expired", expired, SetOptions{XX: true}, SetResult{}, "", true, -2},
		{"GET on missing", missing, SetOptions{Get: true}, SetResult{Written: true}, "new", false, -1},
		{"GET on existing", plain, SetOptions{Get: true}, SetResult{Written: true, Old: []byte(old), OldExists: true}, "new", false, -1},
		{"GET on expired", expired, SetOptions{Get: true}, SetResult{Written: true}, "new", false, -1},
		{"NX GET on existing", plain, SetOptions{NX: true, Get: true}, SetResult{Old: []byte(old), OldExists: true}, old, false, -1},
		{"NX GET on missing", missing, SetOptions{NX: true, Get: true}, SetResult{Written: true}, "new", false, -1},
		{"XX GET on missing", missing, SetOptions{XX: true, Get: true}, SetResult{}, "", true, -2},
		{"XX GET on existing", plain, SetOptions{XX: true, Get: true}, SetResult{Written: true, Old: []byte(old), OldExists: true}, "new", false, -1},
		{"NX and XX never write", missing, SetOptions{NX: true, XX: true}, SetResult{}, "", true, -2},
		{"PX sets TTL", plain, SetOptions{Expiry: at(10 * time.Second)}, SetResult{Written: true}, "new", false, 10000},
		{"PXAT now deletes", plain, SetOptions{Expiry: at(0)}, SetResult{Written: true}, "", true, -2},
		{"PXAT past deletes", withTTL, SetOptions{Expiry: at(-time.Second), Get: true}, SetResult{Written: true, Old: []byte(old), OldExists: true}, "", true, -2},
		{"PXAT past on missing", missing, SetOptions{Expiry: at(-time.Second)}, SetResult{Written: true}, "", true, -2},
		{"PERSIST mode clears TTL", withTTL, SetOptions{Expiry: Expiry{Mode: ExpiryPersist}}, SetResult{Written: true}, "new", false, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := openTest(t)
			switch tc.before {
			case plain:
				s.set("k", old)
			case withTTL:
				s.setPX("k", old, 5*time.Second)
			case expired:
				s.clock.Advance(-time.Second)
				s.setPX("k", old, 500*time.Millisecond)
				s.clock.Advance(time.Second)
			}
			got, err := s.Set([]byte("k"), []byte("new"), tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if got.Written != tc.want.Written || got.OldExists != tc.want.OldExists || !bytes.Equal(got.Old, tc.want.Old) {
				t.Errorf("Set = %+v; want %+v", got, tc.want)
			}
			if tc.wantGone {
				s.mustMissing("k")
			} else {
				s.mustGet("k", tc.wantValue)
			}
			if ttl := s.ttl("k"); ttl != tc.wantTTL {
				t.Errorf("ttl = %d; want %d", ttl, tc.wantTTL)
			}
			s.checkCounters()
		})
	}
}

func TestSetEmptyValue(t *testing.T) {
	s := openTest(t)
	s.set("k", "")
	v, ok, err := s.Get([]byte("k"))
	if err != nil || !ok || v == nil || len(v) != 0 {
		t.Fatalf("Get = %q (nil %v), %v, %v; want empty, non-nil, true", v, v == nil, ok, err)
	}
	if n, _ := s.StrLen([]byte("k")); n != 0 {
		t.Errorf("StrLen = %d", n)
	}
	if typ, _ := s.Type([]byte("k")); typ != "string" {
		t.Errorf("Type = %q", typ)
	}
}

func TestGetDel(t *testing.T) {
	s := openTest(t)
	s.set("k", "v")
	v, ok, err := s.GetDel([]byte("k"))
	if err != nil || !ok || string(v) != "v" {
		t.Fatalf("GetDel = %q, %v, %v", v, ok, err)
	}
	s.mustMissing("k")
	v, ok, err = s.GetDel([]byte("k"))
	if err != nil || ok || v != nil {
		t.Fatalf("GetDel on missing = %q, %v, %v", v, ok, err)
	}
	s.checkCounters()
}

func TestGetEx(t *testing.T) {
	at := func(d time.Duration) Expiry { return Expiry{Mode: ExpiryAt, At: t0.Add(d).UnixMilli()} }
	cases := []struct {
		name    string
		ttl     time.Duration // 0: none
		e       Expiry
		wantTTL int64
	}{
		{"no option leaves TTL", 5 * time.Second, Expiry{}, 5000},
		{"no option leaves no TTL", 0, Expiry{}, -1},
		{"KEEP leaves TTL", 5 * time.Second, Expiry{Mode: ExpiryKeep}, 5000},
		{"PX sets TTL", 0, at(7 * time.Second), 7000},
		{"PX replaces TTL", 5 * time.Second, at(7 * time.Second), 7000},
		{"PERSIST clears TTL", 5 * time.Second, Expiry{Mode: ExpiryPersist}, -1},
		{"PXAT past deletes", 5 * time.Second, at(-time.Millisecond), -2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := openTest(t)
			if tc.ttl != 0 {
				s.setPX("k", "v", tc.ttl)
			} else {
				s.set("k", "v")
			}
			v, ok, err := s.GetEx([]byte("k"), tc.e)
			if err != nil || !ok || string(v) != "v" {
				t.Fatalf("GetEx = %q, %v, %v; want the value", v, ok, err)
			}
			if ttl := s.ttl("k"); ttl != tc.wantTTL {
				t.Errorf("ttl = %d; want %d", ttl, tc.wantTTL)
			}
			s.checkCounters()
		})
	}
	t.Run("missing", func(t *testing.T) {
		s := openTest(t)
		v, ok, err := s.GetEx([]byte("k"), at(time.Second))
		if err != nil || ok || v != nil {
			t.Fatalf("GetEx = %q, %v, %v", v, ok, err)
		}
		s.mustMissing("k")
	})
}

func TestMGetMSet(t *testing.T) {
	s := openTest(t)
	if err := s.MSet(bs("a", "1", "b", "2", "a", "3", "e", "")); err != nil {
		t.Fatal(err)
	}
	got, err := s.MGet(bs("a", "b", "c", "e", "a"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"3", "2", "<nil>", "", "3"}
	for i, v := range got {
		s := string(v)
		if v == nil {
			s = "<nil>"
		}
		if s != want[i] {
			t.Errorf("MGet[%d] = %q; want %q", i, s, want[i])
		}
	}
	if n, _ := s.DBSize(); n != 3 {
		t.Errorf("DBSize = %d; want 3", n)
	}
	if err := s.MSet(bs("a")); err == nil {
		t.Error("MSet with an odd argument count succeeded")
	}
	// MSET clears TTLs, like SET.
	s.setPX("t", "x", time.Minute)
	if err := s.MSet(bs("t", "y")); err != nil {
		t.Fatal(err)
	}
	if ttl := s.ttl("t"); ttl != -1 {
		t.Errorf("ttl after MSET = %d; want -1", ttl)
	}
	s.checkCounters()
}

func TestMSetNX(t *testing.T) {
	s := openTest(t)
	ok, err := s.MSetNX(bs("a", "1", "b", "2"))
	if err != nil || !ok {
		t.Fatalf("MSetNX on missing keys = %v, %v", ok, err)
	}
	ok, err = s.MSetNX(bs("c", "3", "b", "x"))
	if err != nil || ok {
		t.Fatalf("MSetNX with one existing key = %v, %v", ok, err)
	}
	s.mustMissing("c")
	s.mustGet("b", "2")
	// An expired key counts as missing.
	s.setPX("d", "old", time.Second)
	s.clock.Advance(2 * time.Second)
	ok, err = s.MSetNX(bs("d", "new", "e", "5", "d", "newer"))
	if err != nil || !ok {
		t.Fatalf("MSetNX over an expired key = %v, %v", ok, err)
	}
	s.mustGet("d", "newer")
	s.checkCounters()
}

func TestIncrBy(t *testing.T) {
	const missing = "\x00missing"
	cases := []struct {
		value   string
		delta   int64
		want    int64
		wantErr error
	}{
		{missing, 1, 1, nil},
		{missing, -5, -5, nil},
		{"0", 1, 1, nil},
		{"10", -3, 7, nil},
		{"-10", 3, -7, nil},
		{"9223372036854775806", 1, math.MaxInt64, nil},
		{"9223372036854775807", 1, 0, ErrOverflow},
		{"-9223372036854775807", -1, math.MinInt64, nil},
		{"-9223372036854775808", -1, 0, ErrOverflow},
		{"-9223372036854775808", math.MaxInt64, -1, nil},
		{"9223372036854775807", math.MinInt64, -1, nil},
		{"9223372036854775808", 1, 0, ErrNotInteger},
		{"-9223372036854775809", 1, 0, ErrNotInteger},
		{"", 1, 0, ErrNotInteger},
		{"-0", 1, 0, ErrNotInteger},
		{"00", 1, 0, ErrNotInteger},
		{"01", 1, 0, ErrNotInteger},
		{"+1", 1, 0, ErrNotInteger},
		{" 1", 1, 0, ErrNotInteger},
		{"1 ", 1, 0, ErrNotInteger},
		{"-", 1, 0, ErrNotInteger},
		{"1.0", 1, 0, ErrNotInteger},
		{"abc", 1, 0, ErrNotInteger},
		{"1e3", 1, 0, ErrNotInteger},
	}
	for _, tc := range cases {
		t.Run(strconv.Quote(tc.value), func(t *testing.T) {
			s := openTest(t)
			if tc.value != missing {
				s.set("k", tc.value)
			}
			got, err := s.IncrBy([]byte("k"), tc.delta)
			if !errors.Is(err, tc.wantErr) || (err == nil && got != tc.want) {
				t.Fatalf("IncrBy(%d) = %d, %v; want %d, %v", tc.delta, got, err, tc.want, tc.wantErr)
			}
			if tc.wantErr != nil {
				if tc.value == missing {
					s.mustMissing("k")
				} else {
					s.mustGet("k", tc.value)
				}
				return
			}
			s.mustGet("k", strconv.FormatInt(tc.want, 10))
		})
	}
	t.Run("keeps TTL", func(t *testing.T) {
		s := openTest(t)
		s.setPX("k", "5", 10*time.Second)
		if n, err := s.IncrBy([]byte("k"), 1); err != nil || n != 6 {
			t.Fatalf("IncrBy = %d, %v", n, err)
		}
		if ttl := s.ttl("k"); ttl != 10000 {
			t.Errorf("ttl = %d", ttl)
		}
	})
}

func TestIncrByFloat(t *testing.T) {
	const missing = "\x00missing"
	cases := []struct {
		value   string
		delta   float64
		want    string
		wantErr error
	}{
		{"10.50", 0.1, "10.6", nil}, // Redis docs
		{"10.6", -5, "5.6", nil},
		{"5.0e3", 2.0e2, "5200", nil},
		{missing, 1.5, "1.5", nil},
		{"3", 0, "3", nil},
		{"-1", 1, "0", nil},
		{"0", math.Copysign(0, -1), "0", nil},
		{"1e25", 0, "10000000000000000000000000", nil}, // no exponent
		{"0x1p3", 1, "9", nil},
		{"+1.5", 1, "2.5", nil},
		{".5", 0, "0.5", nil},
		{"1", 1e-5, "1.00001", nil},
		{"abc", 1, "", ErrNotFloat},
		{"", 1, "", ErrNotFloat},
		{" 1", 1, "", ErrNotFloat},
		{"1 ", 1, "", ErrNotFloat},
		{"1_0", 1, "", ErrNotFloat},
		{"nan", 1, "", ErrNotFloat},
		{"1e400", 1, "", ErrNotFloat},
		{"inf", 1, "", ErrNaN},
		{"1", math.Inf(1), "", ErrNaN},
		{"1", math.NaN(), "", ErrNaN},
		{"1.7976931348623157e308", 1.7976931348623157e308, "", ErrNaN},
	}
	for _, tc := range cases {
		t.Run(strconv.Quote(tc.value), func(t *testing.T) {
			s := openTest(t)
			if tc.value != missing {
				s.set("k", tc.value)
			}
			got, err := s.IncrByFloat([]byte("k"), tc.delta)
			if !errors.Is(err, tc.wantErr) || string(got) != tc.want {
				t.Fatalf("IncrByFloat(%v) = %q, %v; want %q, %v", tc.delta, got, err, tc.want, tc.wantErr)
			}
			if err == nil {
				s.mustGet("k", tc.want)
			} else if tc.value != missing {
				s.mustGet("k", tc.value)
			}
		})
	}
}

func TestAppend(t *testing.T) {
	s := openTest(t, func(o *Options) { o.MaxValueLen = 10 })
	n, err := s.Append([]byte("k"), []byte("Hello"))
	if err != nil || n != 5 {
		t.Fatalf("Append on missing = %d, %v", n, err)
	}
	s.setPX("k", "Hello", time.Minute)
	n, err = s.Append([]byte("k"), []byte(" Wor"))
	if err != nil || n != 9 {
		t.Fatalf("Append = %d, %v", n, err)
	}
	s.mustGet("k", "Hello Wor")
	if ttl := s.ttl("k"); ttl != 60000 {
		t.Errorf("Append dropped the TTL: ttl = %d", ttl)
	}
	n, err = s.Append([]byte("k"), []byte("l"))
	if err != nil || n != 10 {
		t.Fatalf("Append to exactly MaxValueLen = %d, %v", n, err)
	}
	if _, err = s.Append([]byte("k"), []byte("d")); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Append past MaxValueLen: err = %v; want ErrTooLarge", err)
	}
	s.mustGet("k", "Hello Worl")
	if n, err := s.Append([]byte("k"), nil); err != nil || n != 10 {
		t.Fatalf("Append of nothing = %d, %v", n, err)
	}
}

func TestStrLen(t *testing.T) {
	s := openTest(t)
	s.set("k", "Hello world")
	for key, want := range map[string]int64{"k": 11, "nokey": 0} {
		if n, err := s.StrLen([]byte(key)); err != nil || n != want {
			t.Errorf("StrLen(%q) = %d, %v; want %d", key, n, err, want)
		}
	}
}

func TestGetRange(t *testing.T) {
	s := openTest(t)
	s.set("k", "This is a string")
	s.set("empty", "")
	cases := []struct {
		key        string
		start, end int64
		want       string
	}{
		{"k", 0, 3, "This"}, // Redis docs
		{"k", -3, -1, "ing"},
		{"k", 0, -1, "This is a string"},
		{"k", 10, 100, "string"},
		{"k", 5, 3, ""},
		{"k", -1, -5, ""},   // both negative, start > end
		{"k", 0, -100, "T"}, // Redis 7: end clamps to 0
		{"k", -100, -50, "T"},
		{"k", -100, 2, "Thi"},
		{"k", 16, 20, ""},
		{"k", 15, 15, "g"},
		{"k", math.MinInt64, math.MaxInt64, "This is a string"},
		{"k", math.MaxInt64, math.MaxInt64, ""},
		{"empty", 0, -1, ""},
		{"nokey", 0, -1, ""},
	}
	for _, tc := range cases {
		got, err := s.GetRange([]byte(tc.key), tc.start, tc.end)
		if err != nil || got == nil || string(got) != tc.want {
			t.Errorf("GetRange(%q, %d, %d) = %q (nil %v), %v; want %q", tc.key, tc.start, tc.end, got, got == nil, err, tc.want)
		}
	}
}

func TestSetRange(t *testing.T) {
	const missing = "\x00missing"
	cases := []struct {
		name      string
		before    string
		offset    int64
		value     string
		wantLen   int64
		wantValue string // missing: no key
		wantErr   error
	}{
		{"overwrite", "Hello World", 6, "Redis", 11, "Hello Redis", nil}, // Redis docs
		{"zero-pads a missing key", missing, 6, "Redis", 11, "\x00\x00\x00\x00\x00\x00Redis", nil},
		{"grows", "Hello", 3, "p me!", 8, "Help me!", nil},
		{"pads past the end", "ab", 4, "c", 5, "ab\x00\x00c", nil},
		{"empty value on missing creates nothing", missing, 0, "", 0, missing, nil},
		{"empty value, huge offset, on missing", missing, 1 << 40, "", 0, missing, nil},
		{"empty value on existing returns length", "Hello", 100, "", 5, "Hello", nil},
		{"negative offset", "Hello", -1, "x", 0, "Hello", ErrOffsetOutOfRange},
		{"negative offset on missing", missing, -1, "x", 0, missing, ErrOffsetOutOfRange},
		{"end at MaxValueLen", missing, 95, "12345", 100, "", nil},
		{"end past MaxValueLen", missing, 96, "12345", 0, missing, ErrTooLarge},
		{"huge offset", "Hello", math.MaxInt64, "x", 0, "Hello", ErrTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := openTest(t, func(o *Options) { o.MaxValueLen = 100 })
			if tc.before != missing {
				s.set("k", tc.before)
			}
			n, err := s.SetRange([]byte("k"), tc.offset, []byte(tc.value))
			if !errors.Is(err, tc.wantErr) || n != tc.wantLen {
				t.Fatalf("SetRange = %d, %v; want %d, %v", n, err, tc.wantLen, tc.wantErr)
			}
			switch {
			case tc.wantValue == missing:
				s.mustMissing("k")
			case tc.wantValue != "":
				s.mustGet("k", tc.wantValue)
			}
			s.checkCounters()
		})
	}
	t.Run("keeps TTL", func(t *testing.T) {
		s := openTest(t)
		s.setPX("k", "Hello", time.Minute)
		if _, err := s.SetRange([]byte("k"), 0, []byte("J")); err != nil {
			t.Fatal(err)
		}
		s.mustGet("k", "Jello")
		if ttl := s.ttl("k"); ttl != 60000 {
			t.Errorf("ttl = %d", ttl)
		}
	})
}
