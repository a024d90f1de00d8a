package resp_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure"
	"github.com/tenure-db/tenure/resp"
	"github.com/tenure-db/tenure/resp/resptest"
)

// The bit commands and LCS of SPEC §6, as Redis 7 answers them. Every
// reply here was checked against redis-server 7.0 (see compatTranscript).

var setBitSteps = []step{
	{"SETBIT k 1 1", 0},
	{"GET k", "\x40"},
	{"SETBIT k 1 1", 1},
	{"SETBIT k 1 0", 1},
	{"GET k", "\x00"},
	{"SETBIT k 15 1", 0},
	{"GET k", "\x00\x01"},
	{"GETBIT k 15", 1},
	{"GETBIT k 14", 0},
	{"GETBIT k 16", 0},         // past the end
	{"GETBIT k 4294967295", 0}, // the largest offset, far past the end
	{"GETBIT nokey 0", 0},
	{"SET n 1", "OK"}, // "1" is 0x31 = 00110001
	{"SETBIT n 6 1", 0},
	{"GET n", "3"}, // 00110011
	{"SETBIT n 2 0", 1},
	{"GET n", "\x13"},
	{"SET t hello EX 100", "OK"},
	{"SETBIT t 0 1", 0}, // keeps the TTL
	{"TTL t", intBetween(95, 100)},

	// Offsets: 0 to 2^32-1 (proto-max-bulk-len 512 MB), values 0 or 1.
	{"SETBIT k -1 1", "ERR bit offset is not an integer or out of range"},
	{"SETBIT k 4294967296 1", "ERR bit offset is not an integer or out of range"},
	{"SETBIT k 1.5 1", "ERR bit offset is not an integer or out of range"},
	{"SETBIT k x 1", "ERR bit offset is not an integer or out of range"},
	{"GETBIT k 4294967296", "ERR bit offset is not an integer or out of range"},
	{"GETBIT k -1", "ERR bit offset is not an integer or out of range"},
	{"SETBIT k 0 2", "ERR bit is not an integer or out of range"},
	{"SETBIT k 0 -1", "ERR bit is not an integer or out of range"},
	{"SETBIT k 0 x", "ERR bit is not an integer or out of range"},
	{"SETBIT k x x", "ERR bit offset is not an integer or out of range"}, // the offset first
	{"SETBIT k 0", "ERR wrong number of arguments for 'setbit' command"},
	{"GETBIT k", "ERR wrong number of arguments for 'getbit' command"},
	{"GETBIT k 0 1", "ERR wrong number of arguments for 'getbit' command"},
}

var bitCountSteps = []step{
	{"SET s foobar", "OK"},
	{"BITCOUNT s", 26},
	{"BITCOUNT s 0 0", 4},
	{"BITCOUNT s 1 1", 6},
	{"BITCOUNT s 1 1 BYTE", 6},
	{"BITCOUNT s 5 30 BIT", 17},
	{"BITCOUNT s 5 30 bit", 17},
	{"BITCOUNT s -1 -1", 4},
	{"BITCOUNT s -2 -1 BIT", 1},
	{"BITCOUNT s 0 1000", 26},
	{"BITCOUNT s 0 1000 BIT", 26},
	{"BITCOUNT s -1000 -1", 26},
	{"BITCOUNT s 2 1", 0},
	{"BITCOUNT s -1 -2", 0}, // both negative, start after end
	{"BITCOUNT s -2 1 BIT", 0},
	{"SET str ab", "OK"},
	{"BITCOUNT str 1 -1", 3},
	{"BITCOUNT nokey", 0},
	{"BITCOUNT nokey 0 1", 0},
	{"SET e \"\"", "OK"},
	{"BITCOUNT e", 0},
	{"BITCOUNT e 0 -1", 0},

	// Redis 7.0 looks the key up first: a missing key is 0 whatever follows.
	{"BITCOUNT s 0", "ERR syntax error"},
	{"BITCOUNT s 0 1 hello", "ERR syntax error"},
	{"BITCOUNT s 0 1 BIT x", "ERR syntax error"},
	{"BITCOUNT s a 1", "ERR value is not an integer or out of range"},
	{"BITCOUNT s 0 b", "ERR value is not an integer or out of range"},
	{"BITCOUNT s 0 4294967296", 26},
	{"BITCOUNT nokey 0", 0},
	{"BITCOUNT nokey a b", 0},
	{"BITCOUNT", "ERR wrong number of arguments for 'bitcount' command"},
}

