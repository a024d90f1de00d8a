package resp

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/tenure-db/tenure/kv"
)

// String commands: GET, SET (with FENCE), SETNX, SETEX, PSETEX, GETSET,
// GETDEL, GETEX, MGET, MSET, MSETNX, INCR…, APPEND, STRLEN, GETRANGE,
// SETRANGE.

// storeError answers an error from the store: Redis's texts for Redis's
// errors, FENCED for LOCK-12, and ERR for a failing disk.
func (c *Conn) storeError(err error) {
	for _, e := range []error{
		kv.ErrNotInteger, kv.ErrNotFloat, kv.ErrOverflow, kv.ErrNaN, kv.ErrNoSuchKey,
		kv.ErrTooLarge, kv.ErrOffsetOutOfRange,
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
	c.srv.log.Error("store failed", "err", err)
	c.out.Err("store failed: " + err.Error())
}

// expiryArg turns an EX/PX/EXAT/PXAT argument into an absolute unix ms
// time, with Redis's checks and texts.
func expiryArg(unit string, arg []byte, cmd string) (int64, string) {
	n, ok := parseInt(arg)
	if !ok {
		return 0, errNotInteger
	}
	invalid := "invalid expire time in '" + cmd + "' command"
	if n <= 0 {
		return 0, invalid
	}
	seconds := unit == "ex" || unit == "exat"
	if seconds {
		if n > math.MaxInt64/1000 {
			return 0, invalid
		}
		n *= 1000
	}
	if unit == "ex" || unit == "px" {
		now := time.Now().UnixMilli()
		if n > math.MaxInt64-now {
			return 0, invalid
		}
		n += now
	}
	return n, ""
}

func cmdGet(c *Conn, args [][]byte) {
	v, ok, err := c.srv.store.Get(args[1])
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.BulkOrNull(v, ok)
}

// cmdSet is SET key value [NX|XX] [GET] [EX s|PX ms|EXAT t|PXAT t|KEEPTTL]
// [FENCE f]. With FENCE, LOCK-12: a key that remembers a larger fence is
// not written.
func cmdSet(c *Conn, args [][]byte) {
	var o kv.SetOptions
	hasExpiry := false
	for i := 3; i < len(args); i++ {
		opt := strings.ToLower(string(args[i]))
		switch {
		case opt == "nx" && !o.XX:
			o.NX = true
		case opt == "xx" && !o.NX:
			o.XX = true
		case opt == "get":
			o.Get = true
		case opt == "keepttl" && !hasExpiry:
			o.Expiry = kv.Expiry{Mode: kv.ExpiryKeep}
			hasExpiry = true
		case (opt == "ex" || opt == "px" || opt == "exat" || opt == "pxat") && !hasExpiry && i+1 < len(args):
			at, msg := expiryArg(opt, args[i+1], "set")
			if msg != "" {
				c.out.Err(msg)
				return
			}
			o.Expiry = kv.Expiry{Mode: kv.ExpiryAt, At: at}
			hasExpiry = true
			i++
		case opt == "fence" && o.Fence == 0 && i+1 < len(args):
			f, err := strconv.ParseUint(string(args[i+1]), 10, 64)
			if err != nil || f == 0 {
				c.out.Err("FENCE must be a positive integer")
				return
			}
			o.Fence = f
			i++
		default:
			c.syntaxError()
			return
		}
	}
	res, err := c.srv.store.Set(args[1], args[2], o)
	if err != nil {
		c.storeError(err)
		return
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

func cmdSetNX(c *Conn, args [][]byte) {
	res, err := c.srv.store.Set(args[1], args[2], kv.SetOptions{NX: true})
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.Bool(res.Written)
}

func cmdSetEX(c *Conn, args [][]byte)  { setWithExpiry(c, args, "ex", "setex") }
func cmdPSetEX(c *Conn, args [][]byte) { setWithExpiry(c, args, "px", "psetex") }

func setWithExpiry(c *Conn, args [][]byte, unit, name string) {
	at, msg := expiryArg(unit, args[2], name)
	if msg != "" {
		c.out.Err(msg)
		return
	}
	if _, err := c.srv.store.Set(args[1], args[3], kv.SetOptions{Expiry: kv.Expiry{Mode: kv.ExpiryAt, At: at}}); err != nil {
		c.storeError(err)
		return
	}
	c.out.OK()
}

func cmdGetSet(c *Conn, args [][]byte) {
	res, err := c.srv.store.Set(args[1], args[2], kv.SetOptions{Get: true})
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.BulkOrNull(res.Old, res.OldExists)
}

func cmdGetDel(c *Conn, args [][]byte) {
	v, ok, err := c.srv.store.GetDel(args[1])
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.BulkOrNull(v, ok)
}

// cmdGetEx is GETEX key [EX s|PX ms|EXAT t|PXAT t|PERSIST].
func cmdGetEx(c *Conn, args [][]byte) {
	var e kv.Expiry // the zero Expiry leaves the TTL as it is
	set := false
	for i := 2; i < len(args); i++ {
		opt := strings.ToLower(string(args[i]))
		switch {
		case opt == "persist" && !set:
			e.Mode = kv.ExpiryPersist
			set = true
		case (opt == "ex" || opt == "px" || opt == "exat" || opt == "pxat") && !set && i+1 < len(args):
			at, msg := expiryArg(opt, args[i+1], "getex")
			if msg != "" {
				c.out.Err(msg)
				return
			}
			e = kv.Expiry{Mode: kv.ExpiryAt, At: at}
			set = true
			i++
		default:
			c.syntaxError()
			return
		}
	}
	v, ok, err := c.srv.store.GetEx(args[1], e)
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.BulkOrNull(v, ok)
}

func cmdMGet(c *Conn, args [][]byte) {
	vals, err := c.srv.store.MGet(args[1:])
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.Array(len(vals))
	for _, v := range vals {
		c.out.BulkOrNull(v, v != nil)
	}
}

func cmdMSet(c *Conn, args [][]byte) {
	if len(args)%2 == 0 {
		c.wrongArity("mset")
		return
	}
	if err := c.srv.store.MSet(args[1:]); err != nil {
		c.storeError(err)
		return
	}
	c.out.OK()
}

func cmdMSetNX(c *Conn, args [][]byte) {
	if len(args)%2 == 0 {
		c.wrongArity("msetnx")
		return
	}
	ok, err := c.srv.store.MSetNX(args[1:])
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.Bool(ok)
}

func cmdIncr(c *Conn, args [][]byte) { incrBy(c, args[1], 1) }
func cmdDecr(c *Conn, args [][]byte) { incrBy(c, args[1], -1) }

func cmdIncrBy(c *Conn, args [][]byte) {
	n, ok := parseInt(args[2])
	if !ok {
		c.out.Err(errNotInteger)
		return
	}
	incrBy(c, args[1], n)
}

func cmdDecrBy(c *Conn, args [][]byte) {
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

func incrBy(c *Conn, key []byte, delta int64) {
	n, err := c.srv.store.IncrBy(key, delta)
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.Int(n)
}

func cmdIncrByFloat(c *Conn, args [][]byte) {
	d, err := strconv.ParseFloat(string(args[2]), 64)
	if err != nil || len(args[2]) == 0 || isSpace(args[2][0]) || isSpace(args[2][len(args[2])-1]) || math.IsNaN(d) || math.IsInf(d, 0) {
		c.out.Err(kv.ErrNotFloat.Error())
		return
	}
	v, err := c.srv.store.IncrByFloat(args[1], d)
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.Bulk(v)
}

func cmdAppend(c *Conn, args [][]byte) {
	n, err := c.srv.store.Append(args[1], args[2])
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.Int(n)
}

func cmdStrLen(c *Conn, args [][]byte) {
	n, err := c.srv.store.StrLen(args[1])
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.Int(n)
}

func cmdGetRange(c *Conn, args [][]byte) {
	start, ok1 := parseInt(args[2])
	end, ok2 := parseInt(args[3])
	if !ok1 || !ok2 {
		c.out.Err(errNotInteger)
		return
	}
	v, err := c.srv.store.GetRange(args[1], start, end)
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.Bulk(v)
}

func cmdSetRange(c *Conn, args [][]byte) {
	off, ok := parseInt(args[2])
	if !ok {
		c.out.Err(errNotInteger)
		return
	}
	if off < 0 {
		c.out.Err(kv.ErrOffsetOutOfRange.Error())
		return
	}
	n, err := c.srv.store.SetRange(args[1], off, args[3])
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.Int(n)
}
