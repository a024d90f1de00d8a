package dashboard_test

// The dashboard (SPEC §14) served by a real store on a loopback port, read
// over HTTP as a browser reads it: its page, its JSON and its stream of
// server-sent events never carry a lease id; a lock's keys come a page at
// a time; with users it asks for a password; it speaks TLS as clients do;
// an open stream does not hold up the server's shutdown.

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
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tenure-db/tenure"
	"github.com/tenure-db/tenure/resp"
	"github.com/tenure-db/tenure/resp/resptest"
)

// serve starts s's dashboard on a loopback port and returns its base URL.
func serve(t *testing.T, s *resptest.Server, scheme string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	db := s.DB
	done := make(chan error, 1)
	go func() { done <- db.ServeHTTP(ln) }()
	t.Cleanup(func() {
		s.Stop()
		select {
		case err := <-done:
			if !errors.Is(err, tenure.ErrClosed) {
				t.Errorf("ServeHTTP: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("ServeHTTP did not stop with the server")
		}
	})
	return scheme + "://" + ln.Addr().String()
}

func get(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	res, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// stream reads the event stream for d, or until it has seen every string
// of until, and returns what it read.
func stream(t *testing.T, url string, d time.Duration, until ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url+"/api/stream", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("stream: Content-Type %q", ct)
	}
	var b strings.Builder
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
		seen := true
		for _, u := range until {
			seen = seen && strings.Contains(b.String(), u)
		}
		if len(until) > 0 && seen {
			break
		}
	}
	return b.String()
}

// SPEC §14, LOCK-04, LOCK-16: the page, every JSON it reads and its event
// stream show owners, keys and fences, and never a live lease id.
func TestDashboardNeverShowsALeaseID(t *testing.T) {
	s := resptest.Start(t, tenure.Options{})
	url := serve(t, s, "http")
	c := s.Client()
	bg := context.Background()
	var ids []string
	for i := range 5 {
		v, err := c.Do(bg, "LOCK.HOLD", "jobs", fmt.Sprint("key-", i), fmt.Sprint("r", i), "OWNER", fmt.Sprint("worker-", i), "TTL", 60000).Slice()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, v[0].(string))
	}
	sem, _ := c.Do(bg, "LOCK.HOLD", "llm", "openai", "s1", "LIMIT", 3, "OWNER", "caller-1").Slice()
	ids = append(ids, sem[0].(string))
	c.Do(bg, "LOCK.HOLD", "jobs", "key-0", "waiter", "WAIT", 1, "OWNER", "patient-1") // a lingering waiter
	c.Do(bg, "LOCK.REVOKE", "jobs", "key-4")
	c.Do(bg, "LOCK.RENEW", ids[4]) // LOST revoked by admin

	seen := map[string]string{}
	for _, path := range []string{"/", "/static/app.js", "/static/style.css", "/api/summary", "/api/keys?lock=jobs",
		"/api/keys?lock=llm", "/api/key?lock=jobs&key=key-0", "/api/key?lock=llm&key=openai", "/api/events", "/api/events?lock=jobs", "/api/series", "/api/series?lock=jobs"} {
		code, body := get(t, http.DefaultClient, url+path)
		if code != 200 {
			t.Fatalf("%s: %d %s", path, code, body)
		}
		seen[path] = body
	}
	// While the stream is open, a release and a new grant come through it.
	late := make(chan string, 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		c.Do(bg, "LOCK.RELEASE", ids[1])
		v, _ := c.Do(bg, "LOCK.HOLD", "jobs", "key-1", "r-new", "OWNER", "late-owner").Slice()
		if len(v) != 3 {
			late <- ""
			return
		}
		late <- v[0].(string)
	}()
	seen["stream"] = stream(t, url, 10*time.Second, `"owner":"late-owner"`, "event: summary")
	id := <-late
	if len(id) != 32 {
		t.Fatalf("the late HOLD: %q", id)
	}
	ids = append(ids, id)
	for what, body := range seen {
		for _, id := range ids {
			if strings.Contains(strings.ToLower(body), id) {
				t.Errorf("%s shows lease id %s", what, id)
			}
		}
	}
	// What it shows instead.
	for what, want := range map[string][]string{
		"/api/keys?lock=jobs": {`"key":"key-0"`, `"owner":"worker-0"`, `"waiters":1`, `"holders":1`, `"lease_ttl_ms":60000`},
		"/api/keys?lock=llm":  {`"owner":"caller-1"`, `"limit":3`},
		// Who holds a key, and who waits for it (SPEC §14).
		"/api/key?lock=jobs&key=key-0": {`"holders":[{"fence":"`, `"owner":"worker-0"`, `"line":[{"owner":"patient-1"`, `"lingering":true`},
		"/api/key?lock=llm&key=openai": {`"owner":"caller-1"`, `"line":[]`},
		"/api/summary":                 {`"lock":"jobs"`, `"lock":"llm"`, `"role":"single"`, `"epoch":1`, `"lost":1`, `"revoked":1`},
		"/api/events":                  {`"event":"granted"`, `"event":"revoked"`, `"event":"lost"`, `"reason":"revoked by admin"`},
		"stream":                       {"event: lock", `"event":"released"`, `"key":"key-1"`, "event: summary"},
		"/":                            {`<script src="static/app.js">`},
	} {
		for _, w := range want {
			if !strings.Contains(seen[what], w) {
				t.Errorf("%s lacks %s:\n%.2000s", what, w, seen[what])
			}
		}
	}
	for _, body := range seen {
		if strings.Contains(body, "http://") && strings.Contains(body, "cdn") {
			t.Errorf("a page refers to a CDN")
		}
	}
}

