package cluster_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"
)

// SPEC §13, §10: pub/sub is served by the leader; when it stops leading
// its subscribers are disconnected, and go-redis's ClusterClient
// resubscribes where its cluster state (and MOVED) points, so a
// subscriber goes on receiving across a change of leader.
func TestClusterSubscriberFollowsLeader(t *testing.T) {
	tc := newCluster(t, 3)
	l := tc.leader(10 * time.Second)
	ctx := context.Background()
	cc := tc.clusterClient()
	sub := cc.Subscribe(ctx, "news")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatalf("SUBSCRIBE: %v", err)
	}
	ch := sub.Channel()

	// receives publishes until one arrives, as a publisher that retries.
	received := func(what string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for i := 0; time.Now().Before(deadline); i++ {
			msg := what + "-" + strconv.Itoa(i)
			cc.Publish(ctx, "news", msg)
			select {
			case m := <-ch:
				if strings.HasPrefix(m.Payload, what+"-") {
					return
				}
			case <-time.After(200 * time.Millisecond):
			}
		}
		t.Fatalf("no %q message within 30s; logs:\n%s", what, tc.log.String())
	}
	received("before")

	if err := tc.nodes[l].db.Node().TransferLeadership(); err != nil {
		t.Fatalf("transfer leadership: %v", err)
	}
	var l2 int
	for deadline := time.Now().Add(20 * time.Second); ; {
		l2 = tc.leader(20 * time.Second)
		if l2 != l {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("leadership did not move")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The old leader serves no subscriber now.
	for deadline := time.Now().Add(10 * time.Second); tc.infoField(l, "clients", "pubsub_clients") != "0"; {
		if time.Now().After(deadline) {
			t.Fatalf("the node that stopped leading still has subscribers")
		}
		time.Sleep(10 * time.Millisecond)
	}
	received("after")
	if got := tc.infoField(l2, "clients", "pubsub_clients"); got != "1" {
		t.Fatalf("the new leader has %s subscribers, want 1", got)
	}
}
