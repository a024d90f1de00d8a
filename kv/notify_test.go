package kv

import (
	"slices"
	"testing"
	"time"
)

// TestKeyHook (SPEC §13, keyspace notifications): the hook hears of each
// key made and each expired key deleted — on a write over it, by the
// sweep, inside a transaction once it commits — and nothing without a
// hook or after it is removed.
func TestKeyHook(t *testing.T) {
	ts := openTest(t)
	var heard []string
	ts.SetKeyHook(func(ev KeyEvent, key []byte) {
		name := map[KeyEvent]string{KeyNew: "new", KeyExpired: "expired"}[ev]
		heard = append(heard, name+" "+string(key))
	})
	ts.set("a", "1")
	ts.set("a", "2") // not new
	ts.setPX("b", "1", time.Second)
	ts.clock.Advance(2 * time.Second)
	ts.set("b", "2") // b expired, then made again
	ts.setPX("c", "1", time.Second)
	ts.clock.Advance(2 * time.Second)
	if err := ts.sweep(0); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Tx(nil, func(tx *Store) {
		tx.Set([]byte("d"), []byte("1"), SetOptions{})
		tx.Set([]byte("e"), []byte("1"), SetOptions{})
	}); err != nil {
		t.Fatal(err)
	}
	ts.SetKeyHook(nil)
	ts.set("f", "1")
	want := []string{"new a", "new b", "expired b", "new b", "new c", "expired c", "new d", "new e"}
	if !slices.Equal(heard, want) {
		t.Fatalf("heard %q, want %q", heard, want)
	}
}
