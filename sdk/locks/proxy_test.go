package locks_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// proxy is a TCP proxy between the SDK and a server that makes network
// faults real: it can cut every connection at once, and swallow a reply after
// forwarding its request (the request was served; its answer never arrives,
// and the connection stays open and silent, as with a lost packet train).
// It parses RESP both ways so that it knows which reply answers which request.
type proxy struct {
	t      testing.TB
	ln     net.Listener
	target string
	wg     sync.WaitGroup

	mu        sync.Mutex
	pipes     map[*pipe]struct{}
	swallow   func(req []string, reply []byte) bool
	seen      [][]string    // every request forwarded, in order
	seenAt    []time.Time   // when each reached the proxy
	swallowed chan []string // the requests whose replies were swallowed
	closed    bool
}

// pipe is one client connection and its connection to the server.
type pipe struct {
	client, server net.Conn
	pending        chan []string // requests forwarded and not yet answered, in order
}

func startProxy(t testing.TB, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy listen: %v", err)
	}
	p := &proxy{t: t, ln: ln, target: target, pipes: map[*pipe]struct{}{}, swallowed: make(chan []string, 64)}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *proxy) Addr() string { return p.ln.Addr().String() }

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close() // the server is down: so is the proxy's answer
			continue
		}
		pp := &pipe{client: c, server: s, pending: make(chan []string, 4096)}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.Close()
			s.Close()
			return
		}
		p.pipes[pp] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.up(pp)
		go p.down(pp)
	}
}

// up forwards requests from the client to the server, noting each one.
func (p *proxy) up(pp *pipe) {
	defer p.wg.Done()
	defer p.drop(pp)
	br := bufio.NewReader(pp.client)
	for {
		raw, args, err := readRESP(br)
		if err != nil {
			return
		}
		p.mu.Lock()
		p.seen = append(p.seen, args)
		p.seenAt = append(p.seenAt, time.Now())
		p.mu.Unlock()
		pp.pending <- args
		if _, err := pp.server.Write(raw); err != nil {
			return
		}
	}
}

// down forwards replies from the server to the client, unless swallow says
// to drop one.
func (p *proxy) down(pp *pipe) {
	defer p.wg.Done()
	defer p.drop(pp)
	br := bufio.NewReader(pp.server)
	for {
		raw, _, err := readRESP(br)
		if err != nil {
			return
		}
		var req []string
		select {
		case req = <-pp.pending:
		default:
		}
		p.mu.Lock()
		swallow := p.swallow
		p.mu.Unlock()
		if swallow != nil && swallow(req, raw) {
			select {
			case p.swallowed <- req:
			default:
			}
			continue
		}
		if _, err := pp.client.Write(raw); err != nil {
			return
		}
	}
}

func (p *proxy) drop(pp *pipe) {
	pp.client.Close()
	pp.server.Close()
	p.mu.Lock()
	delete(p.pipes, pp)
	p.mu.Unlock()
}

// cutAll closes every connection, both sides, and returns how many.
func (p *proxy) cutAll() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for pp := range p.pipes {
		pp.client.Close()
		pp.server.Close()
	}
	return len(p.pipes)
}

// swallowReplies drops every reply for which f says so; nil forwards all.
// f sees the request the reply answers and the reply's raw RESP.
func (p *proxy) swallowReplies(f func(req []string, reply []byte) bool) {
	p.mu.Lock()
	p.swallow = f
	p.mu.Unlock()
}

// requests returns the forwarded requests of the command name.
func (p *proxy) requests(name string) [][]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out [][]string
	for _, r := range p.seen {
		if len(r) > 0 && strings.EqualFold(r[0], name) {
			out = append(out, r)
		}
	}
	return out
}

// requestsAt is requests with the time each reached the proxy.
func (p *proxy) requestsAt(name string) ([][]string, []time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out [][]string
	var at []time.Time
	for i, r := range p.seen {
		if len(r) > 0 && strings.EqualFold(r[0], name) {
			out, at = append(out, r), append(at, p.seenAt[i])
		}
	}
	return out, at
}

func (p *proxy) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.ln.Close()
	p.cutAll()
	p.wg.Wait()
}

// isCmd reports whether req is the command name.
func isCmd(req []string, name string) bool { return len(req) > 0 && strings.EqualFold(req[0], name) }

// readRESP reads one RESP value (RESP2, and RESP3's types in case) and returns
// its raw bytes and, for an array of bulk strings, the strings.
func readRESP(br *bufio.Reader) (raw []byte, args []string, err error) {
	err = readValue(br, &raw, &args, true)
	return raw, args, err
}

func readValue(br *bufio.Reader, raw *[]byte, args *[]string, top bool) error {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return errors.New("proxy: bad RESP line")
	}
	*raw = append(*raw, line...)
	body := string(line[1 : len(line)-2])
	switch line[0] {
	case '+', '-', ':', '_', ',', '#', '(':
		return nil
	case '$', '=', '!':
		n, err := strconv.Atoi(body)
		if err != nil {
			return err
		}
		if n < 0 {
			return nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(br, buf); err != nil {
			return err
		}
		*raw = append(*raw, buf...)
		if !top && args != nil {
			*args = append(*args, string(buf[:n]))
		}
		return nil
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(body)
		if err != nil {
			return err
		}
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		var inner *[]string
		if top && line[0] == '*' {
			inner = args
		}
		for i := 0; i < n; i++ {
			if err := readValue(br, raw, inner, false); err != nil {
				return err
			}
		}
		if line[0] == '|' { // an attribute precedes the value it describes
			return readValue(br, raw, args, top)
		}
		return nil
	}
	return fmt.Errorf("proxy: unknown RESP type %q", line[0])
}
