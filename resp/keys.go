package resp

import (
	"bytes"
	"math"
	"strings"

	"github.com/tenure-db/tenure/kv"
)

// Key commands: DEL, UNLINK, EXISTS, EXPIRE…, TTL, PTTL, PERSIST, TYPE,
// KEYS, SCAN, RENAME, RENAMENX.

func cmdDel(c *conn, args [][]byte) {
	if len(args) > 2 && c.srv.notifying(notifyGeneric) {
		// Which keys went is told key by key (notify.go): one DEL each.
		var n int64
		for _, k := range args[1:] {
			d, err := c.store.Del([][]byte{k})
			if err != nil {
				c.storeError(err)
				return
			}
			if d > 0 {
				c.notify(notifyGeneric, "del", k)
			}
			n += d
		}
		c.out.Int(n)
		return
	}
	n, err := c.store.Del(args[1:])
	if err != nil {
		c.storeError(err)
		return
	}
	if n > 0 {
		c.notify(notifyGeneric, "del", args[1])
	}
	c.out.Int(n)
}

func cmdExists(c *conn, args [][]byte) {
	n, err := c.store.Exists(args[1:])
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
	at, ok := expiryAt(n, name == "expire" || name == "expireat", name == "expire" || name == "pexpire", c.nowMs())
	if !ok {
		c.out.Err("invalid expire time in '" + name + "' command")
		return
	}
	set, err := c.store.ExpireAt(args[1], at, cond)
	if err != nil {
		c.storeError(err)
		return
	}
	if set {
		c.notifyExpiry(args[1], at)
	}
	c.out.Bool(set)
}

// expiryAt turns an expiry time as a command gives it, in seconds or
// milliseconds, relative to now (unix ms) or absolute, into unix
// milliseconds. It is false when that overflows: Redis's "invalid expire
// time".
func expiryAt(n int64, seconds, relative bool, now int64) (int64, bool) {
	if seconds {
		if n > math.MaxInt64/1000 || n < math.MinInt64/1000 {
			return 0, false
		}
		n *= 1000
	}
	if relative {
		if n > math.MaxInt64-now {
			return 0, false
		}
		n += now
	}
	return n, true
}

func cmdTTL(c *conn, args [][]byte) {
	ms, err := c.store.TTL(args[1])
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
	ms, err := c.store.TTL(args[1])
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.Int(ms)
}

func cmdPersist(c *conn, args [][]byte) {
	ok, err := c.store.Persist(args[1])
	if err != nil {
		c.storeError(err)
		return
	}
	if ok {
		c.notify(notifyGeneric, "persist", args[1])
	}
	c.out.Bool(ok)
}

func cmdType(c *conn, args [][]byte) {
	t, err := c.store.Type(args[1])
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.Status(t)
}

func cmdKeys(c *conn, args [][]byte) {
	keys, err := c.store.Keys(args[1])
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
	next, keys, err := c.store.Scan(cursor, pattern, count, typ)
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
	if err := c.store.Rename(args[1], args[2]); err != nil {
		c.storeError(err)
		return
	}
	c.ready(args[2]) // blocking.go: a list or zset moved into place
	c.notifyRename(args[1], args[2])
	c.out.OK()
}

func cmdRenameNX(c *conn, args [][]byte) {
	ok, err := c.store.RenameNX(args[1], args[2])
	if err != nil {
		c.storeError(err)
		return
	}
	if ok {
		c.ready(args[2])
		c.notifyRename(args[1], args[2])
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

// cmdTouch is TOUCH key [key ...]: how many of the keys exist. tenure
// keeps no access times, so touching changes nothing else.
func cmdTouch(c *conn, args [][]byte) { cmdExists(c, args) }

func cmdExpireTime(c *conn, args [][]byte)  { expireTime(c, args[1], true) }
func cmdPExpireTime(c *conn, args [][]byte) { expireTime(c, args[1], false) }

// expireTime is EXPIRETIME and PEXPIRETIME: the deadline as a unix time,
// -1 for no TTL, -2 for a missing key. Seconds are rounded to the nearest,
// as Redis rounds them for TTL too.
func expireTime(c *conn, key []byte, seconds bool) {
	at, err := c.store.Deadline(key)
	if err != nil {
		c.storeError(err)
		return
	}
	if at > 0 && seconds {
		at = (at + 500) / 1000
	}
	c.out.Int(at)
}

func cmdRandomKey(c *conn, args [][]byte) {
	k, ok, err := c.store.RandomKey()
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.BulkOrNull(k, ok)
}

// cmdCopy is COPY source destination [DB destination-db] [REPLACE]. There
// is one database, so DB takes 0 only and answers any other index as
// SELECT does.
func cmdCopy(c *conn, args [][]byte) {
	replace := false
	msg := parseRedisOptions(args[3:],
		opt{name: "replace", set: func([]byte) string { replace = true; return "" }},
		opt{name: "db", value: true, set: func(v []byte) string {
			switch db, ok := parseInt(v); {
			case !ok:
				return errNotInteger
			case db != 0:
				return "DB index is out of range"
			}
			return ""
		}},
	)
	if msg != "" {
		c.out.Err(msg)
		return
	}
	if bytes.Equal(args[1], args[2]) {
		c.out.Err("source and destination objects are the same")
		return
	}
	ok, err := c.store.Copy(args[1], args[2], replace)
	if err != nil {
		c.storeError(err)
		return
	}
	if ok {
		c.ready(args[2])
		c.notify(notifyGeneric, "copy_to", args[2])
	}
	c.out.Bool(ok)
}

// cmdObjectEncoding is OBJECT ENCODING key: Redis's encoding names for a
// string (see kv.Object), null for a missing key.
func cmdObjectEncoding(c *conn, args [][]byte) {
	c.object(args[2], func(o kv.Object) { c.out.BulkString(o.Encoding) })
}

// cmdObjectRefCount is OBJECT REFCOUNT key, as Redis answers it for the
// same value: INT_MAX for one of its shared integers, else 1. tenure
// shares no values; a client that reads it learns what Redis would say.
func cmdObjectRefCount(c *conn, args [][]byte) {
	c.object(args[2], func(o kv.Object) {
		if o.Shared {
			c.out.Int(math.MaxInt32)
		} else {
			c.out.Int(1)
		}
	})
}

func (c *conn) object(key []byte, reply func(kv.Object)) {
	o, ok, err := c.store.Object(key)
	switch {
	case err != nil:
		c.storeError(err)
	case !ok:
		c.out.Null()
	default:
		reply(o)
	}
}

// cmdObjectFreq is OBJECT FREQ key, answered as Redis answers it under
// tenure's only policy, noeviction: access frequencies are not tracked.
func cmdObjectFreq(c *conn, args [][]byte) {
	c.out.Err("An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
}

func cmdObjectHelp(c *conn, args [][]byte) {
	c.out.BulkStrings(
		"OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"ENCODING <key>",
		"    Return the kind of internal representation used in order to store the value",
		"    associated with a <key>.",
		"REFCOUNT <key>",
		"    Return the number of references of the value associated with the specified",
		"    <key>: as Redis would hold the value, which shares small integers.",
		"FREQ <key>",
		"    Return the access frequency index of the <key>. The returned integer is",
		"    proportional to the logarithm of the recent access frequency of the key.",
		"    tenure keeps no access frequencies: it answers as Redis does without an LFU policy.",
		"HELP",
		"    Print this help.",
	)
}
