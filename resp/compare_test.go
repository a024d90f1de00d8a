package resp_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Compare-and-set, as Redis 8.4 and Valkey 9 spell it (SPEC §13). Digests
// are XXH3-64 of the value (kv's TestDigestVectors checks the hash
// against XXH3's test vectors).

const digestA = "e6c632b61e964e1f" // XXH3-64("a")

var compareSteps = []step{
	// DIGEST
	{"DIGEST nokey", nil},
	{"SET k a", "OK"},
	{"DIGEST k", digestA},
	{`SET e ""`, "OK"},
	{"DIGEST e", "2d06800538d394c2"},
	{"DIGEST", "ERR wrong number of arguments for 'digest' command"},
	{"DIGEST k k", "ERR wrong number of arguments for 'digest' command"},

	// SET … IFEQ / IFNE
	{"SET k b IFEQ x", nil},
	{"GET k", "a"},
	{"SET k b IFEQ a", "OK"},
	{"GET k", "b"},
	{"SET k c ifne b", nil},
	{"SET k c IFNE a", "OK"},
	{"GET k", "c"},
	{"SET missing v IFEQ v", nil},
	{"EXISTS missing", 0},
	{"SET created v IFNE v", "OK"},
	{"GET created", "v"},
	// with GET: the old value, written or not
	{"SET k d IFEQ c GET", "c"},
	{"SET k e IFEQ x GET", "d"},
	{"GET k", "d"},
	{"SET nk v IFEQ v GET", nil},
	{"EXISTS nk", 0},
	// with a TTL
	{"SET k a IFEQ d EX 100", "OK"},
	{"TTL k", intBetween(95, 100)},
	{"SET k a IFNE x KEEPTTL", "OK"},
	{"TTL k", intBetween(95, 100)},
	{"SET k a", "OK"},

	// SET … IFDEQ / IFDNE
	{"SET k b IFDEQ 0000000000000000", nil},
	{"SET k b IFDEQ " + digestA, "OK"},
	{"GET k", "b"},
	{"SET k c IFDNE 0000000000000000", "OK"},
	{"SET k a", "OK"},
	{"SET k c IFDNE " + digestA, nil},
	{"SET k c IFDEQ E6C632B61E964E1F", "OK"}, // either case
	{"SET missing v IFDEQ " + digestA, nil},
	{"EXISTS missing", 0},
	{"SET created2 v IFDNE " + digestA, "OK"},
	{"GET created2", "v"},

	// bad input
	{"SET k v IFEQ", "ERR syntax error"},
	{"SET k v IFEQ a IFEQ a", "ERR syntax error"},
	{"SET k v IFEQ a IFNE a", "ERR syntax error"},
	{"SET k v IFDEQ " + digestA + " IFDNE " + digestA, "ERR syntax error"},
	{"SET k v IFNE a NX", "ERR syntax error"},
	{"SET k v NX IFNE a", "ERR syntax error"},
	{"SET k v XX IFEQ a", "ERR syntax error"},
	{"SET k v IFDEQ a XX", "ERR syntax error"},
	{"SET k v IFDEQ xyz", "ERR must be exactly 16 hexadecimal characters"},
	{"SET k v IFDNE " + digestA + "0", "ERR must be exactly 16 hexadecimal characters"},
	{"SET k v IFDEQ g6c632b61e964e1f", "ERR must be exactly 16 hexadecimal characters"},
	{"GET k", "c"},

	// DELEX
	{"DELEX nokey", 0},
	{"DELEX nokey IFEQ a", 0},
	{"DELEX nokey IFNE a", 0},
	{"DELEX nokey IFDEQ " + digestA, 0},
	{"DELEX nokey IFDNE " + digestA, 0},
	{"SET k a", "OK"},
	{"DELEX k IFEQ b", 0},
	{"DELEX k IFNE a", 0},
	{"DELEX k IFDEQ 0000000000000000", 0},
	{"DELEX k IFDNE " + digestA, 0},
	{"GET k", "a"},
	{"DELEX k IFEQ a", 1},
	{"EXISTS k", 0},
	{"SET k a", "OK"},
	{"DELEX k IFNE b", 1},
	{"SET k a", "OK"},
	{"DELEX k ifdeq " + digestA, 1},
	{"SET k a", "OK"},
	{"DELEX k IFDNE 0000000000000000", 1},
	{"SET k a", "OK"},
	{"DELEX k", 1},
	{"EXISTS k", 0},
	{"DELEX", "ERR wrong number of arguments for 'delex' command"},
	{"DELEX k IFEQ", "ERR syntax error"},
	{"DELEX k IFEQ a IFEQ a", "ERR syntax error"},
	{"DELEX k IFEQ a IFNE b", "ERR syntax error"},
	{"DELEX k NX a", "ERR syntax error"},
	{"DELEX k FOO", "ERR syntax error"},
	{"DELEX k IFDEQ xyz", "ERR must be exactly 16 hexadecimal characters"},

	// DELIFEQ (Valkey 9)
	{"SET k a", "OK"},
	{"DELIFEQ k b", 0},
	{"GET k", "a"},
	{"DELIFEQ k a", 1},
	{"EXISTS k", 0},
	{"DELIFEQ k a", 0},
	{"DELIFEQ k", "ERR wrong number of arguments for 'delifeq' command"},
}

