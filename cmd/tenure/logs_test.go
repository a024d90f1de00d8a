package main

// The log and the metrics flags, in-process through run: what a scripted
// session leaves in the log (never a lease id or a password), the JSON
// format, and --metrics-addr.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// lockedBuffer is run's stderr, read while run writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// inProcess is one run of the server in this process.
type inProcess struct {
	log  *lockedBuffer
	exit chan int
}

// runInProcess starts run with args and waits until the log matches
// ready; it returns the first group of each pattern in wait, in order.
func runInProcess(t *testing.T, args []string, wait ...*regexp.Regexp) (*inProcess, []string) {
	t.Helper()
	p := &inProcess{log: &lockedBuffer{}, exit: make(chan int, 1)}
	go func() { p.exit <- run(args, p.log) }()
	found := make([]string, len(wait))
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; i < len(wait); {
		if m := wait[i].FindStringSubmatch(p.log.String()); m != nil {
			found[i] = m[1]
			i++
			continue
		}
		select {
		case code := <-p.exit:
			t.Fatalf("run %v exited %d before logging %v:\n%s", args, code, wait[i], p.log)
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %v did not log %v within 20s:\n%s", args, wait[i], p.log)
		}
	}
	return p, found
}

func (p *inProcess) waitExit(t *testing.T) int {
	t.Helper()
	select {
	case code := <-p.exit:
		return code
	case <-time.After(20 * time.Second):
		t.Fatalf("run did not return after SHUTDOWN:\n%s", p.log)
		return -1
	}
}

func usersFileFor(t *testing.T, lines ...[3]string) string {
	t.Helper()
	var b strings.Builder
	for _, l := range lines {
		sum := sha256.Sum256([]byte(l[2]))
		fmt.Fprintf(&b, "user %s %s sha256:%s\n", l[0], l[1], hex.EncodeToString(sum[:]))
	}
	path := filepath.Join(t.TempDir(), "users.conf")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

var (
	readyAddr   = regexp.MustCompile(`"?msg"?[=:]"ready to accept connections".*?"?addr"?[=:]"?([0-9.:]+)`)
	metricsAddr = regexp.MustCompile(`"?msg"?[=:]"serving metrics".*?"?addr"?[=:]"?([0-9.:]+)`)
)

// A scripted session, at debug level, in both formats: the log has the
// epoch at start and one line per revocation, and never a lease id or a
// password, right or wrong.
func TestLogNeverShowsSecrets(t *testing.T) {
	const (
		adminPass  = "hunter2-admin-pass"
		workerPass = "s3cret-worker-pass"
		wrongPass  = "not-the-password-xyz"
	)
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			users := usersFileFor(t, [3]string{"ops", "admin", adminPass}, [3]string{"worker", "write", workerPass})
			p, found := runInProcess(t, []string{"--addr", "127.0.0.1:0", "--dir", t.TempDir(), "--users", users,
				"--log-level", "debug", "--log-format", format}, readyAddr)
			addr := found[0]
			bg := context.Background()
			worker := redis.NewClient(&redis.Options{Addr: addr, Username: "worker", Password: workerPass})
			defer worker.Close()
			ops := redis.NewClient(&redis.Options{Addr: addr, Username: "ops", Password: adminPass})
			defer ops.Close()
			wrong := redis.NewClient(&redis.Options{Addr: addr, Username: "worker", Password: wrongPass, MaxRetries: -1})
			defer wrong.Close()

			if err := wrong.Ping(bg).Err(); err == nil {
				t.Fatal("a wrong password was admitted")
			}
			var ids []string
			hold := func(key string, opts ...any) []any {
				v, err := worker.Do(bg, append([]any{"LOCK.HOLD", "jobs", key, "req-" + key}, opts...)...).Slice()
				if err != nil {
					t.Fatalf("LOCK.HOLD %s: %v", key, err)
				}
				ids = append(ids, v[0].(string))
				return v
			}
			a := hold("a")
			worker.Do(bg, "LOCK.RENEW", a[0], "TTL", 5000)
			worker.Do(bg, "LOCK.RELEASE", a[0])
			worker.Do(bg, "LOCK.RENEW", a[0]) // LOST released
			worker.Do(bg, "LOCK.RELEASE", strings.ToUpper(a[0].(string)))
			worker.Do(bg, "LOCK.REVOKE", "jobs", "a") // NOPERM
			hold("b")
			if n, err := ops.Do(bg, "LOCK.REVOKE", "jobs", "b").Int(); err != nil || n != 1 {
				t.Fatalf("LOCK.REVOKE: %d %v", n, err)
			}
			hold("c", "MAXHOLD", 1000)
			// The password and a lease id in places a careless log would echo.
			worker.Do(bg, "AUTH", "worker", wrongPass)
			worker.Do(bg, "NOSUCH", adminPass, ids[0])
			worker.Do(bg, "SET", "k", ids[0], "FENCE", "x")
			time.Sleep(1100 * time.Millisecond) // c is revoked at MAXHOLD
			ops.Do(bg, "SHUTDOWN")
			if code := p.waitExit(t); code != 0 {
				t.Fatalf("exit %d:\n%s", code, p.log)
			}

			log := p.log.String()
			for _, secret := range append([]string{adminPass, workerPass, wrongPass}, ids...) {
				if strings.Contains(strings.ToLower(log), strings.ToLower(secret)) {
					t.Errorf("the log shows %q:\n%s", secret, log)
				}
			}
			var lines []map[string]any
			for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
				if format == "json" {
					var m map[string]any
					if err := json.Unmarshal([]byte(line), &m); err != nil {
						t.Fatalf("not a JSON line: %q", line)
					}
					lines = append(lines, m)
				} else if !strings.HasPrefix(line, "time=") {
					t.Fatalf("not a text line: %q", line)
				}
			}
			if format == "json" {
				revoked := 0
				for _, m := range lines {
					switch m["msg"] {
					case "ready to accept connections":
						if m["epoch"] != float64(1) {
							t.Errorf("ready line without the epoch: %v", m)
						}
					case "lease revoked":
						revoked++
						if m["lock"] != "jobs" || m["fence"] == nil || m["reason"] == nil {
							t.Errorf("revocation line: %v", m)
						}
					}
				}
				if revoked != 2 {
					t.Errorf("%d revocation lines, want 2 (admin, maxhold):\n%s", revoked, log)
				}
			} else if !regexp.MustCompile(`msg="ready to accept connections".* epoch=1`).MatchString(log) ||
				strings.Count(log, `msg="lease revoked"`) != 2 {
				t.Errorf("want the epoch at start and two revocation lines:\n%s", log)
			}
		})
	}
}

