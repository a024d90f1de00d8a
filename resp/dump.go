package resp

import (
	"errors"

	"github.com/tenure-db/tenure/internal/dump"
	"github.com/tenure-db/tenure/kv"
)

// DUMP and RESTORE: a key's value as Redis serializes it (internal/dump),
// so that keys move between tenure and Redis: a Redis's MIGRATE into
// tenure, or tenure's DUMP into a Redis's RESTORE.

// cmdDump is DUMP key: the value's payload, or null for a missing key.
func cmdDump(c *conn, args [][]byte) {
	var payload []byte
	found := false
	err := c.atomically(func(store *kv.Store) error {
		v, ok, err := dumpValue(store, args[1])
		if ok && err == nil {
			payload, found = dump.Encode(v), true
		}
		return err
	})
	switch {
	case err != nil:
		c.storeError(err)
	case !found:
		c.out.Null()
	default:
		c.out.Bulk(payload)
	}
}

// dumpValue reads key's value whole, on a transaction's view so that no
// write falls between its type and its contents.
func dumpValue(store *kv.Store, key []byte) (v dump.Value, found bool, err error) {
	typ, err := store.Type(key)
	if err != nil {
		return v, false, err
	}
	found = true
	switch typ {
	case "none":
		return v, false, nil
	case "string":
		v.Kind = dump.String
		v.Str, found, err = store.Get(key)
	case "list":
		v.Kind = dump.List
		v.Elems, err = store.LRange(key, 0, -1)
	case "set":
		v.Kind = dump.Set
		v.Elems, err = store.SMembers(key)
	case "hash":
		v.Kind = dump.Hash
		v.Elems, err = store.HGetAll(key, true, true)
	case "zset":
		v.Kind = dump.ZSet
		var ms []kv.ZMember
		ms, err = store.ZRange(key, kv.ZRangeSpec{By: kv.ByRank, Start: 0, Stop: -1})
		for _, m := range ms {
			v.Elems, v.Scores = append(v.Elems, m.Member), append(v.Scores, m.Score)
		}
	default:
		return v, false, errors.New("dump: a key of type " + typ)
	}
	return v, found && err == nil, err
}

// restoreArgs are RESTORE's options.
type restoreArgs struct {
	replace, absTTL bool
}

// cmdRestore is RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s]
// [FREQ f], with Redis's checks in Redis's order: the options, the key
// (BUSYKEY without REPLACE), the TTL, the payload's footer, its value. A
// TTL of 0 is none; one already past leaves no key (and deletes the old
// one with REPLACE). IDLETIME and FREQ are checked and have no effect:
// tenure keeps no access times for eviction.
func cmdRestore(c *conn, args [][]byte) {
	var o restoreArgs
	hint := "" // "idletime" or "freq": Redis takes one of them, as often as given
	for j := 4; j < len(args); j++ {
		more := j+1 < len(args)
		switch option(args[j]) {
		case "replace":
			o.replace = true
		case "absttl":
			o.absTTL = true
		case "idletime", "freq":
			name := option(args[j])
			if !more || (hint != "" && hint != name) {
				c.out.Err(errSyntax)
				return
			}
			if msg := restoreHint(name, args[j+1]); msg != "" {
				c.out.Err(msg)
				return
			}
			hint = name
			j++
		default:
			c.out.Err(errSyntax)
			return
		}
	}
	key := args[1]
	// Decoded before the transaction, which holds every stripe; its
	// error is answered in its turn, after the key's and the TTL's.
	v, decoded := dump.Decode(args[3])
	var reply func()
	err := c.atomically(func(store *kv.Store) error {
		var err error
		reply, err = c.restore(store, key, args[2], v, decoded, o)
		return err
	})
	if err != nil {
		c.storeError(err)
		return
	}
	reply()
}

