package resp_test

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure"
	"github.com/tenure-db/tenure/resp"
	"github.com/tenure-db/tenure/resp/resptest"
)

func sha(pw string) string {
	sum := sha256.Sum256([]byte(pw))
	return hex.EncodeToString(sum[:])
}

// usersFile has one user per role; each password is the name + "-pass".
func usersFile() string {
	return fmt.Sprintf(`# test users
user reader read sha256:%s

user writer write sha256:%s
user admin admin sha256:%s
user default read sha256:%s
`, sha("reader-pass"), sha("writer-pass"), sha("admin-pass"), sha("default-pass"))
}

func startWithUsers(t *testing.T, cfg tenure.Options) *resptest.Server {
	t.Helper()
	users, err := resp.ParseUsers(strings.NewReader(usersFile()))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Users = users
	return resptest.Start(t, cfg)
}

func TestUsersFileErrors(t *testing.T) {
	good := "sha256:" + sha("x")
	for _, tc := range []struct{ file, want string }{
		{"user a read " + good + "\nuser b\n", "line 2"},
		{"usr a read " + good + "\n", "line 1"},
		{"user a root " + good + "\n", `line 1: role "root"`},
		{"user a read md5:abc\n", "line 1: password"},
		{"user a read sha256:" + strings.ToUpper(sha("x")) + "\n", "line 1: password"},
		{"user a read sha256:abc\n", "line 1: password"},
		{"\n# c\nuser a read " + good + "\nuser a write " + good + "\n", `line 4: user "a" is defined twice`},
	} {
		_, err := resp.ParseUsers(strings.NewReader(tc.file))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want an error with %q", tc.file, err, tc.want)
		}
	}
	if _, err := resp.LoadUsers(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("a missing users file loaded")
	}
}

