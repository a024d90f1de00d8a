package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure"
	"github.com/tenure-db/tenure/resp"
	"github.com/tenure-db/tenure/resp/resptest"
)

// TestLockCommand runs "tenure lock" (SPEC §14), the real binary, against a
// store in this process.
func TestLockCommand(t *testing.T) {
	bin := buildServer(t)
	t.Run("PassesStatusAndEnvironment", func(t *testing.T) { testLockStatus(t, bin) })
	t.Run("SecondWithWaitZeroDoesNotRun", func(t *testing.T) { testLockBusy(t, bin) })
	t.Run("RevokedLeaseStopsCommand", func(t *testing.T) { testLockRevoked(t, bin) })
	t.Run("SignalsGoToCommand", func(t *testing.T) { testLockSignals(t, bin) })
	t.Run("FrozenHolderLetsTheNextIn", func(t *testing.T) { testLockFrozen(t, bin) })
	t.Run("KilledTakesCommandWithIt", func(t *testing.T) { testLockKilled(t, bin) })
	t.Run("TLSAndUserFromTheURL", func(t *testing.T) { testLockTLSAndUser(t, bin) })
	t.Run("Cluster", func(t *testing.T) { testLockCluster(t, bin) })
	t.Run("BadUsage", func(t *testing.T) { testLockUsage(t, bin) })
}

func lockStore(t *testing.T) (*resptest.Server, *redis.Client, string) {
	s := resptest.Start(t, tenure.Options{})
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr})
	t.Cleanup(func() { rdb.Close() })
	return s, rdb, "redis://" + s.Addr
}

// keyHeld reports (lock, key)'s fence, 0 when free.
func keyHeld(t *testing.T, rdb *redis.Client, lock, key string) int64 {
	t.Helper()
	v, err := rdb.Do(context.Background(), "LOCK.INFO", lock, key).Result()
	if errors.Is(err, redis.Nil) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return v.(map[any]any)["fence"].(int64)
}

func waitUntil(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(within); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", within, what)
		}
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// COMMAND's exit status is tenure lock's; COMMAND sees TENURE_LOCK,
// TENURE_KEY and TENURE_FENCE; the key is let go when it exits.
func testLockStatus(t *testing.T, bin string) {
	_, rdb, url := lockStore(t)
	out := filepath.Join(t.TempDir(), "env")
	c := runChild(t, bin, "lock", "--url", url, "backups", "db1", "--",
		"sh", "-c", `echo "$TENURE_LOCK $TENURE_KEY $TENURE_FENCE" > "$0"; exit 7`, out)
	if code := c.wait(20 * time.Second); code != 7 {
		t.Fatalf("exit %d, want COMMAND's 7\n%s", code, c.stderr())
	}
	b, _ := os.ReadFile(out)
	f := strings.Fields(string(b))
	if len(f) != 3 || f[0] != "backups" || f[1] != "db1" {
		t.Fatalf("COMMAND's environment: %q", b)
	}
	if fence, err := strconv.ParseInt(f[2], 10, 64); err != nil || fence>>32 < 1 {
		t.Fatalf("TENURE_FENCE=%q", f[2])
	}
	if fence := keyHeld(t, rdb, "backups", "db1"); fence != 0 {
		t.Fatalf("the key is still held (fence %d) after COMMAND exited", fence)
	}
	c = runChild(t, bin, "lock", "--url", url, "backups", "db1", "--", "/no/such/command")
	if code := c.wait(20 * time.Second); code != 127 {
		t.Fatalf("COMMAND not found: exit %d, want 127\n%s", code, c.stderr())
	}
	if fence := keyHeld(t, rdb, "backups", "db1"); fence != 0 {
		t.Fatal("the key is still held after COMMAND failed to start")
	}
	c = runChild(t, bin, "lock", "--url", url, "backups", "db1", "--", "sh", "-c", "kill -KILL $$")
	if code := c.wait(20 * time.Second); code != 128+9 {
		t.Fatalf("COMMAND killed by SIGKILL: exit %d, want 137", code)
	}
}