// restoreHint checks RESTORE's IDLETIME or FREQ value, with Redis's
// texts: "" when it is good.
func restoreHint(name string, v []byte) string {
	n, ok := parseInt(v)
	switch {
	case !ok:
		return errNotInteger
	case name == "idletime" && n < 0:
		return "Invalid IDLETIME value, must be >= 0"
	case name == "freq" && (n < 0 || n > 255):
		return "Invalid FREQ value, must be >= 0 and <= 255"
	}
	return ""
}

// restore is RESTORE on store, a transaction's view, of v or of the
// payload's error. It returns the reply to send once the transaction has
// committed. The key keeps the fence it remembered (SPEC §3): REPLACE
// replaces a value, as COPY … REPLACE does, and only DEL forgets a fence.
func (c *conn) restore(store *kv.Store, key, ttlArg []byte, v dump.Value, decoded error, o restoreArgs) (func(), error) {
	if !o.replace {
		n, err := store.Exists([][]byte{key})
		if err != nil {
			return nil, err
		}
		if n > 0 {
			return func() { c.out.Error("BUSYKEY", "Target key name already exists.") }, nil
		}
	}
	ttl, ok := parseInt(ttlArg)
	switch {
	case !ok:
		return func() { c.out.Err(errNotInteger) }, nil
	case ttl < 0:
		return func() { c.out.Err("Invalid TTL value, must be >= 0") }, nil
	}
	if decoded != nil {
		return func() { c.out.Err(decoded.Error()) }, nil
	}
	deleted, fence := false, uint64(0)
	if o.replace {
		var err error
		if fence, err = store.Fence(key); err != nil {
			return nil, err
		}
		n, err := store.Del([][]byte{key})
		if err != nil {
			return nil, err
		}
		deleted = n > 0
	}
	now := c.nowMs()
	if ttl != 0 && !o.absTTL {
		ttl += now
	}
	if ttl != 0 && ttl <= now {
		// Already expired: nothing is created, as in Redis.
		return func() {
			if deleted {
				c.notify(notifyGeneric, "del", key)
			}
			c.out.OK()
		}, nil
	}
	if err := restoreValue(store, key, v); err != nil {
		return nil, err
	}
	if fence != 0 {
		if err := store.RaiseFence(key, fence); err != nil {
			return nil, err
		}
	}
	if ttl != 0 {
		if _, err := store.ExpireAt(key, ttl, kv.CondNone); err != nil {
			return nil, err
		}
	}
	return func() {
		c.ready(key)
		c.notify(notifyGeneric, "restore", key)
		c.out.OK()
	}, nil
}

// restoreValue writes v to key, which is missing.
func restoreValue(store *kv.Store, key []byte, v dump.Value) error {
	var err error
	switch v.Kind {
	case dump.String:
		_, err = store.Set(key, v.Str, kv.SetOptions{})
	case dump.List:
		_, err = store.Push(key, false, false, v.Elems)
	case dump.Set:
		_, err = store.SAdd(key, v.Elems)
	case dump.Hash:
		_, err = store.HSet(key, v.Elems)
	case dump.ZSet:
		_, err = store.ZAdd(key, kv.ZAddFlags{}, v.Scores, v.Elems)
	}
	return err
}

// atomically runs fn as one transaction: on the view it is already in
// (inside EXEC, a script, or a cluster's entry), else in one of its own,
// committed when fn returns. An error is fn's or the commit's; in a
// transaction of its own, nothing fn wrote happened then.
func (c *conn) atomically(fn func(store *kv.Store) error) (err error) {
	if c.store != c.srv.store {
		return fn(c.store)
	}
	defer func() {
		if p := recover(); p != nil {
			d, ok := p.(txDiscarded)
			if !ok {
				panic(p)
			}
			err = d.err
		}
	}()
	_, err = c.srv.store.Tx(nil, func(tx *kv.Store) {
		c.store = tx
		defer func() { c.store = c.srv.store }()
		if err := fn(tx); err != nil {
			panic(txDiscarded{err}) // Tx commits nothing of a transaction it panics out of
		}
	})
	return err
}

// txDiscarded carries the error of atomically's fn out of kv.Store.Tx.
type txDiscarded struct{ err error }
