package resp

import (
	"errors"
	"math"
	"strings"

	"github.com/tenure-db/tenure/kv"

	"github.com/tenure-db/tenure/internal/redistext"
)

// String commands: GET, SET (with FENCE), SETNX, SETEX, PSETEX, GETSET,
// GETDEL, GETEX, MGET, MSET, MSETNX, INCR…, APPEND, STRLEN, GETRANGE,
// SETRANGE, SUBSTR, LCS. The bit commands are in bitmaps.go.

// storeError answers an error from the store: Redis's texts for Redis's
// errors, FENCED for LOCK-12, WRONGTYPE for a key of another type, and
// ERR for a failing disk.
func (c *conn) storeError(err error) {
	for _, e := range []error{
		kv.ErrNotInteger, kv.ErrNotFloat, kv.ErrOverflow, kv.ErrNaN, kv.ErrNoSuchKey,
		kv.ErrTooLarge, kv.ErrOffsetOutOfRange, kv.ErrLCSTooLarge, kv.ErrHashNotInteger, kv.ErrHashNotFloat,
		kv.ErrScoreNaN, kv.ErrIndexOutOfRange,
	} {
		if errors.Is(err, e) {
			c.out.Err(e.Error())
			return
		}
	}
	if errors.Is(err, kv.ErrFenced) {
		c.out.Error("FENCED", kv.ErrFenced.Error())
		return
	}
	if errors.Is(err, kv.ErrWrongType) {
		c.out.Error("WRONGTYPE", kv.ErrWrongType.Error())
		return
	}
	c.srv.log.Error("store failed", "err", err)
	c.out.Err("store failed: " + err.Error())
}

// expiryArg turns an EX/PX/EXAT/PXAT argument into an absolute unix ms
// time, EX and PX counted from now (conn.nowMs), with Redis's checks and
// texts (getExpireMillisecondsOrReply).
func expiryArg(unit string, arg []byte, cmd string, now int64) (int64, string) {
	n, ok := parseInt(arg)
	if !ok {
		return 0, errNotInteger
	}
	invalid := "invalid expire time in '" + cmd + "' command"
	if n <= 0 {
		return 0, invalid
	}
	at, ok := expiryAt(n, unit == "ex" || unit == "exat", unit == "ex" || unit == "px", now)
	if !ok {
		return 0, invalid
	}
	return at, ""
}

// option is an option word as Redis compares it: case-insensitively, and as
// a C string, up to its first NUL.
func option(b []byte) string { return strings.ToLower(cString(b, len(b))) }

// expiryOpts are the expiry options of SET and GETEX as Redis's
// parseExtendedStringArgumentsOrReply reads them: one kind at most, though
// the same word may be repeated (the last value counts); the value is
// checked only once every option has been read.
type expiryOpts struct {
	unit    string // "ex", "px", "exat", "pxat", or "" for none
	value   []byte
	keepTTL bool // SET
	persist bool // GETEX
}

// options are the expiry options of SET (set) or GETEX, for parseOptions:
// a second kind, or KEEPTTL on GETEX and PERSIST on SET, is a syntax error.
func (e *expiryOpts) options(set bool) []opt {
	at := func(unit string) opt {
		return opt{name: unit, value: true, set: func(v []byte) string {
			if e.keepTTL || e.persist || (e.unit != "" && e.unit != unit) {
				return errSyntax
			}
			e.unit, e.value = unit, v
			return ""
		}}
	}
	opts := []opt{at("ex"), at("px"), at("exat"), at("pxat")}
	if set {
		return append(opts, opt{name: "keepttl", set: func([]byte) string {
			if e.unit != "" || e.persist {
				return errSyntax
			}
			e.keepTTL = true
			return ""
		}})
	}
	return append(opts, opt{name: "persist", set: func([]byte) string {
		if e.unit != "" || e.keepTTL {
			return errSyntax
		}
		e.persist = true
		return ""
	}})
}

