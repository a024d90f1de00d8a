package resp_test

import (
	"context"
	"testing"

	"github.com/tenure-db/tenure"
	"github.com/tenure-db/tenure/resp"
	"github.com/tenure-db/tenure/resp/resptest"
)

// SPEC §10: a single server answers CLUSTER as Redis without cluster mode
// does, and ROLE as a master with no replicas.
func TestSingleServerClusterCommands(t *testing.T) {
	s := resptest.Start(t, tenure.Options{})
	c := s.Client()
	ctx := context.Background()
	for _, sub := range []string{"INFO", "SLOTS", "SHARDS", "NODES", "MYID", "HELP"} {
		if err := c.Do(ctx, "CLUSTER", sub).Err(); err == nil || err.Error() != "ERR This instance has cluster support disabled" {
			t.Errorf("CLUSTER %s: %v", sub, err)
		}
	}
	if err := c.Do(ctx, "CLUSTER", "FOO").Err(); err == nil || err.Error() != "ERR unknown subcommand 'FOO'. Try CLUSTER HELP." {
		t.Errorf("CLUSTER FOO: %v", err)
	}
	role, err := c.Do(ctx, "ROLE").Slice()
	if err != nil || len(role) != 3 || role[0] != "master" || role[1] != int64(0) || len(role[2].([]any)) != 0 {
		t.Errorf("ROLE: %v %v", role, err)
	}
}

// Redis Cluster's hash slots, as its documentation computes them.
func TestKeySlot(t *testing.T) {
	for key, want := range map[string]int{
		"": 0, "foo": 12182, "bar": 5061, "{user1000}.following": 3443, "{user1000}.followers": 3443,
		"foo{}{bar}": 8363, "foo{{bar}}zap": 4015, "foo{bar}{zap}": 5061, "123456789": 12739,
	} {
		if got := resp.KeySlot([]byte(key)); got != want {
			t.Errorf("KeySlot(%q) = %d, want %d", key, got, want)
		}
	}
}
