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

	"github.com/tenure-db/tenure/internal/peerlink"
)

// proxy stands between the clients and the server: the clients know its
// address, which stays put while the server restarts on new ones. It reads
// what passes, as RESP, to log every LOCK.HOLD that was granted (the
// server's word, whether or not the client heard it), and the raw command
// history that check (d) checks for linearizability: every lock command and
// every GET and SET of a counter, with the server that got it, its times,
// and its reply or none (evWire). And it does harm on
// the nemesis's order: it cuts connections, and it swallows the next reply
// of a connection and then cuts it, so that the client never learns what
// became of its request. In a cluster, the node's peer links pass it too
// (partition.go), unread and uncounted, unless the nemesis cut them.
type proxy struct {
	ln      net.Listener
	history *History
	target  atomic.Pointer[proxyTarget] // nil while the server is down
	gens    *atomic.Int64               // shared by the proxies of a cluster's nodes
	links   *peerlink.Links             // a cluster node's peer links (partition.go); nil for one server

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

func startProxy(history *History, gens *atomic.Int64, links *peerlink.Links) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{ln: ln, history: history, gens: gens, links: links, conns: map[*pconn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

func (p *proxy) Addr() string { return p.ln.Addr().String() }

// proxyTarget is a server the proxy passes connections to; gen counts the
// servers, so that a command on the wire can be told which one it reached.
type proxyTarget struct {
	addr string
	gen  int64
}

// setTarget points the proxy at a server, or at none (""), and returns the
// server's gen.
func (p *proxy) setTarget(addr string) int64 {
	if addr == "" {
		p.target.Store(nil)
		return 0
	}
	t := &proxyTarget{addr: addr, gen: p.gens.Add(1)}
	p.target.Store(t)
	return t.gen
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
	client, peer := p.takePeer(client)
	if peer {
		return
	}
	target := p.target.Load()
	if target == nil {
		p.refused.Add(1)
		client.Close()
		return
	}
	server, err := net.DialTimeout("tcp", target.addr, time.Second)
	if err == nil && p.target.Load() != target {
		// The server was killed meanwhile, and another may listen on
		// its port: a server gets the clients' commands only after the
		// proxy points at it (the epoch spans of linearize.go).
		server.Close()
		err = errors.New("the target changed")
	}
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

	// Each direction is copied as it comes and parsed beside, each read
	// stamped before it is passed on: the request a reply answers is the
	// oldest unanswered one, the server processed it after the read that
	// brought the request's last byte, and before the read that brought
	// the reply's.
	reqs := make(chan wireAsk, 1<<16)
	reqFeed := make(chan chunk, 64)
	repFeed := make(chan chunk, 64)
	var wg sync.WaitGroup
	wg.Add(4)
	go func() {
		defer wg.Done()
		defer close(reqFeed)
		copyFeeding(server, client, reqFeed, nil)
		c.close()
	}()
	go func() {
		defer wg.Done()
		defer close(repFeed)
		copyFeeding(client, server, repFeed, &c.swallow)
		c.close()
	}()
	go func() {
		defer wg.Done()
		defer close(reqs)
		cr := &chunkReader{ch: reqFeed}
		br := bufio.NewReader(cr)
		for {
			args, err := readRequest(br)
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
					// What passes from now on goes unrecorded.
					p.history.Add(Event{Kind: evWire, Client: "proxy", Result: "unreadable", Reply: err.Error(), Start: cr.last, Target: target.gen})
					c.close()
				}
				cr.drain()
				return
			}
			reqs <- wireAsk{args: historyArgs(args), sent: cr.last}
		}
	}()
	go func() {
		defer wg.Done()
		cr := &chunkReader{ch: repFeed}
		br := bufio.NewReader(cr)
		for {
			v, err := readReply(br)
			if err != nil {
				break
			}
			ask, ok := <-reqs
			if !ok {
				break
			}
			p.answered(ask, v, cr.last, target.gen)
		}
		cr.drain()
		// What was sent and never answered: the server may or may not
		// have done it.
		for ask := range reqs {
			if tracked(ask.args) {
				p.history.Add(Event{Kind: evWire, Client: "proxy", Args: ask.args, Start: ask.sent, Result: "unknown", Target: target.gen})
			}
		}
	}()
	wg.Wait()
}

// wireAsk is a request that went to the server, and when.
type wireAsk struct {
	args []string
	sent int64
}

// tracked says whether a request goes into the raw command history: the
// lock module's commands, the counters' GET and SET, and the Redis
// recipe's commands on its keys.
func tracked(args []string) bool {
	if len(args) < 2 {
		return false
	}
	if recipeCommand(args) {
		return true
	}
	switch strings.ToLower(args[0]) {
	case "lock.hold", "lock.renew", "lock.release":
		return true
	case "get", "set", "restore": // RESTORE: restores.go
		return strings.HasPrefix(args[1], counterKey(""))
	}
	return collTracked(args) || queueTracked(args) // hashes, sets, sorted sets: collections.go; lists: queue.go
}

// answered records a request the server answered at got (whether or not the
// reply then reached the client): every grant of a LOCK.HOLD (evGrant),
// and every tracked command (evWire).
func (p *proxy) answered(ask wireAsk, v reply, got int64, gen int64) {
	if len(ask.args) >= 4 && strings.EqualFold(ask.args[0], "lock.hold") && v.kind == '*' && len(v.elems) == 3 {
		fence, _ := strconv.ParseInt(v.elems[1].str, 10, 64)
		p.history.Add(Event{Kind: evGrant, Client: "proxy", Key: ask.args[2], ReqID: ask.args[3],
			LeaseID: v.elems[0].str, Fence: fence, Start: ask.sent, End: got, Value: ownerOf(ask.args)})
	}
	if !tracked(ask.args) {
		return
	}
	e := Event{Kind: evWire, Client: "proxy", Args: ask.args, Start: ask.sent, End: got, Target: gen}
	switch {
	case v.kind == '-':
		e.Result, e.Reply = "error", v.str
	case v.null:
		e.Result = "nil"
	case v.kind == '*':
		parts := make([]string, len(v.elems))
		for i, x := range v.elems {
			parts[i] = x.str
		}
		e.Result, e.Reply = "ok", strings.Join(parts, " ")
	default:
		e.Result, e.Reply = "ok", v.str
	}
	p.history.Add(e)
}

// ownerOf is the OWNER of a LOCK.HOLD's arguments, "" if none.
func ownerOf(args []string) string {
	for i := 4; i+1 < len(args); i++ {
		if strings.EqualFold(args[i], "owner") {
			return args[i+1]
		}
	}
	return ""
}

// chunk is what one read of a connection brought, and when it was read.
type chunk struct {
	b []byte
	t int64
}

// chunkReader reads the chunks of one direction, and tells when the last
// one it took was read.
type chunkReader struct {
	ch   <-chan chunk
	cur  []byte
	last int64
}

func (r *chunkReader) Read(p []byte) (int, error) {
	for len(r.cur) == 0 {
		c, ok := <-r.ch
		if !ok {
			return 0, io.EOF
		}
		r.cur, r.last = c.b, c.t
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}

// drain takes what is left, so that the copying goroutine never blocks.
func (r *chunkReader) drain() {
	for range r.ch {
	}
}

// copyFeeding copies src to dst, and feeds every read, stamped, to feed
// before it is written on. When swallow is set, what is read next is not
// passed on, and the connection is cut: the reply is lost on the way.
func copyFeeding(dst, src net.Conn, feed chan<- chunk, swallow *atomic.Bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			feed <- chunk{b: append([]byte(nil), buf[:n]...), t: mono()}
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
	if p.links != nil {
		p.links.CutAll()
	}
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
	case '+', '-', ':', ',', '#', '(':
		return v, nil
	case '_': // RESP3's null: clients at go-redis's defaults speak RESP3
		v.null, v.str = true, ""
		return v, nil
	case '$', '*', '=', '!', '%', '~', '>':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return v, fmt.Errorf("bad length %q", line)
		}
		if n < 0 {
			v.null, v.str = true, ""
			return v, nil
		}
		if v.kind == '$' || v.kind == '=' || v.kind == '!' {
			b := make([]byte, n+2)
			if _, err := io.ReadFull(br, b); err != nil {
				return v, err
			}
			v.str = string(b[:n])
			return v, nil
		}
		v.str = ""
		if v.kind == '%' {
			n *= 2 // a map's keys and values, in turn
		}
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
