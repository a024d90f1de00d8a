package dump

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// redisPayloads are the payloads of testdata/redis-7.0.15.txt, by name.
func redisPayloads(t testing.TB) map[string][]byte {
	t.Helper()
	f, err := os.Open("testdata/redis-7.0.15.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]byte{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		fields := strings.Fields(line) // name, Redis's encoding, hex
		p, err := hex.DecodeString(fields[2])
		if err != nil {
			t.Fatal(err)
		}
		out[fields[0]] = p
	}
	return out
}

func strs(ss ...string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

// TestDecodeRedisPayloads decodes what redis-server 7.0.15 answered to
// DUMP for each encoding it keeps (SPEC §13): integer and LZF strings,
// quicklists of listpacks, intsets, listpacks and hash tables.
func TestDecodeRedisPayloads(t *testing.T) {
	z := strings.Repeat
	want := map[string]Value{
		"str-embstr": {Kind: String, Str: []byte("hello")},
		"str-int8":   {Kind: String, Str: []byte("-100")},
		"str-int16":  {Kind: String, Str: []byte("30000")},
		"str-int32":  {Kind: String, Str: []byte("-2000000000")},
		"str-int64":  {Kind: String, Str: []byte("9223372036854775807")},
		"str-lzf":    {Kind: String, Str: []byte(z("tenure", 40))},
		"list-listpack": {Kind: List, Elems: strs("a", "1", "-1", "127", "128", "-4096", "4095", "4096", "32767", "-32768",
			"8388607", "2147483647", "-2147483648", "9223372036854775807", z("x", 70), z("y", 5000))},
		"set-intset":     {Kind: Set, Elems: strs("-9000000000", "-3", "2", "5", "70000")},
		"hash-small":     {Kind: Hash, Elems: strs("f1", "v1", "n", "12", "neg", "-7")},
		"zset-listpack":  {Kind: ZSet, Elems: strs("c", "a", "b", "d"), Scores: []float64{math.Inf(-1), 1, 2.5, 1e300}},
		"hash-longvalue": {Kind: Hash},
		"hash-hashtable": {Kind: Hash},
		"set-hashtable":  {Kind: Set},
		"zset-skiplist":  {Kind: ZSet},
	}
	for name, p := range redisPayloads(t) {
		t.Run(name, func(t *testing.T) {
			got, err := Decode(p)
			if err != nil {
				t.Fatal(err)
			}
			w, ok := want[name]
			if !ok {
				t.Fatalf("no expectation for %s", name)
			}
			if w.Elems == nil && w.Str == nil { // a hash table: Redis's order is its own
				got = sorted(got)
				w = map[string]Value{
					"hash-longvalue": {Kind: Hash, Elems: strs("big", z("z", 100), "f1", "v1", "n", "12")},
					"hash-hashtable": {Kind: Hash, Elems: strs("a", "1", "b", "2", "c", "3", "d", "4", "e", "5", "f", "6")},
					"set-hashtable":  {Kind: Set, Elems: strs("a", "b", "c", "d", "e", "f", "g", "h", "i", "j")},
					"zset-skiplist": {Kind: ZSet, Elems: strs("a", "b", "c", "d", "e", "f", "g"),
						Scores: []float64{1, 2, 3, 4, 5, -0.5, math.Inf(1)}},
				}[name]
			}
			if !reflect.DeepEqual(got, w) {
				t.Fatalf("decoded %s:\n got %s\nwant %s", name, show(got), show(w))
			}
		})
	}
}

// sorted is v with its members (a hash's pairs, a zset's scores with
// them) in byte order.
func sorted(v Value) Value {
	step := 1
	if v.Kind == Hash {
		step = 2
	}
	type row struct {
		m     []byte
		rest  [][]byte
		score float64
	}
	var rows []row
	for i := 0; i < len(v.Elems); i += step {
		r := row{m: v.Elems[i], rest: v.Elems[i+1 : i+step]}
		if v.Scores != nil {
			r.score = v.Scores[i]
		}
		rows = append(rows, r)
	}
	for i := range rows { // few rows: insertion sort
		for j := i; j > 0 && bytes.Compare(rows[j].m, rows[j-1].m) < 0; j-- {
			rows[j], rows[j-1] = rows[j-1], rows[j]
		}
	}
	out := Value{Kind: v.Kind}
	for _, r := range rows {
		out.Elems = append(append(out.Elems, r.m), r.rest...)
		if v.Scores != nil {
			out.Scores = append(out.Scores, r.score)
		}
	}
	return out
}

func show(v Value) string {
	var b strings.Builder
	fmt.Fprintf(&b, "kind %d str %.40q elems [", v.Kind, v.Str)
	for _, e := range v.Elems {
		fmt.Fprintf(&b, "%.20q ", e)
	}
	fmt.Fprintf(&b, "] scores %v", v.Scores)
	return b.String()
}

// TestChecksumIsRedisCRC64: the check value of Redis's crc64.c.
func TestChecksumIsRedisCRC64(t *testing.T) {
	if got := checksum([]byte("123456789")); got != 0xe9c6d914c4b8d9ca {
		t.Fatalf("crc64(123456789) = %#x, want 0xe9c6d914c4b8d9ca", got)
	}
}

// withFooter makes body a payload of RDB version ver.
func withFooter(body []byte, ver uint16) []byte {
	p := binary.LittleEndian.AppendUint16(bytes.Clone(body), ver)
	return binary.LittleEndian.AppendUint64(p, checksum(p))
}

// TestDecodeOlderEncodings: what Redis 6.2 and before wrote, and what
// 7.2 writes, built by hand from the formats' documentation (ziplist.c,
// listpack.md, rdb.h): ziplists in every entry encoding, quicklists of
// ziplists, RDB_TYPE_ZSET's scores as text, a PLAIN quicklist node, and
// 7.2's set listpacks.
func TestDecodeOlderEncodings(t *testing.T) {
	// ziplist.c's own example: the entries "2" and "5".
	example := []byte{0x0f, 0, 0, 0, 0x0c, 0, 0, 0, 0x02, 0, 0x00, 0xf3, 0x02, 0xf6, 0xff}
	zl := zipBuild(t, []any{"a", int64(12), int64(0), int64(-128), int64(127), int64(-32768), int64(8388607), int64(-8388608),
		int64(2147483647), int64(math.MinInt64), strings.Repeat("s", 63), strings.Repeat("m", 300), strings.Repeat("l", 20000)})
	zlElems := strs("a", "12", "0", "-128", "127", "-32768", "8388607", "-8388608", "2147483647", "-9223372036854775808",
		strings.Repeat("s", 63), strings.Repeat("m", 300), strings.Repeat("l", 20000))
	lp := lpBuild([]any{"x", int64(5), "y", int64(-4096)})
	// A quicklist 2 of one PLAIN node (one element) and one packed.
	plain := rdbStr([]byte{typeListQuick2, 2, containerPlain}, []byte("big"))
	plain = rdbStr(append(plain, containerPacked), lp)
	cases := []struct {
		name string
		body []byte
		want Value
	}{
		{"ziplist.c's example", rdbStr([]byte{typeListZiplist}, example), Value{Kind: List, Elems: strs("2", "5")}},
		{"list ziplist", rdbStr([]byte{typeListZiplist}, zl), Value{Kind: List, Elems: zlElems}},
		{"quicklist of ziplists", rdbStr(rdbStr([]byte{typeListQuicklist, 2}, zl), zipBuild(t, []any{"end"})),
			Value{Kind: List, Elems: append(append([][]byte{}, zlElems...), []byte("end"))}},
		{"hash ziplist", rdbStr([]byte{typeHashZiplist}, zipBuild(t, []any{"f", "v", "n", int64(7)})), Value{Kind: Hash, Elems: strs("f", "v", "n", "7")}},
		{"zset ziplist", rdbStr([]byte{typeZSetZiplist}, zipBuild(t, []any{"a", "1.5", "b", int64(-3)})),
			Value{Kind: ZSet, Elems: strs("a", "b"), Scores: []float64{1.5, -3}}},
		{"zset with text scores", append(rdbStr(append(rdbStr([]byte{typeZSet, 3}, []byte("a")), 3, '0', '.', '5'), []byte("b")), 255, 1, 'c', 254),
			Value{Kind: ZSet, Elems: strs("a", "b", "c"), Scores: []float64{0.5, math.Inf(-1), math.Inf(1)}}},
		{"set listpack (7.2)", rdbStr([]byte{typeSetListpack}, lp), Value{Kind: Set, Elems: strs("x", "5", "y", "-4096")}},
		{"quicklist 2, a PLAIN node", plain, Value{Kind: List, Elems: strs("big", "x", "5", "y", "-4096")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode(withFooter(tc.body, 9))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("\n got %s\nwant %s", show(got), show(tc.want))
			}
		})
	}
}