// firstLine sends requests on a fresh connection and returns the first line
// of the last reply; earlier replies (AUTH) must be +OK.
func firstLine(t *testing.T, addr string, reqs ...[]string) string {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(nc)
	var line string
	for i, req := range reqs {
		var b strings.Builder
		fmt.Fprintf(&b, "*%d\r\n", len(req))
		for _, a := range req {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
		if _, err := nc.Write([]byte(b.String())); err != nil {
			t.Fatal(err)
		}
		line, err = br.ReadString('\n')
		if err != nil {
			t.Fatalf("%v: %v", req, err)
		}
		line = strings.TrimSuffix(line, "\r\n")
		if i < len(reqs)-1 && line != "+OK" {
			t.Fatalf("%v: %q", req, line)
		}
	}
	return line
}

// The role matrix (SPEC §5): every row of the command table × every role,
// generated from the table, so no command can be added without a role.
func TestRoleMatrix(t *testing.T) {
	s := startWithUsers(t, tenure.Options{})
	// SPEC §5 names some commands' roles outright; the table must agree.
	spec := map[string]resp.Role{
		"get": resp.RoleRead, "mget": resp.RoleRead, "exists": resp.RoleRead, "ttl": resp.RoleRead,
		"scan": resp.RoleRead, "lock.info": resp.RoleRead, "info": resp.RoleRead,
		"set": resp.RoleWrite, "del": resp.RoleWrite,
		"lock.hold": resp.RoleWrite, "lock.renew": resp.RoleWrite, "lock.release": resp.RoleWrite,
		"lock.watch": resp.RoleRead, "lock.revoke": resp.RoleAdmin, "flushall": resp.RoleAdmin, "config|set": resp.RoleAdmin,
		"shutdown": resp.RoleAdmin, "client|kill": resp.RoleAdmin,
	}
	noAuth := map[string]bool{"auth": true, "hello": true, "ping": true, "quit": true}
	logins := []struct {
		role resp.Role
		auth []string
	}{
		{resp.RoleNone, nil},
		{resp.RoleRead, []string{"AUTH", "reader", "reader-pass"}},
		{resp.RoleWrite, []string{"AUTH", "writer", "writer-pass"}},
		{resp.RoleAdmin, []string{"AUTH", "admin", "admin-pass"}},
	}
	for _, cmd := range resp.Commands() {
		if cmd.Subcommands != nil {
			continue // a container: its subcommands are rows of their own
		}
		if cmd.Role < resp.RoleRead || cmd.Role > resp.RoleAdmin {
			t.Errorf("%s: role %v is not read, write or admin", cmd.Name, cmd.Role)
		}
		if want, ok := spec[cmd.Name]; ok && cmd.Role != want {
			t.Errorf("%s: role %v, SPEC §5 says %v", cmd.Name, cmd.Role, want)
		}
		if (cmd.Flags&resp.FlagNoAuth != 0) != noAuth[cmd.Name] && cmd.Name != "reset" {
			t.Errorf("%s: runs before AUTH: %v; SPEC §5 allows only AUTH, HELLO, PING and QUIT", cmd.Name, cmd.Flags&resp.FlagNoAuth != 0)
		}
		req := strings.Split(cmd.Name, "|")
		n := cmd.Arity
		if n < 0 {
			n = -n
		}
		for len(req) < n {
			req = append(req, "x")
		}
		if cmd.Name == "lock.watch" {
			req = append(req, "FENCE", "1") // answered at once: a free key's fence is not 1
		}
		for _, l := range logins {
			allowed := l.role >= cmd.Role
			if l.role == resp.RoleNone {
				allowed = cmd.Flags&resp.FlagNoAuth != 0
			}
			if cmd.Name == "shutdown" && allowed {
				continue // it would stop the server the other cases need
			}
			var reqs [][]string
			if l.auth != nil {
				reqs = append(reqs, l.auth)
			}
			got := firstLine(t, s.Addr, append(reqs, req)...)
			switch {
			case l.role == resp.RoleNone && !allowed:
				if got != "-NOAUTH Authentication required." {
					t.Errorf("%v unauthenticated: got %q", req, got)
				}
			case !allowed:
				if want := "-NOPERM this user has no permissions to run the '" + cmd.Name + "' command"; got != want {
					t.Errorf("%v as %v: got %q, want %q", req, l.role, got, want)
				}
			case cmd.Name == "hello" && l.role == resp.RoleNone:
				// HELLO runs, and says it needs AUTH <user> <pass> with it.
				if !strings.HasPrefix(got, "-NOAUTH HELLO must be called") {
					t.Errorf("HELLO unauthenticated: got %q", got)
				}
			default:
				if strings.HasPrefix(got, "-NOAUTH") || strings.HasPrefix(got, "-NOPERM") {
					t.Errorf("%v as %v: refused: %q", req, l.role, got)
				}
			}
		}
	}
}

// LOCK-09: a connection that only reads may never hold.
func TestLOCK09_ReadOnlyConnectionMayNotHold(t *testing.T) {
	s := startWithUsers(t, tenure.Options{})
	ctx := context.Background()
	reader := redis.NewClient(&redis.Options{Addr: s.Addr, Username: "reader", Password: "reader-pass"})
	writer := redis.NewClient(&redis.Options{Addr: s.Addr, Username: "writer", Password: "writer-pass"})
	defer reader.Close()
	defer writer.Close()

	if err := writer.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := reader.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("reader GET: %q %v", v, err)
	}
	held, err := writer.Do(ctx, "LOCK.HOLD", "jobs", "j1", "req-1").Slice()
	if err != nil {
		t.Fatalf("writer HOLD: %v", err)
	}
	lease := held[0].(string)
	if _, err := reader.Do(ctx, "LOCK.INFO", "jobs", "j1").Result(); err != nil {
		t.Fatalf("reader LOCK.INFO: %v", err)
	}
	noperm := func(cmd string) string {
		return "NOPERM this user has no permissions to run the '" + cmd + "' command"
	}
	for _, tc := range []struct {
		c    *redis.Client
		args []any
		want string
	}{
		{reader, []any{"LOCK.HOLD", "jobs", "j2", "req-2"}, noperm("lock.hold")},
		{reader, []any{"LOCK.RENEW", lease}, noperm("lock.renew")},
		{reader, []any{"LOCK.RELEASE", lease}, noperm("lock.release")},
		{reader, []any{"SET", "k", "w"}, noperm("set")},
		{writer, []any{"LOCK.REVOKE", "jobs", "j1"}, noperm("lock.revoke")},
		{writer, []any{"FLUSHALL"}, noperm("flushall")},
	} {
		if err := tc.c.Do(ctx, tc.args...).Err(); err == nil || err.Error() != tc.want {
			t.Errorf("%v: got %v, want %q", tc.args, err, tc.want)
		}
	}
	// The refused commands changed nothing.
	if v, _ := reader.Get(ctx, "k").Result(); v != "v" {
		t.Errorf("k = %q after a refused SET", v)
	}
	if n, err := writer.Do(ctx, "LOCK.RENEW", lease).Int64(); err != nil || n <= 0 {
		t.Errorf("lease lost after refused RELEASE: %d %v", n, err)
	}
}