// keysPage is /api/keys's reply.
type keysPage struct {
	Total, Matched, Offset int
	Keys                   []struct {
		Key, Owner, Fence string
		Waiters           int
	}
}

// A lock's keys come filtered, sorted and a page at a time, from the
// server: never the whole lock at once.
func TestDashboardKeysArePaged(t *testing.T) {
	s := resptest.Start(t, tenure.Options{})
	url := serve(t, s, "http")
	c := s.Client()
	bg := context.Background()
	pipe := c.Pipeline()
	for i := range 250 {
		pipe.Do(bg, "LOCK.HOLD", "big", fmt.Sprintf("k%03d", i), fmt.Sprint("r", i), "OWNER", fmt.Sprint("w", i%7), "TTL", 60000)
	}
	if _, err := pipe.Exec(bg); err != nil {
		t.Fatal(err)
	}
	page := func(q string) keysPage {
		t.Helper()
		code, body := get(t, http.DefaultClient, url+"/api/keys?lock=big&"+q)
		var p keysPage
		if code != 200 || json.Unmarshal([]byte(body), &p) != nil {
			t.Fatalf("/api/keys?%s: %d %s", q, code, body)
		}
		return p
	}
	if p := page(""); p.Total != 250 || p.Matched != 250 || len(p.Keys) != 100 || p.Keys[0].Key != "k000" || p.Keys[99].Key != "k099" {
		t.Fatalf("first page: total %d matched %d, %d keys", p.Total, p.Matched, len(p.Keys))
	}
	if p := page("offset=200&limit=100"); len(p.Keys) != 50 || p.Keys[49].Key != "k249" {
		t.Fatalf("last page: %d keys", len(p.Keys))
	}
	if p := page("sort=key&desc=1&limit=3"); len(p.Keys) != 3 || p.Keys[0].Key != "k249" {
		t.Fatalf("sorted by key, descending: %+v", p.Keys)
	}
	if p := page("sort=fence&desc=1&limit=1"); p.Keys[0].Key != "k249" {
		t.Fatalf("the newest fence: %+v", p.Keys)
	}
	if p := page("q=W3&limit=1000"); p.Matched != 36 || p.Total != 250 || len(p.Keys) != 36 || p.Keys[0].Owner != "w3" {
		t.Fatalf("filtered by owner w3: matched %d of %d", p.Matched, p.Total)
	}
	if p := page("q=k10"); p.Matched != 10 {
		t.Fatalf("filtered by key k10: matched %d", p.Matched)
	}
}