// Two at once with --wait 0s: the second does not run its COMMAND and
// exits with the not-held status.
func testLockBusy(t *testing.T, bin string) {
	_, rdb, url := lockStore(t)
	dir := t.TempDir()
	release, ran := filepath.Join(dir, "release"), filepath.Join(dir, "ran")
	first := runChild(t, bin, "lock", "--url", url, "--owner", "first", "backups", "db1", "--",
		"sh", "-c", `i=0; while [ ! -e "$0" ] && [ $i -lt 1500 ]; do sleep 0.02; i=$((i+1)); done`, release)
	waitUntil(t, 10*time.Second, "the first holds the key", func() bool { return keyHeld(t, rdb, "backups", "db1") != 0 })
	second := runChild(t, bin, "lock", "--url", url, "--wait", "0s", "backups", "db1", "--", "touch", ran)
	if code := second.wait(20 * time.Second); code != exitNotHeld {
		t.Fatalf("second: exit %d, want %d\n%s", code, exitNotHeld, second.stderr())
	}
	if exists(ran) {
		t.Fatal("the second ran its COMMAND while the first held the key")
	}
	if !strings.Contains(second.stderr(), `held by "first"`) {
		t.Fatalf("second's stderr does not say who holds the key:\n%s", second.stderr())
	}
	os.WriteFile(release, nil, 0o644)
	if code := first.wait(20 * time.Second); code != 0 {
		t.Fatalf("first: exit %d\n%s", code, first.stderr())
	}
	// Now free: it runs.
	third := runChild(t, bin, "lock", "--url", url, "--wait", "0s", "backups", "db1", "--", "touch", ran)
	if code := third.wait(20 * time.Second); code != 0 || !exists(ran) {
		t.Fatalf("third: exit %d, ran %v\n%s", code, exists(ran), third.stderr())
	}
}

// A revoked lease SIGTERMs COMMAND's process group (COMMAND traps it) and
// tenure lock exits with the lost status.
func testLockRevoked(t *testing.T, bin string) {
	_, rdb, url := lockStore(t)
	dir := t.TempDir()
	trapped, started := filepath.Join(dir, "trapped"), filepath.Join(dir, "started")
	c := runChild(t, bin, "lock", "--url", url, "--ttl", "3s", "jobs", "k", "--",
		"sh", "-c", `trap 'echo TERM > "$0"; exit 0' TERM; touch "$1"; i=0; while [ $i -lt 1500 ]; do sleep 0.02; i=$((i+1)); done`, trapped, started)
	waitUntil(t, 10*time.Second, "COMMAND started", func() bool { return exists(started) })
	if err := rdb.Do(context.Background(), "LOCK.REVOKE", "jobs", "k").Err(); err != nil {
		t.Fatal(err)
	}
	revoked := time.Now()
	code := c.wait(20 * time.Second)
	if code != exitLost {
		t.Fatalf("exit %d after the revoke, want %d\n%s", code, exitLost, c.stderr())
	}
	if b, _ := os.ReadFile(trapped); string(b) != "TERM\n" {
		t.Fatalf("COMMAND was not sent SIGTERM (trapped %q)\n%s", b, c.stderr())
	}
	t.Logf("revoked lease: COMMAND stopped and tenure lock exited %v after the revoke (ttl 3s: renewals every ttl/3)", time.Since(revoked))
	if !strings.Contains(c.stderr(), "revoked by admin") {
		t.Fatalf("stderr does not give the reason:\n%s", c.stderr())
	}
}

