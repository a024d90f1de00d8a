package main

import (
	"encoding/json"
	"testing"

	"github.com/tenure-db/tenure/internal/dump"
)

// A RESTORE … REPLACE of a string, as the proxy records it and as a
// history file keeps it, is the plain SET of its value in check (d); any
// other RESTORE is not a register write.
func TestRestoreOnTheWireIsASet(t *testing.T) {
	payload := string(dump.Encode(dump.Value{Kind: dump.String, Str: []byte("r1.7")}))
	e := Event{Kind: evWire, Args: historyArgs([]string{"RESTORE", restoredKey(0), "0", payload, "REPLACE"}), Result: "ok"}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var back Event
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	in, ok := parseSet(back)
	if !ok || in.Key != restoredKey(0) || in.Value != "r1.7" || !in.Set || in.Fence != 0 {
		t.Fatalf("parseSet of a recorded RESTORE: %+v %v", in, ok)
	}
	if !tracked(back.Args) {
		t.Fatal("a RESTORE of a restore register is not tracked")
	}
	for _, args := range [][]string{
		{"RESTORE", restoredKey(0), "0", payload},              // no REPLACE: may be refused, BUSYKEY
		{"RESTORE", restoredKey(0), "100", payload, "REPLACE"}, // a TTL
		{"RESTORE", restoredKey(0), "0", "junk", "REPLACE"},    // no payload
		{"RESTORE", restoredKey(0), "0", string(dump.Encode(dump.Value{Kind: dump.List, Elems: [][]byte{[]byte("x")}})), "REPLACE"},
	} {
		if in, ok := parseSet(Event{Kind: evWire, Args: historyArgs(args)}); ok {
			t.Errorf("%q read as a register write %+v", args[:3], in)
		}
	}
}
