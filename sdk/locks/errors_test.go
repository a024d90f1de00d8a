package locks

import (
	"errors"
	"io"
	"testing"
)

// replyError is an error reply as go-redis gives one (redis.Error).
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

// transient tells the replies a later try with the same request can cure
// (a restart, an election, a full server) from the final ones.
func TestTransientReplies(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{io.EOF, true}, // the connection failed: the reply may be lost
		{replyError("TRYAGAIN the leader's epoch is not applied yet"), true},
		{replyError("CLUSTERDOWN no leader"), true},
		{replyError("LOADING tenure is starting"), true},
		{replyError("ERR max number of clients reached"), true},
		{replyError("MOVED 1234 127.0.0.1:7002"), false}, // a plain client cannot follow it
		{replyError("WRONGTYPE Operation against a key holding the wrong kind of value"), false},
		{replyError("ERR syntax error"), false},
		{replyError("NOPERM this user has no permissions to run the 'lock.hold' command"), false},
	} {
		if got := transient(tc.err); got != tc.want {
			t.Errorf("transient(%q) = %v, want %v", tc.err, got, tc.want)
		}
	}
	if transient(errors.Join(replyError("ERR syntax error"))) {
		t.Error("a wrapped final reply counted as transient")
	}
}