// SIGTERM to tenure lock goes to COMMAND, whose status is then tenure
// lock's; a COMMAND that ignores it gets nothing worse while the lease
// lives.
func testLockSignals(t *testing.T, bin string) {
	_, rdb, url := lockStore(t)
	started := filepath.Join(t.TempDir(), "started")
	c := runChild(t, bin, "lock", "--url", url, "jobs", "sig", "--",
		"sh", "-c", `trap 'exit 3' TERM; touch "$0"; i=0; while [ $i -lt 1500 ]; do sleep 0.02; i=$((i+1)); done`, started)
	waitUntil(t, 10*time.Second, "COMMAND started", func() bool { return exists(started) })
	c.cmd.Process.Signal(syscall.SIGTERM)
	if code := c.wait(20 * time.Second); code != 3 {
		t.Fatalf("exit %d after SIGTERM, want COMMAND's 3\n%s", code, c.stderr())
	}
	if fence := keyHeld(t, rdb, "jobs", "sig"); fence != 0 {
		t.Fatal("the key is still held after COMMAND exited")
	}
}

// A frozen tenure lock (SIGSTOP) renews no more: the next one gets the key
// within the ttl, and the frozen one, thawed, stops its COMMAND and exits
// lost.
func testLockFrozen(t *testing.T, bin string) {
	_, _, url := lockStore(t)
	dir := t.TempDir()
	started, granted := filepath.Join(dir, "started"), filepath.Join(dir, "granted")
	first := runChild(t, bin, "lock", "--url", url, "--ttl", "2s", "--grace", "1s", "jobs", "k", "--",
		"sh", "-c", `touch "$0"; i=0; while [ $i -lt 1500 ]; do sleep 0.02; i=$((i+1)); done`, started)
	waitUntil(t, 10*time.Second, "COMMAND started", func() bool { return exists(started) })
	if err := first.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	frozen := time.Now()
	next := runChild(t, bin, "lock", "--url", url, "--wait", "30s", "jobs", "k", "--",
		"sh", "-c", `date +%s%N > "$0"`, granted)
	code := next.wait(30 * time.Second)
	first.cmd.Process.Signal(syscall.SIGCONT)
	if code != 0 {
		t.Fatalf("next: exit %d\n%s", code, next.stderr())
	}
	b, _ := os.ReadFile(granted)
	ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatalf("the next one's COMMAND wrote %q", b)
	}
	took := time.Unix(0, ns).Sub(frozen)
	t.Logf("the next tenure lock's COMMAND ran %v after the first froze (ttl 2s)", took)
	if took > 2*time.Second+500*time.Millisecond { // ttl, and a loaded machine's scheduling
		t.Fatalf("the next one's COMMAND ran %v after a holder with ttl 2s froze", took)
	}
	if code := first.wait(20 * time.Second); code != exitLost {
		t.Fatalf("the thawed one: exit %d, want %d\n%s", code, exitLost, first.stderr())
	}
}

// A tenure lock killed outright (SIGKILL) takes its COMMAND with it: the
// lease is let go by its ttl, and COMMAND must not run on without it.
func testLockKilled(t *testing.T, bin string) {
	_, _, url := lockStore(t)
	dir := t.TempDir()
	started, trapped := filepath.Join(dir, "started"), filepath.Join(dir, "trapped")
	c := runChild(t, bin, "lock", "--url", url, "jobs", "killed", "--",
		"sh", "-c", `trap 'touch "$1"; exit 0' TERM; touch "$0"; i=0; while [ $i -lt 1500 ]; do sleep 0.02; i=$((i+1)); done`, started, trapped)
	waitUntil(t, 10*time.Second, "COMMAND started", func() bool { return exists(started) })
	c.cmd.Process.Signal(syscall.SIGKILL)
	waitUntil(t, 10*time.Second, "COMMAND told of tenure lock's death", func() bool { return exists(trapped) })
	c.wait(20 * time.Second)
}