var bitPosSteps = []step{
	{"SET k \"\\xff\\xf0\\x00\"", "OK"},
	{"BITPOS k 0", 12},
	{"BITPOS k 1", 0},
	{"BITPOS k 1 2", -1},
	{"BITPOS k 0 2", 16},
	{"BITPOS k 1 1", 8},
	{"BITPOS k 0 0 0", -1}, // all ones within an explicit end
	{"BITPOS k 0 0", 12},
	{"BITPOS k 1 -1", -1},
	{"BITPOS k 0 -1", 16},
	{"BITPOS k 1 7 15 BIT", 7},
	{"BITPOS k 0 7 15 BIT", 12},
	{"BITPOS k 1 12 15 BIT", -1},
	{"BITPOS k 0 8 11 BIT", -1},
	{"BITPOS k 0 8 11 byte", -1}, // bytes 8 to 11 of 3: empty
	{"BITPOS k 1 3 2", -1},       // an empty range
	{"SET ones \"\\xff\\xff\"", "OK"},
	{"BITPOS ones 0", 16}, // zero-padded on the right with no end
	{"BITPOS ones 0 0 -1", -1},
	{"BITPOS ones 0 0 -1 BIT", -1},
	{"BITPOS ones 0 1", 16},
	{"BITPOS nokey 0", 0},
	{"BITPOS nokey 1", -1},
	{"SET e \"\"", "OK"},
	{"BITPOS e 0", -1},
	{"BITPOS e 1", -1},

	{"BITPOS k 2", "ERR The bit argument must be 1 or 0."},
	{"BITPOS k -1", "ERR The bit argument must be 1 or 0."},
	{"BITPOS k x", "ERR value is not an integer or out of range"},
	{"BITPOS nokey 2", "ERR The bit argument must be 1 or 0."}, // the bit before the key
	{"BITPOS k 1 x", "ERR value is not an integer or out of range"},
	{"BITPOS k 1 0 x", "ERR value is not an integer or out of range"},
	{"BITPOS k 1 0 1 x", "ERR syntax error"},
	{"BITPOS k 1 0 1 BIT x", "ERR syntax error"},
	{"BITPOS nokey 1 x", -1},
	{"BITPOS nokey 0 0 1 x", 0},
	{"BITPOS k", "ERR wrong number of arguments for 'bitpos' command"},
}

var bitOpSteps = []step{
	{"SET a \"\\x0f\\xf0\"", "OK"},
	{"SET b \"\\xff\"", "OK"},
	{"BITOP AND d a b", 2},
	{"GET d", "\x0f\x00"},
	{"BITOP OR d a b", 2},
	{"GET d", "\xff\xf0"},
	{"BITOP XOR d a b", 2},
	{"GET d", "\xf0\xf0"},
	{"BITOP NOT d a", 2},
	{"GET d", "\xf0\x0f"},
	{"BITOP and d a nokey", 2}, // a missing key is zeros
	{"GET d", "\x00\x00"},
	{"BITOP OR d a", 2},
	{"GET d", "\x0f\xf0"},
	{"BITOP XOR a a b", 2}, // the destination among the sources
	{"GET a", "\xf0\xf0"},
	{"SET d x EX 100", "OK"},
	{"BITOP OR d a", 2}, // a new value: no TTL
	{"TTL d", -1},
	{"BITOP OR d nokey", 0}, // empty: the destination is deleted
	{"EXISTS d", 0},
	{"SET e \"\"", "OK"},
	{"BITOP NOT d e", 0},
	{"BITOP NOT d nokey", 0},
	{"SET n 1", "OK"},
	{"BITOP NOT d n", 1},
	{"GET d", "\xce"},

	{"BITOP NOT d a b", "ERR BITOP NOT must be called with a single source key."},
	{"BITOP NAND d a b", "ERR syntax error"},
	{"BITOP AND d", "ERR wrong number of arguments for 'bitop' command"},
}

