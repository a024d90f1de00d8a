package main

import (
	"fmt"
	"strings"
	"testing"
)

// The observers' check (g, observer.go; LOCK-17, issue 33): a fence that
// goes back, a leader never granted, a leader of another owner than its
// grant's and one observed before its request was first sent are
// violations; a history of growing, granted leaders and nones is not, nor
// a leader seen between the first send of its request (its reply lost)
// and the retry that was answered, nor one of a HOLD never answered, sent
// before and of a fence no other request got.
func TestObserverHistory(t *testing.T) {
	const e1 = int64(1) << 32
	grant := func(key, owner string, fence, sent int64) Event {
		return Event{Kind: evGrant, Key: key, Value: owner, Fence: fence, ReqID: owner, LeaseID: owner, Start: sent, End: sent + 1}
	}
	obs := func(client, key, owner string, fence, at int64) Event {
		return Event{Kind: evObserve, Client: client, Key: key, Value: owner, Fence: fence, Start: at, Result: "ok"}
	}
	hold := func(start, end int64, result, key, reqid, owner string) Event {
		return Event{Kind: evWire, Args: []string{"LOCK.HOLD", lockName, key, reqid, "1000", "OWNER", owner}, Start: start, End: end, Result: result}
	}
	granted := []Event{grant("k0", "g1", e1+1, 10), grant("k0", "g2", e1+2, 20), grant("k1", "g3", e1+3, 30)}
	for _, tc := range []struct {
		name   string
		events []Event
		want   string // in the one violation; "" none
	}{
		{"growing, granted", []Event{
			obs("o0", "k0", "", 0, 5), obs("o0", "k0", "g1", e1+1, 15), obs("o0", "k0", "", 0, 18),
			obs("o0", "k0", "g2", e1+2, 25), obs("o1", "k0", "g2", e1+2, 26), obs("o2", "k1", "g3", e1+3, 31),
		}, ""},
		{"a decreasing fence", []Event{
			obs("o0", "k0", "g2", e1+2, 25), obs("o0", "k0", "", 0, 26), obs("o0", "k0", "g1", e1+1, 27),
		}, "yielded fence 4294967297 (owner \"g1\") after fence 4294967298"},
		{"a leader never granted", []Event{
			obs("o0", "k0", "g9", e1+9, 25),
		}, "never seen to grant"},
		{"another owner than the grant's", []Event{
			obs("o0", "k0", "g2", e1+1, 25),
		}, "never seen to grant"},
		{"the fence of another key", []Event{
			obs("o0", "k1", "g1", e1+1, 25),
		}, "never seen to grant"},
		{"observed before its HOLD was sent", []Event{
			obs("o0", "k0", "g2", e1+2, 19),
		}, "before its LOCK.HOLD was first sent"},
		{"observed after the first send of its request, whose reply was lost, before the retry answered", []Event{
			hold(12, 0, "unknown", "k0", "g2", "g2"),
			hold(19, 21, "ok", "k0", "g2", "g2"),
			obs("o0", "k0", "g2", e1+2, 15),
		}, ""},
		{"the first send of another request is no excuse", []Event{
			hold(12, 0, "unknown", "k0", "other", "g2"),
			obs("o0", "k0", "g2", e1+2, 15),
		}, "before its LOCK.HOLD was first sent"},
		{"a leader of a HOLD never answered, asked before", []Event{
			hold(40, 0, "unknown", "k1", "r7", "g7"),
			obs("o0", "k1", "g7", e1+7, 45),
		}, ""},
		{"a leader of a HOLD never answered, asked after", []Event{
			hold(50, 0, "unknown", "k1", "r7", "g7"),
			obs("o0", "k1", "g7", e1+7, 45),
		}, "never seen to grant"},
		{"a leader of a HOLD never answered, with a fence granted to another", []Event{
			hold(20, 0, "unknown", "k0", "r7", "g7"),
			obs("o0", "k0", "g7", e1+2, 45),
		}, "never seen to grant"},
	} {
		r := &Report{}
		var got []string
		checkObservers(r, append(granted[:len(granted):len(granted)], tc.events...), func(f string, a ...any) {
			got = append(got, fmt.Sprintf(f, a...))
		})
		switch {
		case tc.want == "" && len(got) > 0:
			t.Errorf("%s: violations %q, want none", tc.name, got)
		case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
			t.Errorf("%s: violations %q, want one with %q", tc.name, got, tc.want)
		}
		observed := 0
		for _, e := range tc.events {
			if e.Kind == evObserve {
				observed++
			}
		}
		if r.Observed != observed {
			t.Errorf("%s: %d observed, want %d", tc.name, r.Observed, observed)
		}
	}
}