// expiry checks the value and returns the kv form, or Redis's error text;
// a relative one counts from now (conn.nowMs).
func (e *expiryOpts) expiry(cmd string, now int64) (kv.Expiry, string) {
	switch {
	case e.keepTTL:
		return kv.Expiry{Mode: kv.ExpiryKeep}, ""
	case e.persist:
		return kv.Expiry{Mode: kv.ExpiryPersist}, ""
	case e.unit == "":
		return kv.Expiry{}, ""
	}
	at, msg := expiryArg(e.unit, e.value, cmd, now)
	if msg != "" {
		return kv.Expiry{}, msg
	}
	return kv.Expiry{Mode: kv.ExpiryAt, At: at}, ""
}

// parseFence reads SET's FENCE value: a positive integer as LOCK.HOLD
// grants it, written as Redis writes integers (no sign, no leading zero).
func parseFence(b []byte) (uint64, bool) {
	if len(b) == 0 || b[0] < '1' || b[0] > '9' {
		return 0, false
	}
	return parseDigits(b)
}

// refuseIf sets *flag unless other, an option it may not go with, is set.
func refuseIf(other bool, flag *bool) string {
	if other {
		return errSyntax
	}
	*flag = true
	return ""
}

func cmdGet(c *conn, args [][]byte) {
	// The value is written into the reply straight from Pebble's memory.
	found, err := c.store.GetFunc(args[1], c.out.Bulk)
	switch {
	case err != nil:
		c.storeError(err)
	case !found:
		c.notify(notifyKeyMiss, "keymiss", args[1])
		c.out.Null()
	}
}

// cmdSet is SET key value [NX|XX|IFEQ v|IFNE v|IFDEQ d|IFDNE d] [GET]
// [EX s|PX ms|EXAT t|PXAT t|KEEPTTL] [FENCE f], with Redis's order of
// checks: options first (a syntax error), then the digest's form, then
// the expiry's value, then the fence's. With FENCE, LOCK-12: a key
// that remembers a larger fence is not written.
func cmdSet(c *conn, args [][]byte) {
	if len(args) == 3 {
		// No options: none to parse (parsing builds their table).
		setReply(c, kv.SetOptions{}, args)
		return
	}
	var (
		o       kv.SetOptions
		exp     expiryOpts
		fence   []byte
		isFence bool
	)
	var cond condOpt
	flags := []opt{
		{name: "nx", set: func([]byte) string { return refuseIf(o.XX || cond.given, &o.NX) }},
		{name: "xx", set: func([]byte) string { return refuseIf(o.NX || cond.given, &o.XX) }},
		{name: "get", set: func([]byte) string { o.Get = true; return "" }},
		// tenure's option: at most once, as the lock module's are.
		{name: "fence", value: true, once: true, set: func(v []byte) string { fence, isFence = v, true; return "" }},
	}
	flags = append(flags, cond.options(func() bool { return o.NX || o.XX })...)
	if msg := parseRedisOptions(args[3:], append(flags, exp.options(true)...)...); msg != "" {
		c.out.Err(msg)
		return
	}
	k, msg := cond.condition()
	if msg != "" {
		c.out.Err(msg)
		return
	}
	o.Cond = k
	e, msg := exp.expiry("set", c.nowMs())
	if msg != "" {
		c.out.Err(msg)
		return
	}
	o.Expiry = e
	if isFence {
		f, ok := parseFence(fence)
		if !ok {
			c.out.Err("FENCE must be a positive integer")
			return
		}
		o.Fence = f
	}
	setReply(c, o, args)
}

// setReply runs SET with o and answers it.
func setReply(c *conn, o kv.SetOptions, args [][]byte) {
	res, err := c.store.Set(args[1], args[2], o)
	if err != nil {
		c.storeError(err)
		return
	}
	if res.Written {
		c.notifySet(args[1], o.Expiry)
	}
	switch {
	case o.Get:
		c.out.BulkOrNull(res.Old, res.OldExists)
	case res.Written:
		c.out.OK()
	default:
		c.out.Null()
	}
}

func cmdSetNX(c *conn, args [][]byte) {
	res, err := c.store.Set(args[1], args[2], kv.SetOptions{NX: true})
	if err != nil {
		c.storeError(err)
		return
	}
	if res.Written {
		c.notify(notifyString, "set", args[1])
	}
	c.out.Bool(res.Written)
}

