package kv

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// plant makes key a collection of type typ with n members, as the commands
// of that type will (there are none yet): a metadata record with a fresh
// generation, and a record per member under it, in one batch. It returns
// the generation.
func (ts *testStore) plant(key string, typ Type, n int, expiry int64) uint64 {
	ts.t.Helper()
	gen := ts.newGeneration()
	err := ts.update([]byte(key), false, func(c *change, it *item) error {
		for i := range n {
			_ = c.batch().Set(memberKey(gen, fmt.Appendf(nil, "m%04d", i)), []byte("v"), nil)
		}
		r := collection(typ, gen, uint64(n))
		r.expiry = expiry
		c.put(it, r)
		return nil
	})
	if err != nil {
		ts.t.Fatalf("plant %q: %v", key, err)
	}
	return gen
}

// members counts the member records of generation gen on disk.
func (ts *testStore) members(gen uint64) int {
	ts.t.Helper()
	iter, err := ts.db.NewIter(nil)
	if err != nil {
		ts.t.Fatal(err)
	}
	defer iter.Close()
	n := 0
	for valid := iter.SeekGE(memberPrefix(gen)); valid && string(iter.Key()) < string(memberPrefix(gen+1)); valid = iter.Next() {
		n++
	}
	return n
}

// Every string command on a key of another type is WRONGTYPE and changes
// nothing; the key commands take any type; SET and MSET overwrite one.
func TestWrongType(t *testing.T) {
	ts := openTest(t)
	ts.plant("h", TypeHash, 3, 0)
	ts.set("s", "abc")
	wrong := map[string]func() error{
		"GET":         func() error { _, _, err := ts.Get([]byte("h")); return err },
		"GETDEL":      func() error { _, _, err := ts.GetDel([]byte("h")); return err },
		"GETEX":       func() error { _, _, err := ts.GetEx([]byte("h"), Expiry{Mode: ExpiryPersist}); return err },
		"SET GET":     func() error { _, err := ts.Set([]byte("h"), []byte("x"), SetOptions{Get: true}); return err },
		"INCRBY":      func() error { _, err := ts.IncrBy([]byte("h"), 1); return err },
		"INCRBYFLOAT": func() error { _, err := ts.IncrByFloat([]byte("h"), 1); return err },
		"APPEND":      func() error { _, err := ts.Append([]byte("h"), []byte("x")); return err },
		"SETRANGE":    func() error { _, err := ts.SetRange([]byte("h"), 0, []byte("x")); return err },
		"STRLEN":      func() error { _, err := ts.StrLen([]byte("h")); return err },
		"GETRANGE":    func() error { _, err := ts.GetRange([]byte("h"), 0, -1); return err },
		"SETBIT":      func() error { _, err := ts.SetBit([]byte("h"), 1, true); return err },
		"GETBIT":      func() error { _, err := ts.GetBit([]byte("h"), 1); return err },
		"BITCOUNT":    func() error { _, err := ts.BitCount([]byte("h"), BitRange{}); return err },
		"BITPOS":      func() error { _, err := ts.BitPos([]byte("h"), 1, BitRange{}); return err },
		"BITOP":       func() error { _, err := ts.BitOp(BitOr, []byte("dst"), bs("s", "h")); return err },
		"LCS":         func() error { _, err := ts.LCS([]byte("s"), []byte("h"), false, 0); return err },
		"GETFUNC":     func() error { _, err := ts.GetFunc([]byte("h"), func([]byte) {}); return err },
		"SET IFEQ": func() error {
			_, err := ts.Set([]byte("h"), []byte("x"), SetOptions{Cond: Condition{Kind: IfEq}})
			return err
		},
		"SET IFDNE": func() error {
			_, err := ts.Set([]byte("h"), []byte("x"), SetOptions{Cond: Condition{Kind: IfDigestNe}})
			return err
		},
		"DELEX IFNE":  func() error { _, err := ts.DelIf([]byte("h"), Condition{Kind: IfNe}); return err },
		"DELEX IFDEQ": func() error { _, err := ts.DelIf([]byte("h"), Condition{Kind: IfDigestEq}); return err },
		"DIGEST":      func() error { _, _, err := ts.DigestOf([]byte("h")); return err },
	}
	for name, f := range wrong {
		if err := f(); !errors.Is(err, ErrWrongType) {
			t.Errorf("%s on a hash = %v; want ErrWrongType", name, err)
		}
	}
	if typ, _ := ts.Type([]byte("h")); typ != "hash" {
		t.Errorf("TYPE = %q, want hash (the writes above changed it?)", typ)
	}
	ts.mustMissing("dst")
	if vs, err := ts.MGet(bs("s", "h")); err != nil || string(vs[0]) != "abc" || vs[1] != nil {
		t.Errorf("MGET s h = %q, %v; want abc and nil", vs, err)
	}
	if n, err := ts.Exists(bs("h")); n != 1 || err != nil {
		t.Errorf("EXISTS h = %d, %v", n, err)
	}
	if obj, ok, err := ts.Object([]byte("h")); !ok || err != nil || obj.Encoding != "listpack" {
		t.Errorf("OBJECT h = %+v, %v, %v", obj, ok, err)
	}
	for typ, want := range map[string]int{"hash": 1, "string": 1, "set": 0, "HASH": 1, "nosuchtype": 0} {
		if _, keys, err := ts.Scan(0, nil, 100, typ); err != nil || len(keys) != want {
			t.Errorf("SCAN TYPE %s = %q, %v; want %d keys", typ, keys, err, want)
		}
	}
	if ok, err := ts.ExpireAt([]byte("h"), ts.clock.ms(time.Hour), CondNone); !ok || err != nil {
		t.Errorf("EXPIRE h = %v, %v", ok, err)
	}
	if ttl := ts.ttl("h"); ttl != time.Hour.Milliseconds() {
		t.Errorf("TTL h = %d", ttl)
	}
	if _, err := ts.Set([]byte("h"), []byte("now a string"), SetOptions{}); err != nil {
		t.Fatal(err)
	}
	ts.mustGet("h", "now a string")
	if ts.raw(nsReclaim) != 1 {
		t.Errorf("the overwritten hash's generation is not in the reclaim index")
	}
	ts.checkCounters()
}