// rdbStr appends s to b as an RDB string (a plain length and the bytes).
func rdbStr(b, s []byte) []byte { return appendStr(b, s) }

// zipBuild is a ziplist of entries (string or int64), written from
// ziplist.c's description, apart from the reader under test. Integers take
// the narrowest encoding.
func zipBuild(t *testing.T, entries []any) []byte {
	t.Helper()
	b := make([]byte, 10)
	prev, last := 0, 10
	for _, e := range entries {
		start := len(b)
		if prev < 254 {
			b = append(b, byte(prev))
		} else {
			b = binary.LittleEndian.AppendUint32(append(b, 254), uint32(prev))
		}
		switch v := e.(type) {
		case string:
			switch n := len(v); {
			case n < 64:
				b = append(b, byte(n))
			case n < 16384:
				b = append(b, 0x40|byte(n>>8), byte(n))
			default:
				b = binary.BigEndian.AppendUint32(append(b, 0x80), uint32(n))
			}
			b = append(b, v...)
		case int64:
			switch {
			case v >= 0 && v <= 12:
				b = append(b, 0xf1+byte(v))
			case v == int64(int8(v)):
				b = append(b, 0xfe, byte(v))
			case v == int64(int16(v)):
				b = binary.LittleEndian.AppendUint16(append(b, 0xc0), uint16(v))
			case v >= -1<<23 && v < 1<<23:
				b = append(b, 0xf0, byte(v), byte(v>>8), byte(v>>16))
			case v == int64(int32(v)):
				b = binary.LittleEndian.AppendUint32(append(b, 0xd0), uint32(v))
			default:
				b = binary.LittleEndian.AppendUint64(append(b, 0xe0), uint64(v))
			}
		default:
			t.Fatalf("entry %v", e)
		}
		prev, last = len(b)-start, start
	}
	b = append(b, 0xff)
	binary.LittleEndian.PutUint32(b, uint32(len(b)))
	binary.LittleEndian.PutUint32(b[4:], uint32(last))
	binary.LittleEndian.PutUint16(b[8:], uint16(len(entries)))
	return b
}