var lcsSteps = []step{
	{"MSET a ohmytext b mynewtext", "OK"},
	{"LCS a b", "mytext"},
	{"LCS a b LEN", 6},
	{"LCS a b IDX", []any{"matches", []any{
		[]any{[]any{4, 7}, []any{5, 8}},
		[]any{[]any{2, 3}, []any{0, 1}},
	}, "len", 6}},
	{"LCS a b IDX MINMATCHLEN 4 WITHMATCHLEN", []any{"matches", []any{
		[]any{[]any{4, 7}, []any{5, 8}, 4},
	}, "len", 6}},
	{"LCS a b idx withmatchlen", []any{"matches", []any{
		[]any{[]any{4, 7}, []any{5, 8}, 4},
		[]any{[]any{2, 3}, []any{0, 1}, 2},
	}, "len", 6}},
	{"LCS a b IDX MINMATCHLEN -5", []any{"matches", []any{
		[]any{[]any{4, 7}, []any{5, 8}},
		[]any{[]any{2, 3}, []any{0, 1}},
	}, "len", 6}},
	{"LCS a nokey", ""},
	{"LCS nokey nokey LEN", 0},
	{"LCS a nokey IDX", []any{"matches", []any{}, "len", 0}},
	{"LCS a a", "ohmytext"},

	{"LCS a b LEN IDX", "ERR If you want both the length and indexes, please just use IDX."},
	{"LCS a b MINMATCHLEN x", "ERR value is not an integer or out of range"},
	{"LCS a b MINMATCHLEN", "ERR syntax error"},
	{"LCS a b FOO", "ERR syntax error"},
	{"LCS a", "ERR wrong number of arguments for 'lcs' command"},

	// SUBSTR is GETRANGE's old name.
	{"SET s \"This is a string\"", "OK"},
	{"SUBSTR s 0 3", "This"},
	{"SUBSTR s -3 -1", "ing"},
	{"SUBSTR s 10 100", "string"},
	{"SUBSTR nokey 0 1", ""},
	{"SUBSTR s x 1", "ERR value is not an integer or out of range"},
	{"SUBSTR s 0", "ERR wrong number of arguments for 'substr' command"},
}

func TestBitsCompat(t *testing.T) {
	s := start(t)
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"SETBIT GETBIT", setBitSteps},
		{"BITCOUNT", bitCountSteps},
		{"BITPOS", bitPosSteps},
		{"BITOP", bitOpSteps},
		{"LCS SUBSTR", lcsSteps},
	} {
		t.Run(tc.name, func(t *testing.T) { compatTranscript(t, s, tc.steps) })
	}
}

// A huge bit offset grows the string up to proto-max-bulk-len and no
// further: with a small limit, the last bit it allows works and the next
// is refused before anything is allocated. LCS's table is held to the
// same limit, as in Redis.
func TestBitsAndLCSBoundedByProtoMaxBulkLen(t *testing.T) {
	s := resptest.Start(t, tenure.Options{Limits: resp.Limits{MaxBulkLen: 1024}})
	transcript(t, s.Client(), []step{
		{"SETBIT k 8191 1", 0},
		{"STRLEN k", 1024},
		{"GETBIT k 8191", 1},
		{"SETBIT k 8192 1", "ERR bit offset is not an integer or out of range"},
		{"GETBIT k 8192", "ERR bit offset is not an integer or out of range"},
		{"STRLEN k", 1024},
		{"SET a 123456789012345", "OK"}, // 16 × 16 cells of 4 bytes: 1024
		{"LCS a a LEN", 15},
		{"SET b 1234567890123456", "OK"},
		{"LCS a b LEN", "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len"},
	})
}

