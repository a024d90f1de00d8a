package resp_test

import (
	"fmt"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tenure-db/tenure"
)

// MIGRATE's replies that need no target, in Redis's order of checks
// (checked against redis-server 7.0.15 with TENURE_TEST_REDIS).
func TestMigrateCompat(t *testing.T) {
	// A port nobody listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	compatTranscript(t, start(t), []step{
		{"SET k v", "OK"},
		{"MIGRATE 127.0.0.1 " + port + " nokey 0 100", "NOKEY"},
		{"MIGRATE 127.0.0.1 " + port + " \"\" 0 100 KEYS a b", "NOKEY"},
		{"MIGRATE 127.0.0.1 " + port + " k 0 100 KEYS k", "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string"},
		{"MIGRATE 127.0.0.1 " + port + " k 0 100 FOO", "ERR syntax error"},
		{"MIGRATE 127.0.0.1 " + port + " k 0 100 AUTH", "ERR syntax error"},
		{"MIGRATE 127.0.0.1 " + port + " k 0 100 AUTH2 u", "ERR syntax error"},
		{"MIGRATE 127.0.0.1 " + port + " k 0 x", "ERR value is not an integer or out of range"},
		{"MIGRATE 127.0.0.1 " + port + " k x 100", "ERR value is not an integer or out of range"},
		{"MIGRATE 127.0.0.1 " + port + " k 0 100", "IOERR error or timeout writing to target instance"},
		{"EXISTS k", 1},
		{"MIGRATE 127.0.0.1 " + port, "ERR wrong number of arguments for 'migrate' command"},
	})
}

// MIGRATE moves keys of every type, with their TTLs, to another server:
// deleted here unless COPY, the target's BUSYKEY told back unless REPLACE,
// AUTH2 sent first; MULTI refuses it.
func TestMigrate(t *testing.T) {
	src, dst := start(t), start(t)
	c, d := src.Client(), dst.Client()
	keys := []string{"s", "l", "h", "st", "z"}
	for _, cmd := range [][]any{
		{"SET", "s", "v", "PX", "100000"}, {"RPUSH", "l", "a", "b"}, {"HSET", "h", "f", "v"},
		{"SADD", "st", "1", "2"}, {"ZADD", "z", "1.5", "m"},
	} {
		if err := c.Do(bg, cmd...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	host, port, _ := net.SplitHostPort(dst.Addr)
	want := map[string]string{}
	for _, k := range keys {
		typ, v, _ := readValue(t, c, k)
		want[k] = fmt.Sprint(typ, v)
	}
	args := []any{"MIGRATE", host, port, "", "0", "5000", "COPY", "KEYS"}
	for _, k := range keys {
		args = append(args, k)
	}
	if got, err := c.Do(bg, args...).Result(); err != nil || got != "OK" {
		t.Fatalf("MIGRATE … COPY KEYS: %v %v", got, err)
	}
	for _, k := range keys {
		typ, v, ttl := readValue(t, d, k)
		if fmt.Sprint(typ, v) != want[k] || c.Exists(bg, k).Val() != 1 {
			t.Fatalf("%s: the target has %s %v, want %s, and the source kept it", k, typ, v, want[k])
		}
		if (k == "s") != (ttl > 90000) {
			t.Fatalf("%s: the target's PTTL %d", k, ttl)
		}
	}
	// Again: the target has them.
	if err := c.Do(bg, "MIGRATE", host, port, "l", "0", "5000").Err(); err == nil ||
		err.Error() != "ERR Target instance replied with error: BUSYKEY Target key name already exists." {
		t.Fatalf("MIGRATE onto an existing key: %v", err)
	}
	if c.Exists(bg, "l").Val() != 1 {
		t.Fatal("a key the target refused was deleted here")
	}
	c.RPush(bg, "l", "c")
	if err := c.Do(bg, "MIGRATE", host, port, "l", "0", "5000", "REPLACE").Err(); err != nil {
		t.Fatalf("MIGRATE … REPLACE: %v", err)
	}
	if c.Exists(bg, "l").Val() != 0 || !reflect.DeepEqual(d.LRange(bg, "l", 0, -1).Val(), []string{"a", "b", "c"}) {
		t.Fatalf("after MIGRATE … REPLACE: here %d, there %q", c.Exists(bg, "l").Val(), d.LRange(bg, "l", 0, -1).Val())
	}
	transcript(t, c, []step{
		{"MULTI", "OK"},
		{fmt.Sprintf("MIGRATE %s %s h 0 5000 COPY REPLACE", host, port), "QUEUED"},
		{"EXEC", []any{"ERR MIGRATE cannot run inside MULTI or a script: it waits on another server"}},
	})
}

// MIGRATE with AUTH2 to a target with users: the target's NOAUTH or
// WRONGPASS comes back and nothing is deleted; the right password moves
// the key. A target that never answers is an IOERR within the timeout.
func TestMigrateAuthAndTimeout(t *testing.T) {
	dst := startWithUsers(t, tenure.Options{})
	src := start(t)
	c := src.Client()
	c.Set(bg, "k", "v", 0)
	host, port, _ := net.SplitHostPort(dst.Addr)
	err := c.Do(bg, "MIGRATE", host, port, "k", "0", "5000").Err()
	if err == nil || !strings.HasPrefix(err.Error(), "ERR Target instance replied with error: NOAUTH") || c.Exists(bg, "k").Val() != 1 {
		t.Fatalf("MIGRATE to a target that wants a password: %v, EXISTS %d", err, c.Exists(bg, "k").Val())
	}
	err = c.Do(bg, "MIGRATE", host, port, "k", "0", "5000", "AUTH2", "writer", "wrong").Err()
	if err == nil || !strings.Contains(err.Error(), "WRONGPASS") || c.Exists(bg, "k").Val() != 1 {
		t.Fatalf("MIGRATE with a wrong password: %v, EXISTS %d", err, c.Exists(bg, "k").Val())
	}
	if err := c.Do(bg, "MIGRATE", host, port, "k", "0", "5000", "AUTH2", "writer", "writer-pass").Err(); err != nil {
		t.Fatalf("MIGRATE … AUTH2: %v", err)
	}
	if c.Exists(bg, "k").Val() != 0 {
		t.Fatal("the key stayed after MIGRATE")
	}

	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			nc, err := silent.Accept()
			if err != nil {
				return
			}
			defer nc.Close() // read nothing, answer nothing
		}
	}()
	c.Set(bg, "k2", "v", 0)
	h, p, _ := net.SplitHostPort(silent.Addr().String())
	began := time.Now()
	err = c.Do(bg, "MIGRATE", h, p, "k2", "0", "300").Err()
	if err == nil || err.Error() != "IOERR error or timeout reading to target instance" || c.Exists(bg, "k2").Val() != 1 {
		t.Fatalf("MIGRATE to a target that never answers: %v", err)
	}
	if took := time.Since(began); took > 3*time.Second {
		t.Fatalf("a 300 ms timeout took %v", took)
	}
}