// lpBuild is a listpack of entries (short strings, or int64 within 13
// bits), from listpack.md.
func lpBuild(entries []any) []byte {
	b := make([]byte, 6)
	for _, e := range entries {
		start := len(b)
		switch v := e.(type) {
		case string:
			b = append(append(b, 0x80|byte(len(v))), v...)
		case int64:
			if v >= 0 && v < 128 {
				b = append(b, byte(v))
			} else {
				u := uint16(v) & 0x1fff
				b = append(b, 0xc0|byte(u>>8), byte(u))
			}
		}
		b = append(b, byte(len(b)-start)) // entries under 128 bytes
	}
	b = append(b, 0xff)
	binary.LittleEndian.PutUint32(b, uint32(len(b)))
	binary.LittleEndian.PutUint16(b[4:], uint16(len(entries)))
	return b
}

// TestRoundTrip: Encode's payloads decode to what was encoded, for
// values of every kind and of lengths on each side of RDB's length
// encodings.
func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	word := func() []byte {
		n := []int{0, 1, 63, 64, 16383, 16384, 70000}[rng.IntN(7)]
		w := make([]byte, n)
		for i := range w {
			w[i] = byte(rng.IntN(256))
		}
		return w
	}
	for i := range 200 {
		v := Value{Kind: Kind(i % 5)}
		n := 1 + rng.IntN(70)
		if i%50 == 7 {
			n = 20000 // a count past 14 bits
		}
		switch v.Kind {
		case String:
			v.Str = word()
		default:
			seen := map[string]bool{}
			want := n
			if v.Kind == Hash {
				want = 2 * n
			}
			for len(v.Elems) < want {
				m := []byte(fmt.Sprint(rng.IntN(1 << 30)))
				if i%3 == 0 && n < 100 {
					m = word()
				}
				if v.Kind != List && seen[string(m)] {
					continue
				}
				seen[string(m)] = true
				v.Elems = append(v.Elems, m)
				switch v.Kind {
				case Hash:
					v.Elems = append(v.Elems, m)
				case ZSet:
					v.Scores = append(v.Scores, []float64{math.Inf(1), math.Inf(-1), 0, rng.NormFloat64() * 1e10}[rng.IntN(4)])
				}
			}
		}
		got, err := Decode(Encode(v))
		if err != nil {
			t.Fatalf("value %d: %v", i, err)
		}
		if v.Kind == String && len(v.Str) == 0 {
			v.Str = []byte{} // an empty string decodes as empty, not nil
		}
		if !reflect.DeepEqual(got, v) {
			t.Fatalf("value %d:\n got %s\nwant %s", i, show(got), show(v))
		}
	}
}