// againstRedis is a client of a fresh tenure and one of the real Redis
// TENURE_TEST_REDIS names (flushed), for tests that send both the same
// random commands; it skips the test when there is none.
func againstRedis(t *testing.T) (ours, theirs *redis.Client) {
	t.Helper()
	addr := os.Getenv("TENURE_TEST_REDIS")
	if addr == "" {
		t.Skip("TENURE_TEST_REDIS names no Redis to compare with")
	}
	theirs = redis.NewClient(&redis.Options{Addr: addr, Protocol: 2})
	t.Cleanup(func() { theirs.Close() })
	if err := theirs.FlushAll(bg).Err(); err != nil {
		t.Fatal(err)
	}
	return start(t).Client(), theirs
}

// sameReplies sends each command to both and stops at the first reply
// that differs.
func sameReplies(t *testing.T, ours, theirs *redis.Client, cmds [][]any) {
	t.Helper()
	for _, cmd := range cmds {
		want, werr := theirs.Do(bg, cmd...).Result()
		got, gerr := ours.Do(bg, cmd...).Result()
		if fmt.Sprint(werr) != fmt.Sprint(gerr) || !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: tenure %s, Redis %s (after %q)", cmd, show(got, gerr), show(want, werr), cmds)
		}
	}
}

// Random strings and ranges, each command sent to tenure and to Redis,
// replies compared: the bit commands' index rules and LCS's choice among
// equal subsequences are where a reimplementation slips.
func TestBitsAndLCSAgainstRedis(t *testing.T) {
	ours, theirs := againstRedis(t)
	rng := rand.New(rand.NewPCG(7, 8))
	randomString := func(n int, alphabet string) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	bytesAlphabet := "\x00\x01\x0f\x80\xf0\xfe\xff" + "abc"
	for round := 0; round < 300; round++ {
		cmds := [][]any{{"SET", "a", randomString(rng.IntN(12), bytesAlphabet)}, {"SET", "b", randomString(rng.IntN(12), "ab")}}
		idx := func() any { return strconv.Itoa(rng.IntN(40) - 20) }
		units := []string{"BYTE", "BIT", "byte", "bit"}
		cmds = append(cmds,
			[]any{"BITCOUNT", "a"},
			[]any{"BITCOUNT", "a", idx(), idx()},
			[]any{"BITCOUNT", "a", idx(), idx(), units[rng.IntN(4)]},
			[]any{"BITPOS", "a", rng.IntN(2)},
			[]any{"BITPOS", "a", rng.IntN(2), idx()},
			[]any{"BITPOS", "a", rng.IntN(2), idx(), idx()},
			[]any{"BITPOS", "a", rng.IntN(2), idx(), idx(), units[rng.IntN(4)]},
			[]any{"GETBIT", "a", rng.IntN(100)},
			[]any{"SETBIT", "b", rng.IntN(100), rng.IntN(2)},
			[]any{"BITOP", []string{"AND", "OR", "XOR"}[rng.IntN(3)], "d", "a", "b"},
			[]any{"GET", "d"},
			[]any{"BITOP", "NOT", "d", "b"},
			[]any{"GET", "d"},
			[]any{"SET", "x", randomString(rng.IntN(15), "abc")},
			[]any{"SET", "y", randomString(rng.IntN(15), "abc")},
			[]any{"LCS", "x", "y"},
			[]any{"LCS", "x", "y", "IDX", "WITHMATCHLEN"},
			[]any{"LCS", "x", "y", "IDX", "MINMATCHLEN", rng.IntN(4)},
		)
		sameReplies(t, ours, theirs, cmds)
	}
}
