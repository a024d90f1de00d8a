package kv

import (
	"fmt"
	"slices"
	"testing"
)

// Inside a transaction, which holds every stripe, a key none of its
// commands wrote is read through the metadata cache, as outside; a key one
// of them wrote is read from what that command left; after a FLUSHALL in
// the transaction every key is read from its batch. The cache is made to
// disagree with the disk here, so that each answer shows where it came
// from.
func TestTxReadsTheCacheOnlyForKeysItDidNotWrite(t *testing.T) {
	ts := openTest(t)
	keys := []string{"a", "b", "c", "d", "e"}
	for _, k := range keys {
		if _, err := ts.Set([]byte(k), []byte("disk"), SetOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	poke := func(k string) {
		it := ts.newItem([]byte(k))
		it.st.Lock()
		it.st.meta.put(dataKeyHash(it.dk), it.key, keyMeta{typ: TypeString, valued: true}, []byte("cache"), ts.metaPerStripe)
		it.st.Unlock()
	}
	for _, k := range keys {
		poke(k)
	}
	var got []string
	_, err := ts.Tx(nil, func(tx *Store) {
		get := func(k string) {
			v, ok, err := tx.Get([]byte(k))
			got = append(got, fmt.Sprintf("%s=%s %v %v", k, v, ok, err))
		}
		must := func(_ int64, err error) {
			if err != nil {
				t.Error(err)
			}
		}
		get("a") // untouched: the cache
		if _, err := tx.Set([]byte("b"), []byte("tx"), SetOptions{}); err != nil {
			t.Error(err)
		}
		get("b") // written: what the SET left
		must(tx.Append([]byte("c"), []byte("+")))
		get("c") // an update loads an untouched key from the cache too
		must(tx.Del([][]byte{[]byte("d")}))
		get("d") // deleted in the transaction: gone, whatever the cache says
		if err := tx.FlushAll(); err != nil {
			t.Error(err)
		}
		get("e") // after FLUSHALL: the batch's range deletion
		must(tx.Append([]byte("e"), []byte("new")))
		get("e")
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"a=cache true <nil>",
		"b=tx true <nil>",
		"c=cache+ true <nil>",
		"d= false <nil>",
		"e= false <nil>",
		"e=new true <nil>",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("reads in the transaction:\n got %q\nwant %q", got, want)
	}
}