// --http-addr and its alias --metrics-addr serve /metrics and the
// dashboard at /, and stop with the server (SPEC §14).
func TestMetricsAddr(t *testing.T) {
	for _, flag := range []string{"--http-addr", "--metrics-addr"} {
		t.Run(flag, func(t *testing.T) { testHTTPAddr(t, flag) })
	}
}

func testHTTPAddr(t *testing.T, flag string) {
	p, found := runInProcess(t, []string{"--addr", "127.0.0.1:0", "--dir", t.TempDir(), flag, "127.0.0.1:0"},
		readyAddr, metricsAddr)
	for path, want := range map[string]string{"/metrics": "tenure_epoch 1", "/": "<title>tenure"} {
		res, err := http.Get("http://" + found[1] + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || !bytes.Contains(body, []byte(want)) {
			t.Fatalf("%s: %s\n%s", path, res.Status, body)
		}
	}
	rdb := redis.NewClient(&redis.Options{Addr: found[0]})
	defer rdb.Close()
	rdb.Do(context.Background(), "SHUTDOWN")
	if code := p.waitExit(t); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if _, err := http.Get("http://" + found[1] + "/metrics"); err == nil {
		t.Fatal("metrics still served after shutdown")
	}
}

// Flags are checked before anything listens: a bad --log-format, and a
// non-loopback --metrics-addr without users, as SPEC §5 has it for --addr.
func TestLogAndMetricsFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--log-format", "xml"}, `--log-format "xml": want text or json`},
		// SPEC §14: the dashboard is refused off loopback without users,
		// by either of its names.
		{[]string{"--metrics-addr", "0.0.0.0:0"}, "refusing to serve the dashboard and metrics on 0.0.0.0:0 without a users file"},
		{[]string{"--http-addr", "0.0.0.0:0"}, "refusing to serve the dashboard and metrics on 0.0.0.0:0 without a users file"},
		{[]string{"--http-addr", "[::]:0"}, "refusing to serve the dashboard and metrics on [::]:0 without a users file"},
		{[]string{"--audit-events", "-1"}, "--audit-events must be 0 or more"},
		{[]string{"--metrics-addr", "127.0.0.1:0", "--addr", "0.0.0.0:0"}, "refusing to listen on 0.0.0.0:0"},
	} {
		var stderr bytes.Buffer
		args := append([]string{"--dir", t.TempDir()}, tc.args...)
		if code := run(args, &stderr); code == 0 || !strings.Contains(stderr.String(), tc.want) ||
			strings.Count(strings.TrimSpace(stderr.String()), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want one line with %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}