// TestDecodeRefuses: what RESTORE must refuse, with Redis's two texts.
func TestDecodeRefuses(t *testing.T) {
	good := Encode(Value{Kind: Set, Elems: strs("a", "b")})
	flipped := bytes.Clone(good)
	flipped[3] ^= 1
	zl := zipBuild(t, []any{"a", "b"})
	badPrev := bytes.Clone(zl)
	badPrev[10+3] = 9 // the second entry's prevlen
	badTail := bytes.Clone(zl)
	badTail[4] = 11
	lp := lpBuild([]any{"a", "b"})
	badBack := bytes.Clone(lp)
	badBack[6+2] = 3 // the first entry's backlen
	cases := []struct {
		name    string
		payload []byte
		want    error
		text    string // in the error, when not just the sentinel's
	}{
		{"too short", []byte("garbage"), ErrVersionOrChecksum, ""},
		{"a flipped bit", flipped, ErrVersionOrChecksum, ""},
		{"a newer RDB", withFooter([]byte{typeString, 1, 'a'}, MaxVersion+1), ErrVersionOrChecksum, ""},
		{"trailing bytes", withFooter([]byte{typeString, 1, 'a', 'b'}, 9), ErrBadFormat, ""},
		{"a string past the end", withFooter([]byte{typeString, 5, 'a'}, 9), ErrBadFormat, ""},
		{"a count past the end", withFooter([]byte{typeSet, 0x81, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 9), ErrBadFormat, ""},
		{"an empty set", withFooter([]byte{typeSet, 0}, 9), ErrBadFormat, ""},
		{"an empty list", withFooter([]byte{typeList, 0}, 9), ErrBadFormat, ""},
		{"a set member twice", withFooter(rdbStr(rdbStr([]byte{typeSet, 2}, []byte("a")), []byte("a")), 9), ErrBadFormat, ""},
		{"a hash field twice", withFooter(rdbStr([]byte{typeHashListpack}, lpBuild([]any{"f", "1", "f", "2"})), 9), ErrBadFormat, ""},
		{"a hash of an odd count", withFooter(rdbStr([]byte{typeHashZiplist}, zipBuild(t, []any{"f", "v", "g"})), 9), ErrBadFormat, ""},
		{"a NaN score", withFooter(append(rdbStr([]byte{typeZSet, 1}, []byte("a")), 253), 9), ErrBadFormat, ""},
		{"a score that is no number", withFooter(rdbStr([]byte{typeZSetListpack}, lpBuild([]any{"a", "x"})), 9), ErrBadFormat, ""},
		{"a ziplist's wrong prevlen", withFooter(rdbStr([]byte{typeListZiplist}, badPrev), 9), ErrBadFormat, ""},
		{"a ziplist's wrong tail", withFooter(rdbStr([]byte{typeListZiplist}, badTail), 9), ErrBadFormat, ""},
		{"a listpack's wrong backlen", withFooter(rdbStr([]byte{typeListQuick2, 1, containerPacked}, badBack), 9), ErrBadFormat, ""},
		{"a quicklist container of 3", withFooter(rdbStr([]byte{typeListQuick2, 1, 3}, lp), 9), ErrBadFormat, ""},
		{"an intset out of order", withFooter(rdbStr([]byte{typeSetIntset}, []byte{2, 0, 0, 0, 2, 0, 0, 0, 5, 0, 3, 0}), 9), ErrBadFormat, ""},
		{"an intset of width 3", withFooter(rdbStr([]byte{typeSetIntset}, []byte{3, 0, 0, 0, 1, 0, 0, 0, 5, 0, 0}), 9), ErrBadFormat, ""},
		{"LZF that claims too much", withFooter([]byte{typeString, 0xc3, 2, 0x7f, 0, 'a', 'b'}, 9), ErrBadFormat, ""},
		{"LZF that reaches back too far", withFooter([]byte{typeString, 0xc3, 4, 4, 0, 'a', 0x20, 5}, 9), ErrBadFormat, ""},
		{"LZF that claims 16 TiB", withFooter([]byte{typeString, 0xc3, 2, 0x81, 0, 0, 0x10, 0, 0, 0, 0, 0, 0, 'a'}, 9), ErrBadFormat, ""},
		{"a stream", withFooter([]byte{typeStream2, 0}, 9), ErrBadFormat, "a stream, which tenure does not store"},
		{"a module's value", withFooter([]byte{typeModule2, 0}, 9), ErrBadFormat, "a module's value"},
		{"RDB type 99", withFooter([]byte{99}, 9), ErrBadFormat, "RDB type 99"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(tc.payload)
			if !errors.Is(err, tc.want) || !strings.Contains(fmt.Sprint(err), tc.text) {
				t.Fatalf("Decode: %v, want %v (%q)", err, tc.want, tc.text)
			}
		})
	}
}