func TestAuth(t *testing.T) {
	s := startWithUsers(t, tenure.Options{})
	for _, tc := range []struct {
		reqs [][]string
		want string
	}{
		{[][]string{{"GET", "k"}}, "-NOAUTH Authentication required."},
		{[][]string{{"PING"}}, "+PONG"},
		{[][]string{{"AUTH", "default-pass"}}, "+OK"},
		{[][]string{{"AUTH", "reader", "reader-pass"}}, "+OK"},
		{[][]string{{"AUTH", "reader", "wrong"}}, "-WRONGPASS invalid username-password pair or user is disabled."},
		{[][]string{{"AUTH", "nobody", "reader-pass"}}, "-WRONGPASS invalid username-password pair or user is disabled."},
		{[][]string{{"AUTH", "wrong"}}, "-WRONGPASS invalid username-password pair or user is disabled."},
		{[][]string{{"HELLO", "2", "AUTH", "writer", "writer-pass"}}, "*14"},
		{[][]string{{"HELLO", "3", "AUTH", "writer", "writer-pass"}}, "%7"},
		{[][]string{{"HELLO", "3", "AUTH", "writer", "wrong"}}, "-WRONGPASS invalid username-password pair or user is disabled."},
		{[][]string{{"HELLO", "3"}}, "-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"},
		{[][]string{{"HELLO", "2"}}, "-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"},
		{[][]string{{"AUTH", "writer", "writer-pass"}, {"SET", "k", "v"}}, "+OK"},
		{[][]string{{"AUTH", "writer", "writer-pass"}, {"RESET"}}, "+RESET"},
	} {
		if got := firstLine(t, s.Addr, tc.reqs...); got != tc.want {
			t.Errorf("%v: got %q, want %q", tc.reqs, got, tc.want)
		}
	}
	// RESET drops the authentication.
	nc := s.Dial()
	nc.Write([]byte("AUTH writer writer-pass\r\nRESET\r\nGET k\r\n"))
	br := bufio.NewReader(nc)
	var lines []string
	for range 3 {
		l, _ := br.ReadString('\n')
		lines = append(lines, strings.TrimSpace(l))
	}
	if got := strings.Join(lines, "|"); got != "+OK|+RESET|-NOAUTH Authentication required." {
		t.Errorf("AUTH, RESET, GET: %s", got)
	}
	// go-redis with a username and password just works.
	c := redis.NewClient(&redis.Options{Addr: s.Addr, Username: "admin", Password: "admin-pass"})
	defer c.Close()
	info, err := c.Info(context.Background(), "stats").Result()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(info, "auth_failures:4\r\n") {
		t.Errorf("INFO stats does not count 4 failed AUTHs:\n%s", info)
	}
}

// Without a users file AUTH answers as Redis's nopass default user does.
func TestAuthWithoutUsers(t *testing.T) {
	s := resptest.Start(t, tenure.Options{})
	if got := firstLine(t, s.Addr, []string{"AUTH", "pw"}); got != "-ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?" {
		t.Errorf("got %q", got)
	}
	if got := firstLine(t, s.Addr, []string{"AUTH", "default", "any"}); got != "+OK" {
		t.Errorf("got %q", got)
	}
	if got := firstLine(t, s.Addr, []string{"LOCK.REVOKE", "a", "b"}); got != ":0" {
		t.Errorf("every connection is admin without users: got %q", got)
	}
}

