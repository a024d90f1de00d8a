package cluster

import (
	"reflect"
	"testing"
)

// A group entry decodes to the entries encoded, each at the group's
// instant; a cut or padded one is refused, not half applied.
func TestGroupEntryRoundTrip(t *testing.T) {
	es := []Entry{
		{Proto: 2, Cmds: [][][]byte{{[]byte("SET"), []byte("k"), []byte("v")}}},
		{Proto: 3, Exec: true, Cmds: [][][]byte{{[]byte("INCR"), []byte("n")}, {[]byte("DEL"), []byte("k")}}},
		{Proto: 0, Cmds: [][][]byte{{[]byte("SET"), []byte("e"), {}}}},
	}
	b := encodeGroup(1234, es)
	e, err := decodeEntry(b)
	if err != nil || e.kind != kindGroup || e.nowMs != 1234 {
		t.Fatalf("decode = kind %d at %d, %v", e.kind, e.nowMs, err)
	}
	for i := range es {
		es[i].NowMs = 1234
	}
	if !reflect.DeepEqual(e.group, es) {
		t.Fatalf("decoded %+v\nwant %+v", e.group, es)
	}
	for _, bad := range [][]byte{b[:len(b)-1], append(append([]byte(nil), b...), 0), encodeGroup(1, nil)} {
		if _, err := decodeEntry(bad); err == nil {
			t.Errorf("%q decoded; want errBadEntry", bad)
		}
	}
}
