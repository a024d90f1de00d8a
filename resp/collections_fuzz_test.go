package resp_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/tenure-db/tenure"
	"github.com/tenure-db/tenure/resp"
	"github.com/tenure-db/tenure/resp/resptest"
)

// FuzzCollectionArgs sends arbitrary arguments to the hash, set and
// BITFIELD commands (SPEC §13) over a real connection to an in-process
// server. For every request: the server does not panic, its reply is one
// well-formed RESP2 reply (an error starting with an uppercase code word),
// and of the shape the command answers; after every input, every key it
// named that is a hash or a set has the size its members say (HLEN and
// SCARD against HGETALL and SMEMBERS), and the server still answers PING.
//
// An input is lines of requests, words separated by single spaces; a line
// whose first word names none of the commands fuzzed is sent as the
// arguments of one of them, picked by the line's length.
func FuzzCollectionArgs(f *testing.F) {
	panics := &panicLog{}
	srv := resptest.Start(f, tenure.Options{Logger: slog.New(panics), Limits: resp.Limits{MaxBulkLen: 1 << 20}})
	admin := &fzConn{addr: srv.Addr}
	f.Cleanup(admin.close)
	for _, s := range fzCollectionSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c := &fzConn{addr: srv.Addr}
		defer c.close()
		keys := map[string]bool{}
		lines := bytes.Split(data, []byte("\n"))
		if len(lines) > 8 {
			lines = lines[:8]
		}
		for _, line := range lines {
			if c.gone {
				break
			}
			args := fzCollectionArgs(line)
			for _, a := range args[1:] {
				if len(a) <= 4 {
					keys[string(a)] = true // a short word may be a key
				}
			}
			v, err := c.send(t, args, nil)
			if err != nil {
				t.Fatalf("%q: %v", fzShow(args), err)
			}
			if msg := fzCheckCollectionReply(args, v); msg != "" {
				t.Fatalf("%q: reply %s: %s", fzShow(args), v, msg)
			}
			if p := panics.take(); p != "" {
				t.Fatalf("the server panicked on %q:\n%s", fzShow(args), p)
			}
		}
		for k := range keys {
			switch admin.do(t, "TYPE", k).str {
			case "hash":
				n, all := admin.do(t, "HLEN", k), admin.do(t, "HGETALL", k)
				if int(n.n)*2 != len(all.elems) {
					t.Fatalf("after %q: HLEN %s is %d, HGETALL has %d entries", data, k, n.n, len(all.elems))
				}
			case "set":
				n, all := admin.do(t, "SCARD", k), admin.do(t, "SMEMBERS", k)
				if int(n.n) != len(all.elems) {
					t.Fatalf("after %q: SCARD %s is %d, SMEMBERS has %d", data, k, n.n, len(all.elems))
				}
			}
			admin.do(t, "DEL", k)
		}
		if v := admin.do(t, "PING"); v.String() != "+PONG" {
			t.Fatalf("after %q: PING: %s", data, v)
		}
	})
}

// fzCollectionCommands are the commands FuzzCollectionArgs fuzzes.
var fzCollectionCommands = []string{"HSET", "HSETNX", "HGET", "HMGET", "HMSET", "HGETALL", "HKEYS", "HVALS",
	"HLEN", "HEXISTS", "HDEL", "HINCRBY", "HINCRBYFLOAT", "HSTRLEN", "HRANDFIELD", "HSCAN",
	"SADD", "SREM", "SMEMBERS", "SISMEMBER", "SMISMEMBER", "SCARD", "SPOP", "SRANDMEMBER", "SMOVE",
	"SINTER", "SINTERCARD", "SINTERSTORE", "SUNION", "SUNIONSTORE", "SDIFF", "SDIFFSTORE", "SSCAN",
	"BITFIELD", "BITFIELD_RO"}

func fzCollectionArgs(line []byte) [][]byte {
	args := bytes.Split(line, []byte(" "))
	for _, name := range fzCollectionCommands {
		if strings.EqualFold(string(args[0]), name) {
			return args
		}
	}
	name := fzCollectionCommands[len(line)%len(fzCollectionCommands)]
	if len(line) == 0 {
		return [][]byte{[]byte(name)}
	}
	return append([][]byte{[]byte(name)}, args...)
}

// fzCheckCollectionReply checks a reply's shape against what the command
// answers.
func fzCheckCollectionReply(args [][]byte, v fzReply) string {
	if v.kind == '-' {
		if !fzErrorCode.MatchString(v.str) {
			return "an error reply must start with an uppercase code word"
		}
		return ""
	}
	switch strings.ToLower(string(args[0])) {
	case "hincrby":
		if v.kind != ':' {
			return "want an integer"
		}
	case "hset", "hsetnx", "hlen", "hexists", "hdel", "hstrlen", "sadd", "srem", "sismember",
		"scard", "smove", "sintercard", "sinterstore", "sunionstore", "sdiffstore":
		if v.kind != ':' || v.n < 0 {
			return "want a non-negative integer"
		}
	case "hget", "hincrbyfloat":
		if v.kind != '$' {
			return "want a bulk string or null"
		}
	case "hmset":
		if v.String() != "+OK" {
			return "want OK"
		}
	case "hgetall":
		if v.kind != '*' || len(v.elems)%2 != 0 {
			return "want pairs"
		}
	case "hscan", "sscan":
		if v.kind != '*' || len(v.elems) != 2 || v.elems[0].kind != '$' || v.elems[1].kind != '*' {
			return "want [cursor, [...]]"
		}
	case "hmget", "hkeys", "hvals", "smembers", "smismember", "sinter", "sunion", "sdiff", "bitfield", "bitfield_ro":
		if v.kind != '*' || v.null {
			return "want an array"
		}
	}
	return ""
}

// fzCollectionSeeds walk the commands and their options, in range, out of
// range and misspelt.
var fzCollectionSeeds = []string{
	"HSET a f v g w\nHGETALL a\nHDEL a f g",
	"HSET a f\nHMSET a f v x",
	"HINCRBY a n 9223372036854775807\nHINCRBY a n 1\nHINCRBYFLOAT a n 1e308\nHINCRBYFLOAT a f inf",
	"HRANDFIELD a -9223372036854775808\nHRANDFIELD a 5 WITHVALUES\nHRANDFIELD a -5 withvalues x",
	"HSCAN a 0 MATCH * COUNT 1 NOVALUES\nHSCAN a 18446744073709551615\nHSCAN a -1 COUNT 0",
	"SADD b 1 2 3 x\nSPOP b 2\nSPOP b -1\nSRANDMEMBER b -3\nSMOVE b c 1\nSMOVE b b 2",
	"SINTERCARD 2 b c LIMIT 1\nSINTERCARD 0 b\nSINTERCARD 9 b\nSINTERCARD 1 b LIMIT -1",
	"SINTERSTORE b b c\nSUNIONSTORE c b c\nSDIFFSTORE d b c d",
	"SSCAN b 0 MATCH [a-\nSSCAN b x",
	"BITFIELD e SET i64 #1 -9223372036854775808 OVERFLOW SAT INCRBY u63 0 -1 GET i1 5",
	"BITFIELD e OVERFLOW FAIL INCRBY i8 #99999999999999999 1\nBITFIELD_RO e GET u8 0 SET u8 0 1",
	"SET s v\nHSET s f v\nSADD s x\nSINTER s b\nBITFIELD a GET u8 0",
}
