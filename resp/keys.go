package resp

import (
	"bytes"
	"math"
	"strings"
	"time"

	"github.com/tenure-db/tenure/kv"
)

// Key commands: DEL, UNLINK, EXISTS, EXPIRE…, TTL, PTTL, PERSIST, TYPE,
// KEYS, SCAN, RENAME, RENAMENX.

func cmdDel(c *conn, args [][]byte) {
	n, err := c.srv.store.Del(args[1:])
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.Int(n)
}

func cmdExists(c *conn, args [][]byte) {
	n, err := c.srv.store.Exists(args[1:])
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.Int(n)
}

func cmdExpire(c *conn, args [][]byte)    { expire(c, args, "expire") }
func cmdPExpire(c *conn, args [][]byte)   { expire(c, args, "pexpire") }
func cmdExpireAt(c *conn, args [][]byte)  { expire(c, args, "expireat") }
func cmdPExpireAt(c *conn, args [][]byte) { expire(c, args, "pexpireat") }

// expire is EXPIRE, PEXPIRE, EXPIREAT and PEXPIREAT key time [NX|XX|GT|LT],
// with Redis's order of checks: options, then the time. Unlike SET's EX, a
// time in the past is allowed: it deletes the key.
func expire(c *conn, args [][]byte, name string) {
	cond := kv.CondNone
	for _, a := range args[3:] {
		switch option(a) {
		case "nx":
			cond |= kv.CondNX
		case "xx":
			cond |= kv.CondXX
		case "gt":
			cond |= kv.CondGT
		case "lt":
			cond |= kv.CondLT
		default:
			c.out.Err("Unsupported option " + cString(a, len(a)))
			return
		}
	}
	switch {
	case cond&kv.CondNX != 0 && cond != kv.CondNX:
		c.out.Err("NX and XX, GT or LT options at the same time are not compatible")
		return
	case cond&kv.CondGT != 0 && cond&kv.CondLT != 0:
		c.out.Err("GT and LT options at the same time are not compatible")
		return
	}
	n, ok := parseInt(args[2])
	if !ok {
		c.out.Err(errNotInteger)
		return
	}
	// Only overflow is refused: by the unit, or by adding the base time.
	at, ok := expiryAt(n, name == "expire" || name == "expireat", name == "expire" || name == "pexpire")
	if !ok {
		c.out.Err("invalid expire time in '" + name + "' command")
		return
	}
	set, err := c.srv.store.ExpireAt(args[1], at, cond)
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.Bool(set)
}

// expiryAt turns an expiry time as a command gives it, in seconds or
// milliseconds, relative to now or absolute, into unix milliseconds. It is
// false when that overflows: Redis's "invalid expire time".
func expiryAt(n int64, seconds, relative bool) (int64, bool) {
	if seconds {
		if n > math.MaxInt64/1000 || n < math.MinInt64/1000 {
			return 0, false
		}
		n *= 1000
	}
	if relative {
		now := time.Now().UnixMilli()
		if n > math.MaxInt64-now {
			return 0, false
		}
		n += now
	}
	return n, true
}

func cmdTTL(c *conn, args [][]byte) {
	ms, err := c.srv.store.TTL(args[1])
	if err != nil {
		c.storeError(err)
		return
	}
	if ms < 0 {
		c.out.Int(ms)
		return
	}
	c.out.Int((ms + 500) / 1000)
}

func cmdPTTL(c *conn, args [][]byte) {
	ms, err := c.srv.store.TTL(args[1])
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.Int(ms)
}

func cmdPersist(c *conn, args [][]byte) {
	ok, err := c.srv.store.Persist(args[1])
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.Bool(ok)
}

func cmdType(c *conn, args [][]byte) {
	t, err := c.srv.store.Type(args[1])
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.Status(t)
}

func cmdKeys(c *conn, args [][]byte) {
	keys, err := c.srv.store.Keys(args[1])
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.Array(len(keys))
	for _, k := range keys {
		c.out.Bulk(k)
	}
}

// cmdScan is SCAN cursor [MATCH pattern] [COUNT n] [TYPE t]. The cursor is
// a position in the keyspace's hash order, so a key present for the whole
// walk is returned at least once.
func cmdScan(c *conn, args [][]byte) {
	cursor, ok := parseCursor(args[1])
	if !ok {
		c.out.Err("invalid cursor")
		return
	}
	var (
		pattern []byte
		typ     string
		count   = 10
	)
	msg := parseRedisOptions(args[2:],
		opt{name: "match", value: true, set: func(v []byte) string { pattern = v; return "" }},
		opt{name: "count", value: true, set: func(v []byte) (msg string) {
			count, msg = countArg(v)
			return msg
		}},
		opt{name: "type", value: true, set: func(v []byte) string { typ = strings.ToLower(string(v)); return "" }},
	)
	if msg != "" {
		c.out.Err(msg)
		return
	}
	next, keys, err := c.srv.store.Scan(cursor, pattern, count, typ)
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.Array(2)
	c.out.BulkUint(next)
	c.out.Array(len(keys))
	for _, k := range keys {
		c.out.Bulk(k)
	}
}

// countArg is the COUNT of SCAN and LOCK.LIST: an integer, at least 1 (0
// is a syntax error, as Redis answers it), at most 1<<20 in effect.
func countArg(v []byte) (int, string) {
	n, ok := parseInt(v)
	if !ok {
		return 0, errNotInteger
	}
	if n < 1 {
		return 0, errSyntax
	}
	return int(min(n, 1<<20)), ""
}

func cmdRename(c *conn, args [][]byte) {
	if err := c.srv.store.Rename(args[1], args[2]); err != nil {
		c.storeError(err)
		return
	}
	c.out.OK()
}

func cmdRenameNX(c *conn, args [][]byte) {
	ok, err := c.srv.store.RenameNX(args[1], args[2])
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.Bool(ok)
}

// parseCursor reads a SCAN cursor as Redis does, with C's strtoul: no
// leading space, an optional sign (a negative cursor wraps around, so it
// names the end of the walk), digits, nothing after them, no overflow. An
// empty cursor is 0.
func parseCursor(b []byte) (uint64, bool) {
	if len(b) > 0 && isSpace(b[0]) {
		return 0, false
	}
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i] // strtoul reads a C string
	}
	if len(b) == 0 {
		return 0, true
	}
	neg := b[0] == '-'
	if b[0] == '-' || b[0] == '+' {
		b = b[1:]
	}
	if len(b) == 0 {
		return 0, false
	}
	n, ok := parseDigits(b)
	if !ok {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}