// Before AUTH at most 10 arguments of 16 KB are read (SPEC §7), so an
// unauthenticated peer cannot make the server allocate: 100 peers each
// announcing a 500 MB bulk are cut off at the header.
func TestPreAuthLimits(t *testing.T) {
	s := startWithUsers(t, tenure.Options{})
	for _, tc := range []struct{ send, want string }{
		{"*11\r\n", "-ERR Protocol error: unauthenticated multibulk length"},
		{"*2\r\n$4\r\nAUTH\r\n$16385\r\n", "-ERR Protocol error: unauthenticated bulk length"},
		{"AUTH " + strings.Repeat("x", 16385) + "\r\n", "-ERR Protocol error: unauthenticated bulk length"},
	} {
		r := dialRaw(t, s)
		r.send(tc.send)
		if got := r.line(); got != tc.want {
			t.Errorf("%.40q: got %q, want %q", tc.send, got, tc.want)
		}
		r.expectClosed()
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range 100 {
		r := dialRaw(t, s)
		r.send("*2\r\n$3\r\nSET\r\n$500000000\r\n" + strings.Repeat("x", 1000))
		if got := r.line(); got != "-ERR Protocol error: unauthenticated bulk length" {
			t.Fatalf("got %q", got)
		}
	}
	runtime.ReadMemStats(&after)
	if grown := int64(after.TotalAlloc - before.TotalAlloc); grown > 64<<20 {
		t.Errorf("100 refused pre-auth requests allocated %d MB", grown>>20)
	}
}

// 1,000 wrong passwords leave the server responsive to others.
func TestWrongPasswordsLeaveServerResponsive(t *testing.T) {
	s := startWithUsers(t, tenure.Options{})
	r := dialRaw(t, s)
	var b strings.Builder
	for range 1000 {
		b.WriteString("AUTH reader nope\r\n")
	}
	r.send(b.String())
	c := redis.NewClient(&redis.Options{Addr: s.Addr, Username: "reader", Password: "reader-pass"})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	for range 1000 {
		if got := r.line(); got != "-WRONGPASS invalid username-password pair or user is disabled." {
			t.Fatalf("got %q", got)
		}
	}
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
}

// CLIENT LIST shows each connection's user and role; CLIENT KILL closes a
// holder's connection and its lease stays to its deadline (LOCK-11).
func TestClientListKillAndLOCK11(t *testing.T) {
	s := startWithUsers(t, tenure.Options{})
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: s.Addr, Username: "admin", Password: "admin-pass"})
	holder := redis.NewClient(&redis.Options{Addr: s.Addr, Username: "writer", Password: "writer-pass", PoolSize: 1, MaxRetries: -1})
	defer admin.Close()
	defer holder.Close()
	held, err := holder.Do(ctx, "LOCK.HOLD", "jobs", "k", "req-kill", "TTL", "60000").Slice()
	if err != nil {
		t.Fatal(err)
	}
	id, err := holder.ClientID(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	list, err := admin.ClientList(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(list, fmt.Sprintf("id=%d ", id)) || !strings.Contains(list, "user=writer role=write") || !strings.Contains(list, "user=admin role=admin") {
		t.Fatalf("CLIENT LIST:\n%s", list)
	}
	if n, err := admin.Do(ctx, "CLIENT", "KILL", "ID", id).Int64(); err != nil || n != 1 {
		t.Fatalf("CLIENT KILL ID %d: %d %v", id, n, err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; {
		list, _ := admin.ClientList(ctx).Result()
		if !strings.Contains(list, fmt.Sprintf("id=%d ", id)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the killed connection is still listed:\n%s", list)
		}
		time.Sleep(5 * time.Millisecond)
	}
	v, err := admin.Do(ctx, "LOCK.INFO", "jobs", "k").Result()
	info, _ := lockInfoFields(v)
	if err != nil || info["fence"] != held[1].(int64) {
		t.Fatalf("after CLIENT KILL the lease is gone: %v %v", info, err)
	}
	if n, err := holder.Do(ctx, "LOCK.RENEW", held[0]).Int64(); err != nil || n <= 0 {
		t.Fatalf("renew from a new connection: %d %v", n, err)
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key, PEM encoded.
func selfSigned(t *testing.T, dir, name string, isCA bool) (certFile, keyFile string, cert *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  isCA,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ = x509.ParseCertificate(der)
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	return certFile, keyFile, cert
}

func TestTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, cert := selfSigned(t, dir, "server", true)
	cfg, err := resp.LoadTLS(certFile, keyFile, "")
	if err != nil {
		t.Fatal(err)
	}
	s := resptest.Start(t, tenure.Options{TLS: cfg})
	roots := x509.NewCertPool()
	roots.AddCert(cert)
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: s.Addr, TLSConfig: &tls.Config{RootCAs: roots}})
	defer c.Close()
	if err := c.Set(ctx, "k", "over tls", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Get(ctx, "k").Result(); err != nil || v != "over tls" {
		t.Fatalf("GET over TLS: %q %v", v, err)
	}
	// A plain-text client is disconnected, not left hanging.
	r := dialRaw(t, s)
	r.send("*1\r\n$4\r\nPING\r\n")
	r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 512)
	for {
		n, err := r.br.Read(buf)
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatal("plain-text client left hanging on a TLS port")
			}
			break
		}
		if strings.Contains(string(buf[:n]), "PONG") {
			t.Fatal("plain-text PING answered on a TLS port")
		}
	}
}

func TestMutualTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, serverCert := selfSigned(t, dir, "server", true)
	clientCertFile, clientKeyFile, _ := selfSigned(t, dir, "client", true)
	cfg, err := resp.LoadTLS(certFile, keyFile, clientCertFile)
	if err != nil {
		t.Fatal(err)
	}
	s := resptest.Start(t, tenure.Options{TLS: cfg})
	roots := x509.NewCertPool()
	roots.AddCert(serverCert)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	anon := redis.NewClient(&redis.Options{Addr: s.Addr, TLSConfig: &tls.Config{RootCAs: roots}, MaxRetries: -1})
	defer anon.Close()
	if err := anon.Ping(ctx).Err(); err == nil {
		t.Fatal("a client without a certificate was served")
	}
	pair, err := tls.LoadX509KeyPair(clientCertFile, clientKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: s.Addr, TLSConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{pair}}})
	defer c.Close()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("a client with a certificate: %v", err)
	}
	if _, err := resp.LoadTLS(certFile, keyFile, filepath.Join(dir, "missing.pem")); err == nil {
		t.Error("a missing client CA file loaded")
	}
}