// DEL of a collection deletes its metadata record and marks its generation
// stale, in one small batch, whatever its size; its members are never seen
// again, and the background reclaim deletes them. Expiry does the same.
func TestCollectionDeleteIsReclaimed(t *testing.T) {
	ts := openTest(t)
	gen := ts.plant("big", TypeSet, 5000, 0)
	if got := ts.members(gen); got != 5000 {
		t.Fatalf("%d members planted", got)
	}
	var batchLen int
	err := ts.update([]byte("big"), false, func(c *change, it *item) error {
		c.del(it)
		batchLen = c.b.Len()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if batchLen > 200 {
		t.Errorf("DEL's batch is %d bytes: it touched the members", batchLen)
	}
	if typ, _ := ts.Type([]byte("big")); typ != "none" {
		t.Errorf("TYPE after DEL = %q", typ)
	}
	if ts.raw(nsReclaim) != 1 || ts.members(gen) != 5000 {
		t.Errorf("after DEL: %d reclaim entries, %d members; want 1 and 5000 (not yet reclaimed)", ts.raw(nsReclaim), ts.members(gen))
	}
	// A new collection under the same name never sees the old members.
	gen2 := ts.plant("big", TypeSet, 2, 0)
	if gen2 <= gen {
		t.Errorf("new generation %d, not after %d", gen2, gen)
	}
	if n, err := ts.reclaim(reclaimRound); n != 1 || err != nil {
		t.Errorf("reclaim = %d, %v", n, err)
	}
	if ts.members(gen) != 0 || ts.raw(nsReclaim) != 0 || ts.members(gen2) != 2 {
		t.Errorf("after reclaim: %d old members, %d entries, %d new members", ts.members(gen), ts.raw(nsReclaim), ts.members(gen2))
	}

	// Expiry, by the sweep.
	gen3 := ts.plant("ttl", TypeZSet, 10, ts.clock.ms(time.Second))
	ts.clock.Advance(2 * time.Second)
	if err := ts.sweep(0); err != nil {
		t.Fatal(err)
	}
	if typ, _ := ts.Type([]byte("ttl")); typ != "none" || ts.raw(nsReclaim) != 1 {
		t.Errorf("after expiry: TYPE %q, %d reclaim entries", typ, ts.raw(nsReclaim))
	}
	if err := ts.reclaimAll(); err != nil || ts.members(gen3) != 0 {
		t.Errorf("reclaimAll: %v, %d members left", err, ts.members(gen3))
	}
	ts.checkCounters()
}

// RENAME moves a collection's metadata record alone: the generation, and
// so the members, go with it. COPY copies the members under a new one.
// FLUSHALL deletes members and the reclaim index with the rest.
func TestCollectionRenameCopyFlush(t *testing.T) {
	ts := openTest(t)
	gen := ts.plant("a", TypeHash, 4, 0)
	if err := ts.Rename([]byte("a"), []byte("b")); err != nil {
		t.Fatal(err)
	}
	if ts.raw(nsReclaim) != 0 || ts.members(gen) != 4 {
		t.Errorf("RENAME: %d reclaim entries, %d members", ts.raw(nsReclaim), ts.members(gen))
	}
	if typ, _ := ts.Type([]byte("b")); typ != "hash" {
		t.Errorf("TYPE b = %q", typ)
	}
	ts.set("c", "string")
	if ok, err := ts.Copy([]byte("b"), []byte("c"), true); !ok || err != nil {
		t.Fatalf("COPY = %v, %v", ok, err)
	}
	if typ, _ := ts.Type([]byte("c")); typ != "hash" {
		t.Errorf("TYPE c = %q", typ)
	}
	var copied uint64
	err := ts.update([]byte("c"), false, func(c *change, it *item) error {
		copied = it.cur.rec.generation()
		if it.cur.rec.size() != 4 {
			t.Errorf("copy's size %d", it.cur.rec.size())
		}
		return nil
	})
	if err != nil || copied == gen || ts.members(copied) != 4 || ts.members(gen) != 4 {
		t.Errorf("COPY: generation %d (source %d), %d and %d members, %v", copied, gen, ts.members(copied), ts.members(gen), err)
	}
	// The generation counter survives a reopen: it starts past the disk's.
	ts.reopen()
	if g := ts.newGeneration(); g <= copied {
		t.Errorf("after reopen, new generation %d <= %d on disk", g, copied)
	}
	if _, err := ts.Del(bs("b")); err != nil {
		t.Fatal(err)
	}
	if err := ts.FlushAll(); err != nil {
		t.Fatal(err)
	}
	if ts.raw(nsMember) != 0 || ts.raw(nsReclaim) != 0 || ts.raw(nsKey) != 0 {
		t.Errorf("FLUSHALL left %d members, %d reclaim entries, %d records", ts.raw(nsMember), ts.raw(nsReclaim), ts.raw(nsKey))
	}
	ts.checkCounters()
}

// Inside a transaction, and through the metadata cache (which keeps a
// collection's header), a DEL still finds the generation to mark stale.
func TestCollectionDeleteInTx(t *testing.T) {
	ts := openTest(t)
	gen := ts.plant("h", TypeHash, 3, 0)
	if _, err := ts.Exists(bs("h")); err != nil { // cached
		t.Fatal(err)
	}
	if _, err := ts.Tx(nil, func(tx *Store) {
		if n, err := tx.Del(bs("h")); n != 1 || err != nil {
			t.Errorf("DEL in tx = %d, %v", n, err)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if ts.raw(nsReclaim) != 1 {
		t.Errorf("%d reclaim entries after DEL in a tx", ts.raw(nsReclaim))
	}
	gen2 := ts.plant("h", TypeHash, 1, 0)
	if _, err := ts.Del(bs("h")); err != nil {
		t.Fatal(err)
	}
	if ts.raw(nsReclaim) != 2 {
		t.Errorf("%d reclaim entries after DEL through the cache", ts.raw(nsReclaim))
	}
	if err := ts.reclaimAll(); err != nil || ts.members(gen)+ts.members(gen2) != 0 {
		t.Errorf("reclaimAll: %v", err)
	}
}

// A record of an unknown type code is corrupt; a known one decodes.
func TestDecodeRecordTypes(t *testing.T) {
	for typ := range numTypes {
		r := record{typ: typ, expiry: 5, fence: 6, value: []byte("0123456789abcdef")}
		buf := make([]byte, r.encodedLen())
		r.encodeTo(buf)
		got, err := decodeRecord(buf)
		if err != nil || got.typ != typ || got.expiry != 5 || got.fence != 6 || string(got.value) != string(r.value) {
			t.Errorf("%s: decoded %+v, %v", typ, got, err)
		}
	}
	if _, err := decodeRecord([]byte{0x09, 0}); err == nil {
		t.Error("type code 0x09 decoded")
	}
	if _, err := decodeRecord([]byte{typeCodes[TypeHash], 0, 1, 2}); err == nil {
		t.Error("a hash with a 2-byte header decoded")
	}
	if c := TypeString.code(); c != 0x01 {
		t.Errorf("string's code %#x: format 1 records would not read", c)
	}
}