// TestDecodeEveryTruncation: every prefix of every Redis payload, and of
// its body with a fresh footer, is refused, never read past its end (past
// 600 bytes, every 37th prefix: each is a CRC of its whole length).
func TestDecodeEveryTruncation(t *testing.T) {
	for name, p := range redisPayloads(t) {
		body := p[:len(p)-10]
		for n := 0; n < len(p); n += 1 + n/600*36 {
			if _, err := Decode(p[:n]); err == nil {
				t.Fatalf("%s cut to %d bytes: decoded", name, n)
			}
			if n >= len(body) {
				continue
			}
			if _, err := Decode(withFooter(body[:n], 10)); err == nil {
				t.Fatalf("%s's body cut to %d bytes: decoded", name, n)
			}
		}
	}
}

// FuzzDecode: no payload panics Decode, and one it takes encodes to a
// payload that decodes to the same value.
func FuzzDecode(f *testing.F) {
	for _, p := range redisPayloads(f) {
		f.Add(p[:len(p)-10])
	}
	f.Add(Encode(Value{Kind: ZSet, Elems: strs("a"), Scores: []float64{1}})[:12])
	f.Fuzz(func(t *testing.T, body []byte) {
		v, err := Decode(withFooter(body, 10))
		if err != nil {
			return
		}
		again, err := Decode(Encode(v))
		if err != nil {
			t.Fatalf("re-encoded: %v", err)
		}
		if v.Kind == String && len(v.Str) == 0 {
			v.Str = []byte{}
		}
		if !reflect.DeepEqual(again, v) {
			t.Fatalf("re-encoded:\n got %s\nwant %s", show(again), show(v))
		}
	})
}

// lzfRepeat is an LZF stream that expands to prefix, unit reps times, and
// suffix: a literal, then back references one unit back.
func lzfRepeat(prefix, unit []byte, reps int, suffix []byte) (lzf []byte, n int) {
	literal := func(b []byte) {
		for len(b) > 0 {
			run := min(len(b), 32)
			lzf = append(append(lzf, byte(run-1)), b[:run]...)
			b = b[run:]
		}
	}
	literal(append(bytes.Clone(prefix), unit...))
	left := (reps - 1) * len(unit)
	off := len(unit) - 1
	for left > 0 {
		l := min(left, 264)
		if l < 3 {
			literal(bytes.Repeat(unit, reps)[:l]) // what is left, as it is
			break
		}
		if l-2 < 7 {
			lzf = append(lzf, byte((l-2)<<5|off>>8), byte(off))
		} else {
			lzf = append(lzf, byte(7<<5|off>>8), byte(l-2-7), byte(off))
		}
		left -= l
	}
	literal(suffix)
	return lzf, len(prefix) + reps*len(unit) + len(suffix)
}

// listpackBomb is a payload of a list: one LZF-compressed listpack of
// reps entries "1", some 60 elements a byte.
func listpackBomb(reps int) []byte {
	total := 6 + 2*reps + 1
	header := binary.LittleEndian.AppendUint32(nil, uint32(total))
	header = binary.LittleEndian.AppendUint16(header, 0xffff)
	lzf, n := lzfRepeat(header, []byte{0x01, 0x01}, reps, []byte{0xff})
	body := []byte{typeListQuick2, 1, containerPacked, 0xc3}
	body = appendLength(body, uint64(len(lzf)))
	body = appendLength(body, uint64(n))
	return withFooter(append(body, lzf...), 10)
}

// TestDecodeBudget: a small payload that stands for a great deal is
// refused before it is made (a review's bomb: 300 KB for 13 million
// elements and 1.9 GB); one within the budget decodes, through LZF back
// references.
func TestDecodeBudget(t *testing.T) {
	small := listpackBomb(100000)
	v, err := Decode(small)
	if err != nil || len(v.Elems) != 100000 || string(v.Elems[99999]) != "1" {
		t.Fatalf("100,000 elements in %d bytes: %d elements, %v", len(small), len(v.Elems), err)
	}
	bomb := listpackBomb(10_000_000)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = Decode(bomb)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrTooLarge) || !errors.Is(err, ErrBadFormat) {
		t.Fatalf("10 million elements in %d bytes: %v, want ErrTooLarge", len(bomb), err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 400<<20 {
		t.Fatalf("refusing the bomb allocated %d MiB", alloc>>20)
	}
	t.Logf("%d bytes standing for 10 million elements: refused (%v)", len(bomb), err)
}
