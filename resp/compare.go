package resp

import "github.com/tenure-db/tenure/kv"

// Compare-and-set, as Redis 8.4 and Valkey 9 spell it (SPEC §13): SET's
// IFEQ|IFNE|IFDEQ|IFDNE (in cmdSet), DELEX, DIGEST and DELIFEQ.

// errDigest is the reply to an IFDEQ or IFDNE digest that is not 16 hex
// digits: Redis's text since 8.4 (redis/redis#14502, which also made
// DIGEST pad to 16 digits and the comparison case-insensitive).
const errDigest = "must be exactly 16 hexadecimal characters"

// condOpt collects one of IFEQ, IFNE, IFDEQ, IFDNE: a second one, of any
// kind, is a syntax error, as is one given with NX or XX.
type condOpt struct {
	given bool
	kind  kv.CondKind
	arg   []byte
}

// options are the four condition words; other says NX or XX was given.
func (k *condOpt) options(other func() bool) []opt {
	word := func(name string, kind kv.CondKind) opt {
		return opt{name: name, value: true, set: func(v []byte) string {
			if k.given || other() {
				return errSyntax
			}
			k.given, k.kind, k.arg = true, kind, v
			return ""
		}}
	}
	return []opt{word("ifeq", kv.IfEq), word("ifne", kv.IfNe), word("ifdeq", kv.IfDigestEq), word("ifdne", kv.IfDigestNe)}
}

// condition is the kv form, or the error text for a malformed digest.
func (k *condOpt) condition() (kv.Condition, string) {
	switch k.kind {
	case kv.IfDigestEq, kv.IfDigestNe:
		d, ok := kv.ParseDigest(k.arg)
		if !ok {
			return kv.Condition{}, errDigest
		}
		return kv.Condition{Kind: k.kind, Digest: d}, ""
	}
	return kv.Condition{Kind: k.kind, Value: k.arg}, ""
}

// cmdDelEx is DELEX key [IFEQ v|IFNE v|IFDEQ d|IFDNE d]: 1 when the key
// was deleted, 0 when it was missing or the condition said no. Without a
// condition it is DEL of one key, of any type.
func cmdDelEx(c *conn, args [][]byte) {
	var cond condOpt
	if len(args) != 2 && len(args) != 4 {
		c.out.Err(errSyntax)
		return
	}
	if msg := parseRedisOptions(args[2:], cond.options(func() bool { return false })...); msg != "" {
		c.out.Err(msg)
		return
	}
	k, msg := cond.condition()
	if msg != "" {
		c.out.Err(msg)
		return
	}
	deleted, err := c.store.DelIf(args[1], k)
	if err != nil {
		c.storeError(err)
		return
	}
	if deleted {
		c.notify(notifyGeneric, "del", args[1])
	}
	c.out.Bool(deleted)
}

// cmdDelIfEq is Valkey's DELIFEQ key value: DELEX key IFEQ value.
func cmdDelIfEq(c *conn, args [][]byte) {
	deleted, err := c.store.DelIf(args[1], kv.Condition{Kind: kv.IfEq, Value: args[2]})
	if err != nil {
		c.storeError(err)
		return
	}
	if deleted {
		c.notify(notifyGeneric, "del", args[1])
	}
	c.out.Bool(deleted)
}

// cmdDigest is DIGEST key: the XXH3-64 of the string value as 16
// lowercase hex digits, null for a missing key.
func cmdDigest(c *conn, args [][]byte) {
	d, ok, err := c.store.DigestOf(args[1])
	switch {
	case err != nil:
		c.storeError(err)
	case !ok:
		c.out.Null()
	default:
		c.out.Bulk([]byte(kv.DigestHex(d)))
	}
}
