package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// proxy stands between the clients and the server: the clients know its
// address, which stays put while the server restarts on new ones. It reads
// what passes, as RESP, to log every LOCK.HOLD that was granted (the
// server's word, whether or not the client heard it), and it does harm on
// the nemesis's order: it cuts connections, and it swallows the next reply
// of a connection and then cuts it, so that the client never learns what
// became of its request.
type proxy struct {
	ln      net.Listener
	history *History
	target  atomic.Pointer[string] // the server's address; nil while it is down

	mu    sync.Mutex
	conns map[*pconn]struct{}
	wg    sync.WaitGroup

	accepted, refused atomic.Int64
}

type pconn struct {
	client, server net.Conn
	swallow        atomic.Bool
	once           sync.Once
}

func (c *pconn) close() {
	c.once.Do(func() {
		c.client.Close()
		c.server.Close()
	})
}

func startProxy(history *History) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{ln: ln, history: history, conns: map[*pconn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

func (p *proxy) Addr() string { return p.ln.Addr().String() }

func (p *proxy) setTarget(addr string) {
	if addr == "" {
		p.target.Store(nil)
		return
	}
	p.target.Store(&addr)
}

func (p *proxy) serve() {
	defer p.wg.Done()
	for {
		nc, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.handle(nc)
		}()
	}
}

func (p *proxy) handle(client net.Conn) {
	target := p.target.Load()
	if target == nil {
		p.refused.Add(1)
		client.Close()
		return
	}
	server, err := net.DialTimeout("tcp", *target, time.Second)
	if err != nil {
		p.refused.Add(1)
		client.Close()
		return
	}
	p.accepted.Add(1)
	c := &pconn{client: client, server: server}
	p.mu.Lock()
	p.conns[c] = struct{}{}
	p.mu.Unlock()
	defer func() {
		c.close()
		p.mu.Lock()
		delete(p.conns, c)
		p.mu.Unlock()
	}()

	// Each direction is copied as it comes and parsed beside: requests
	// tell which reply answers a LOCK.HOLD, and with which reqid.
	reqs := make(chan holdAsk, 1<<16)
	reqPipe, reqFeed := io.Pipe()
	repPipe, repFeed := io.Pipe()
	var wg sync.WaitGroup
	wg.Add(4)
	go func() {
		defer wg.Done()
		defer reqFeed.Close()
		copyFeeding(server, client, reqFeed, nil)
		c.close()
	}()
	go func() {
		defer wg.Done()
		defer repFeed.Close()
		copyFeeding(client, server, repFeed, &c.swallow)
		c.close()
	}()
	go func() {
		defer wg.Done()
		defer close(reqs)
		br := bufio.NewReader(reqPipe)
		for {
			args, err := readRequest(br)
			if err != nil {
				io.Copy(io.Discard, reqPipe)
				return
			}
			ask := holdAsk{}
			if len(args) >= 4 && strings.EqualFold(args[0], "lock.hold") {
				ask = holdAsk{hold: true, lock: args[1], key: args[2], reqid: args[3]}
			}
			reqs <- ask
		}
	}()
	go func() {
		defer wg.Done()
		br := bufio.NewReader(repPipe)
		for {
			v, err := readReply(br)
			if err != nil {
				io.Copy(io.Discard, repPipe)
				return
			}
			ask, ok := <-reqs
			if !ok {
				io.Copy(io.Discard, repPipe)
				return
			}
			if ask.hold && v.kind == '*' && len(v.elems) == 3 {
				fence, _ := strconv.ParseInt(v.elems[1].str, 10, 64)
				p.history.Add(Event{Kind: evGrant, Client: "proxy", Key: ask.key, ReqID: ask.reqid,
					LeaseID: v.elems[0].str, Fence: fence, End: mono()})
			}
		}
	}()
	wg.Wait()
}

type holdAsk struct {
	hold             bool
	lock, key, reqid string
}

// copyFeeding copies src to dst and everything read to feed. When swallow
// is set, what is read next is not passed on, and the connection is cut:
// the reply is lost on the way.
func copyFeeding(dst, src net.Conn, feed io.Writer, swallow *atomic.Bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			feed.Write(buf[:n])
			if swallow != nil && swallow.Load() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// cut closes a fraction of the connections (all with 1) and says how many.
func (p *proxy) cut(rng *rand.Rand, fraction float64) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for c := range p.conns {
		if rng.Float64() < fraction {
			c.close()
			n++
		}
	}
	return n
}

// swallowSome marks a fraction of the connections to lose their next reply.
func (p *proxy) swallowSome(rng *rand.Rand, fraction float64) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for c := range p.conns {
		if rng.Float64() < fraction {
			c.swallow.Store(true)
			n++
		}
	}
	return n
}

func (p *proxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// reply is one RESP2 reply.
type reply struct {
	kind  byte
	str   string
	null  bool
	elems []reply
}

// readRequest reads one multibulk request (go-redis sends nothing else).
func readRequest(br *bufio.Reader) ([]string, error) {
	line, err := readLine(br)
	if err != nil {
		return nil, err
	}
	if len(line) == 0 || line[0] != '*' {
		return strings.Fields(line), nil // inline
	}
	n, err := strconv.Atoi(line[1:])
	if err != nil {
		return nil, fmt.Errorf("bad multibulk %q", line)
	}
	args := make([]string, 0, max(n, 0))
	for range n {
		v, err := readReply(br)
		if err != nil {
			return nil, err
		}
		args = append(args, v.str)
	}
	return args, nil
}

func readReply(br *bufio.Reader) (reply, error) {
	line, err := readLine(br)
	if err != nil {
		return reply{}, err
	}
	if len(line) == 0 {
		return reply{}, errors.New("empty line")
	}
	v := reply{kind: line[0], str: line[1:]}
	switch v.kind {
	case '+', '-', ':':
		return v, nil
	case '$', '*':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return v, fmt.Errorf("bad length %q", line)
		}
		if n < 0 {
			v.null, v.str = true, ""
			return v, nil
		}
		if v.kind == '$' {
			b := make([]byte, n+2)
			if _, err := io.ReadFull(br, b); err != nil {
				return v, err
			}
			v.str = string(b[:n])
			return v, nil
		}
		v.str = ""
		for range n {
			e, err := readReply(br)
			if err != nil {
				return v, err
			}
			v.elems = append(v.elems, e)
		}
		return v, nil
	}
	return v, fmt.Errorf("unknown reply %q", line)
}

func readLine(br *bufio.Reader) (string, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r"), nil
}