func cmdSetEX(c *conn, args [][]byte)  { setWithExpiry(c, args, "ex", "setex") }
func cmdPSetEX(c *conn, args [][]byte) { setWithExpiry(c, args, "px", "psetex") }

func setWithExpiry(c *conn, args [][]byte, unit, name string) {
	at, msg := expiryArg(unit, args[2], name, c.nowMs())
	if msg != "" {
		c.out.Err(msg)
		return
	}
	e := kv.Expiry{Mode: kv.ExpiryAt, At: at}
	if _, err := c.store.Set(args[1], args[3], kv.SetOptions{Expiry: e}); err != nil {
		c.storeError(err)
		return
	}
	c.notifySet(args[1], e)
	c.out.OK()
}

func cmdGetSet(c *conn, args [][]byte) {
	res, err := c.store.Set(args[1], args[2], kv.SetOptions{Get: true})
	if err != nil {
		c.storeError(err)
		return
	}
	c.notify(notifyString, "set", args[1])
	c.out.BulkOrNull(res.Old, res.OldExists)
}

func cmdGetDel(c *conn, args [][]byte) {
	v, ok, err := c.store.GetDel(args[1])
	if err != nil {
		c.storeError(err)
		return
	}
	if ok {
		c.notify(notifyGeneric, "del", args[1])
	}
	c.out.BulkOrNull(v, ok)
}

// cmdGetEx is GETEX key [EX s|PX ms|EXAT t|PXAT t|PERSIST]. As in Redis,
// the expiry's value is checked only when the key exists: a missing key
// is answered null whatever the value.
func cmdGetEx(c *conn, args [][]byte) {
	var exp expiryOpts
	if msg := parseRedisOptions(args[2:], exp.options(false)...); msg != "" {
		c.out.Err(msg)
		return
	}
	e, msg := exp.expiry("getex", c.nowMs())
	if msg != "" {
		_, ok, err := c.store.Get(args[1])
		switch {
		case err != nil:
			c.storeError(err)
		case !ok:
			c.out.Null()
		default:
			c.out.Err(msg)
		}
		return
	}
	v, ok, err := c.store.GetEx(args[1], e)
	if err != nil {
		c.storeError(err)
		return
	}
	if ok {
		switch e.Mode {
		case kv.ExpiryAt:
			c.notifyExpiry(args[1], e.At)
		case kv.ExpiryPersist:
			c.notify(notifyGeneric, "persist", args[1])
		}
	}
	c.out.BulkOrNull(v, ok)
}

func cmdMGet(c *conn, args [][]byte) {
	vals, err := c.store.MGet(args[1:])
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.Array(len(vals))
	for i, v := range vals {
		if v == nil {
			c.notify(notifyKeyMiss, "keymiss", args[1+i])
		}
		c.out.BulkOrNull(v, v != nil)
	}
}

func cmdMSet(c *conn, args [][]byte) {
	if len(args)%2 == 0 {
		c.wrongArity("mset")
		return
	}
	if err := c.store.MSet(args[1:]); err != nil {
		c.storeError(err)
		return
	}
	for i := 1; i < len(args); i += 2 {
		c.notify(notifyString, "set", args[i])
	}
	c.out.OK()
}

func cmdMSetNX(c *conn, args [][]byte) {
	if len(args)%2 == 0 {
		c.wrongArity("msetnx")
		return
	}
	ok, err := c.store.MSetNX(args[1:])
	if err != nil {
		c.storeError(err)
		return
	}
	if ok {
		for i := 1; i < len(args); i += 2 {
			c.notify(notifyString, "set", args[i])
		}
	}
	c.out.Bool(ok)
}

func cmdIncr(c *conn, args [][]byte) { incrBy(c, args[1], 1) }
func cmdDecr(c *conn, args [][]byte) { incrBy(c, args[1], -1) }

func cmdIncrBy(c *conn, args [][]byte) {
	n, ok := parseInt(args[2])
	if !ok {
		c.out.Err(errNotInteger)
		return
	}
	incrBy(c, args[1], n)
}