func TestCompareAndSetCompat(t *testing.T) { compatTranscript(t, start(t), compareSteps) }

// Inside MULTI the commands queue and answer in EXEC; a script calls them
// as any other command, and the lock recipe (SET NX PX, SET IFEQ PX to
// extend, DELEX IFEQ to release) works without one.
func TestCompareAndSetInMultiAndScripts(t *testing.T) {
	s := start(t)
	rdb := resp2Client(t, s)
	conn := rdb.Conn()
	defer conn.Close()
	transcript(t, conn, []step{
		{"SET k a", "OK"},
		{"MULTI", "OK"},
		{"DIGEST k", "QUEUED"},
		{"SET k b IFEQ a", "QUEUED"},
		{"SET k c IFDEQ " + digestA, "QUEUED"},
		{"DELEX k IFNE b", "QUEUED"},
		{"DELIFEQ k b", "QUEUED"},
		{"EXEC", []any{digestA, "OK", nil, 0, 1}},
		{"EXISTS k", 0},
		// an invalid digest is refused when the command runs, as Redis does
		// with an option's value
		{"MULTI", "OK"},
		{"SET k b IFDEQ xyz", "QUEUED"},
		{"EXEC", []any{"ERR must be exactly 16 hexadecimal characters"}},

		{"EVAL \"return redis.call('SET', KEYS[1], ARGV[1], 'IFNE', ARGV[1])\" 1 s tok", "OK"},
		{"EVAL \"return redis.call('DIGEST', KEYS[1]) == redis.sha1hex('') and 0 or string.len(redis.call('DIGEST', KEYS[1]))\" 1 s", 16},
		{"EVAL \"return redis.call('DELEX', KEYS[1], 'IFEQ', ARGV[1])\" 1 s other", 0},
		{"EVAL \"return redis.call('DELEX', KEYS[1], 'IFDEQ', redis.call('DIGEST', KEYS[1]))\" 1 s", 1},
		{"EVAL \"return redis.call('DELIFEQ', KEYS[1], ARGV[1])\" 1 s tok", 0},
		{"EVAL \"return redis.pcall('SET', KEYS[1], 'v', 'IFEQ', 'a', 'NX')\" 1 s", "ERR syntax error"},
		{"EVAL_RO \"return redis.call('DIGEST', KEYS[1])\" 1 s", nil},
		{"EVAL_RO \"return redis.call('DELEX', KEYS[1])\" 1 s", "ERR Write commands are not allowed from read-only scripts. script: db124f0489477a4809dcd6373b6867cd66ba202c, on @user_script:1."},

		// the lock recipe: acquire, a stranger's release refused, extend, release
		{"SET lock me NX PX 30000", "OK"},
		{"SET lock you NX PX 30000", nil},
		{"DELEX lock IFEQ you", 0},
		{"SET lock me IFEQ me PX 60000", "OK"},
		{"PTTL lock", intBetween(59000, 60000)},
		{"DELIFEQ lock me", 1},
		{"SET lock you NX PX 30000", "OK"},
	})
}

// RESP3: DIGEST is a bulk string or RESP3's null; DELEX an integer.
func TestCompareAndSetRESP3(t *testing.T) {
	s := start(t)
	r3 := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: 3})
	defer r3.Close()
	if err := r3.Do(bg, "DIGEST", "nokey").Err(); err != redis.Nil {
		t.Errorf("DIGEST nokey over RESP3 = %v, want null", err)
	}
	if err := r3.Set(bg, "k", "a", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if d, err := r3.Do(bg, "DIGEST", "k").Text(); err != nil || d != digestA {
		t.Errorf("DIGEST k = %q, %v", d, err)
	}
	if err := r3.Do(bg, "SET", "k", "b", "IFEQ", "x").Err(); err != redis.Nil {
		t.Errorf("SET IFEQ that says no over RESP3 = %v, want null", err)
	}
	if n, err := r3.Do(bg, "DELEX", "k", "IFDEQ", digestA).Int(); err != nil || n != 1 {
		t.Errorf("DELEX k IFDEQ = %d, %v", n, err)
	}
}

// COMMAND DOCS describes the new rows and SET's conditions.
func TestCompareAndSetDocs(t *testing.T) {
	s := start(t)
	rdb := resp2Client(t, s)
	for _, name := range []string{"delex", "digest", "delifeq", "set"} {
		docs, err := rdb.Do(bg, "COMMAND", "DOCS", name).Slice()
		if err != nil || len(docs) != 2 || docs[0] != name {
			t.Errorf("COMMAND DOCS %s = %v, %v", name, docs, err)
		}
		if name == "set" || name == "delex" {
			if text := fmt.Sprint(docs); !strings.Contains(text, "ifdeq-digest") || !strings.Contains(text, "IFNE") {
				t.Errorf("COMMAND DOCS %s does not name the conditions: %s", name, text)
			}
		}
	}
	info, err := rdb.Do(bg, "COMMAND", "INFO", "delex", "digest", "delifeq").Slice()
	if err != nil || len(info) != 3 {
		t.Fatalf("COMMAND INFO = %v, %v", info, err)
	}
	for i, want := range []bool{true, false, true} {
		write := false
		for _, f := range info[i].([]any)[2].([]any) {
			write = write || f == "write"
		}
		if write != want {
			t.Errorf("COMMAND INFO %v: write %v, want %v", info[i].([]any)[0], write, want)
		}
	}
}