func testLockUsage(t *testing.T, bin string) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"lock", "-h"}, 0, "Usage: tenure lock [options] LOCK KEY -- COMMAND"},
		{[]string{"lock", "L", "K"}, 2, "no COMMAND to run"},
		{[]string{"lock", "--limit", "2", "--shared", "L", "K", "--", "true"}, 2, "do not go together"},
		{[]string{"lock", "--nope", "L", "K", "--", "true"}, 2, "flag provided but not defined"},
		{[]string{"lock", "--ttl", "10ms", "--url", "redis://127.0.0.1:1", "L", "K", "--", "true"}, 1, "TTL"},
		{[]string{"lock", "--ttl", "1s", "--url", "redis://127.0.0.1:1", "L", "K", "--", "true"}, 1, "refused"},
	} {
		c := runChild(t, bin, tc.args...)
		if code := c.wait(30 * time.Second); code != tc.code || !strings.Contains(c.stderr(), tc.want) {
			t.Errorf("tenure %v: exit %d, stderr %q; want %d and %q", tc.args, code, c.stderr(), tc.code, tc.want)
		}
	}
}

// rediss:// with the user and password in the URL, given by TENURE_URL;
// the server's certificate is trusted through SSL_CERT_FILE.
func testLockTLSAndUser(t *testing.T, bin string) {
	dir := t.TempDir()
	certFile, keyFile := lockTestCert(t, dir)
	cfg, err := resp.LoadTLS(certFile, keyFile, "")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("s3cret"))
	users, err := resp.ParseUsers(strings.NewReader("user cron write sha256:" + hex.EncodeToString(sum[:]) + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := resptest.Start(t, tenure.Options{TLS: cfg, Users: users})
	t.Setenv("SSL_CERT_FILE", certFile)
	t.Setenv("TENURE_URL", "rediss://cron:s3cret@"+s.Addr)
	out := filepath.Join(dir, "fence")
	c := runChild(t, bin, "lock", "backups", "db1", "--", "sh", "-c", `echo "$TENURE_FENCE" > "$0"`, out)
	if code := c.wait(20 * time.Second); code != 0 {
		t.Fatalf("over TLS with a user: exit %d\n%s", code, c.stderr())
	}
	if b, _ := os.ReadFile(out); len(strings.TrimSpace(string(b))) == 0 {
		t.Fatal("COMMAND did not run")
	}
	t.Setenv("TENURE_URL", "rediss://cron:wrong@"+s.Addr)
	c = runChild(t, bin, "lock", "backups", "db1", "--", "true")
	if code := c.wait(20 * time.Second); code != exitLockError || !strings.Contains(c.stderr(), "WRONGPASS") {
		t.Fatalf("a wrong password: exit %d\n%s", code, c.stderr())
	}
}

// --url once a node: the leader of a cluster of three binaries is found
// and followed (SPEC §10, §14).
func testLockCluster(t *testing.T, bin string) {
	cp := startClusterProc(t, bin, 3)
	cp.waitLeader(20 * time.Second)
	var args []string
	for _, a := range cp.addrs {
		args = append(args, "--url", "redis://"+a)
	}
	out := filepath.Join(t.TempDir(), "fence")
	args = append(args, "jobs", "nightly", "--", "sh", "-c", `echo "$TENURE_FENCE" > "$0"`, out)
	for deadline := time.Now().Add(20 * time.Second); ; {
		c := runChild(t, bin, append([]string{"lock", "--ttl", "2s"}, args...)...)
		code := c.wait(30 * time.Second)
		if code == 0 {
			break
		}
		if time.Now().After(deadline) { // the leader's epoch not applied yet: -TRYAGAIN for a while
			t.Fatalf("tenure lock on a cluster: exit %d\n%s", code, c.stderr())
		}
	}
	b, _ := os.ReadFile(out)
	if fence, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err != nil || fence <= 0 {
		t.Fatalf("TENURE_FENCE %q", b)
	}
}

// lockTestCert writes a self-signed certificate for 127.0.0.1 and its key.
func lockTestCert(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "tenure test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	return certFile, keyFile
}