func cmdDecrBy(c *conn, args [][]byte) {
	n, ok := parseInt(args[2])
	if !ok {
		c.out.Err(errNotInteger)
		return
	}
	if n == math.MinInt64 {
		c.out.Err("decrement would overflow")
		return
	}
	incrBy(c, args[1], -n)
}

func incrBy(c *conn, key []byte, delta int64) {
	n, err := c.store.IncrBy(key, delta)
	if err != nil {
		c.storeError(err)
		return
	}
	c.notify(notifyString, "incrby", key)
	c.out.Int(n)
}

func cmdIncrByFloat(c *conn, args [][]byte) {
	// Read as the stored value is read; "inf" is a float here too, and the
	// sum then fails as NaN or Infinity, as in Redis.
	d, ok := redistext.ParseFloat(args[2])
	if !ok {
		c.out.Err(kv.ErrNotFloat.Error())
		return
	}
	v, err := c.store.IncrByFloat(args[1], d)
	if err != nil {
		c.storeError(err)
		return
	}
	c.notify(notifyString, "incrbyfloat", args[1])
	c.out.Bulk(v)
}

func cmdAppend(c *conn, args [][]byte) {
	n, err := c.store.Append(args[1], args[2])
	if err != nil {
		c.storeError(err)
		return
	}
	c.notify(notifyString, "append", args[1])
	c.out.Int(n)
}

func cmdStrLen(c *conn, args [][]byte) {
	n, err := c.store.StrLen(args[1])
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.Int(n)
}

func cmdGetRange(c *conn, args [][]byte) {
	start, end, msg := parseIntPair(args[2], args[3])
	if msg != "" {
		c.out.Err(msg)
		return
	}
	v, err := c.store.GetRange(args[1], start, end)
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.Bulk(v)
}

func cmdSetRange(c *conn, args [][]byte) {
	off, ok := parseInt(args[2])
	if !ok {
		c.out.Err(errNotInteger)
		return
	}
	if off < 0 {
		c.out.Err(kv.ErrOffsetOutOfRange.Error())
		return
	}
	n, err := c.store.SetRange(args[1], off, args[3])
	if err != nil {
		c.storeError(err)
		return
	}
	if len(args[3]) > 0 { // as Redis: an empty value changes nothing
		c.notify(notifyString, "setrange", args[1])
	}
	c.out.Int(n)
}

// cmdLCS is LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN],
// with Redis's replies: the subsequence, its length with LEN, or with IDX
// the runs (from the end) and the length.
func cmdLCS(c *conn, args [][]byte) {
	var lenOnly, idx, withLen bool
	var minLen int64
	msg := parseRedisOptions(args[3:],
		opt{name: "len", set: func([]byte) string { lenOnly = true; return "" }},
		opt{name: "idx", set: func([]byte) string { idx = true; return "" }},
		opt{name: "withmatchlen", set: func([]byte) string { withLen = true; return "" }},
		opt{name: "minmatchlen", value: true, set: func(v []byte) string {
			n, ok := parseInt(v)
			if !ok {
				return errNotInteger
			}
			minLen = max(n, 0) // Redis reads a negative length as 0
			return ""
		}},
	)
	if msg != "" {
		c.out.Err(msg)
		return
	}
	if lenOnly && idx {
		c.out.Err("If you want both the length and indexes, please just use IDX.")
		return
	}
	res, err := c.store.LCS(args[1], args[2], idx, minLen)
	if err != nil {
		c.storeError(err)
		return
	}
	switch {
	case lenOnly:
		c.out.Int(res.Len)
	case !idx:
		c.out.Bulk(res.Seq)
	default:
		c.out.Map(2)
		c.out.BulkString("matches")
		c.out.Array(len(res.Matches))
		for _, m := range res.Matches {
			if withLen {
				c.out.Array(3)
			} else {
				c.out.Array(2)
			}
			for _, r := range [][2]int64{m.A, m.B} {
				c.out.Array(2)
				c.out.Int(r[0])
				c.out.Int(r[1])
			}
			if withLen {
				c.out.Int(m.Len)
			}
		}
		c.out.BulkString("len")
		c.out.Int(res.Len)
	}
}