func usersFile(t *testing.T, lines ...string) *resp.Users {
	t.Helper()
	var b strings.Builder
	for _, l := range lines {
		f := strings.Fields(l) // name role password
		name, role, password := f[0], f[1], f[2]
		sum := sha256.Sum256([]byte(password))
		fmt.Fprintf(&b, "user %s %s sha256:%s\n", name, role, hex.EncodeToString(sum[:]))
	}
	u, err := resp.ParseUsers(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// SPEC §14: with users, the page and /metrics ask for a known user's
// password (HTTP basic auth), any role.
func TestDashboardBasicAuth(t *testing.T) {
	s := resptest.Start(t, tenure.Options{Users: usersFile(t, "reader read r-pass", "boss admin a-pass")})
	url := serve(t, s, "http")
	for _, path := range []string{"/", "/metrics", "/api/summary", "/api/stream", "/static/app.js"} {
		for _, tc := range []struct {
			user, password string
			want           int
		}{
			{"", "", http.StatusUnauthorized},
			{"reader", "wrong", http.StatusUnauthorized},
			{"nobody", "r-pass", http.StatusUnauthorized},
			{"reader", "r-pass", http.StatusOK},
			{"boss", "a-pass", http.StatusOK},
		} {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			req, _ := http.NewRequestWithContext(ctx, "GET", url+path, nil)
			if tc.user != "" {
				req.SetBasicAuth(tc.user, tc.password)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				cancel()
				t.Fatal(err)
			}
			res.Body.Close()
			cancel()
			if res.StatusCode != tc.want {
				t.Errorf("%s as %q/%q: %d, want %d", path, tc.user, tc.password, res.StatusCode, tc.want)
			}
			if tc.want == http.StatusUnauthorized && !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Basic ") {
				t.Errorf("%s: a 401 without a Basic challenge", path)
			}
		}
	}
}

// With --tls-cert the dashboard speaks HTTPS, as RESP clients get TLS.
func TestDashboardTLS(t *testing.T) {
	certFile, keyFile, cert := selfSigned(t, t.TempDir())
	cfg, err := resp.LoadTLS(certFile, keyFile, "")
	if err != nil {
		t.Fatal(err)
	}
	s := resptest.Start(t, tenure.Options{TLS: cfg})
	url := serve(t, s, "https")
	roots := x509.NewCertPool()
	roots.AddCert(cert)
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}, Timeout: 5 * time.Second}
	if code, body := get(t, c, url+"/"); code != 200 || !strings.Contains(body, "<title>tenure") {
		t.Fatalf("GET / over TLS: %d", code)
	}
	if _, err := http.Get(strings.Replace(url, "https", "http", 1) + "/"); err == nil {
		// A plain request to a TLS port gets Go's 400, never the page.
		code, body := get(t, http.DefaultClient, strings.Replace(url, "https", "http", 1)+"/")
		if code == 200 || strings.Contains(body, "<title>tenure") {
			t.Fatalf("the page served in plain text on a TLS port")
		}
	}
}

// An open event stream ends when the server shuts down, and does not
// hold the shutdown up.
func TestDashboardStreamEndsAtShutdown(t *testing.T) {
	s := resptest.Start(t, tenure.Options{})
	url := serve(t, s, "http")
	res, err := http.Get(url + "/api/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	br := bufio.NewReader(res.Body)
	if line, err := br.ReadString('\n'); err != nil || !strings.HasPrefix(line, "event: ") {
		t.Fatalf("first line of the stream: %q %v", line, err)
	}
	start := time.Now()
	s.Stop()
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("shutdown took %v with a stream open", d)
	}
	if _, err := io.Copy(io.Discard, br); err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Logf("stream ended: %v", err)
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key, PEM encoded.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, cert *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "dashboard"},
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
	cert, _ = x509.ParseCertificate(der)
	kder, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile = filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	return certFile, keyFile, cert
}

// SPEC §14: with 100,000 held keys the page gets 50 of them at a time, and
// its lock table and stream stay the size of the lock list, not of the keys.
func TestDashboardHundredThousandKeys(t *testing.T) {
	const n = 100_000
	s := resptest.Start(t, tenure.Options{})
	url := serve(t, s, "http")
	c := s.Client()
	bg := context.Background()
	start := time.Now()
	for i := 0; i < n; i += 2000 {
		pipe := c.Pipeline()
		for j := i; j < i+2000; j++ {
			pipe.Do(bg, "LOCK.HOLD", "huge", fmt.Sprintf("key-%06d", j), fmt.Sprint("r", j), "OWNER", fmt.Sprint("w-", j%97), "TTL", 600000)
		}
		if _, err := pipe.Exec(bg); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d keys held in %v", n, time.Since(start))

	timed := func(path string) (string, time.Duration) {
		t.Helper()
		start := time.Now()
		code, body := get(t, http.DefaultClient, url+path)
		if code != 200 {
			t.Fatalf("%s: %d", path, code)
		}
		return body, time.Since(start)
	}
	body, first := timed("/api/keys?lock=huge&sort=held&desc=1&limit=50")
	var p keysPage
	if err := json.Unmarshal([]byte(body), &p); err != nil || p.Total != n || len(p.Keys) != 50 {
		t.Fatalf("a page of a lock of %d keys: total %d, %d keys, %v", n, p.Total, len(p.Keys), err)
	}
	body, filtered := timed("/api/keys?lock=huge&q=w-96&limit=50") // within the second: the walk is reused
	json.Unmarshal([]byte(body), &p)
	if p.Matched != n/97 || len(p.Keys) != 50 {
		t.Fatalf("filtered: matched %d, %d keys", p.Matched, len(p.Keys))
	}
	summary, took := timed("/api/summary")
	if len(summary) > 4096 {
		t.Fatalf("the summary of one lock of %d keys is %d bytes", n, len(summary))
	}
	t.Logf("first page (a walk of every key, sorted by held-for): %v; filtered page: %v; summary: %v, %d bytes", first, filtered, took, len(summary))
	if first > 20*time.Second {
		t.Fatalf("a page took %v", first)
	}
}
