package resp

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenure-db/tenure/cluster"
	"github.com/tenure-db/tenure/internal/redistext"
)

// Pub/sub (SPEC §13): SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE and their UN-
// forms, PUBLISH, SPUBLISH and PUBSUB, as Redis 7.
//
// A publisher never waits for a subscriber. Each subscribing connection has
// a pushQueue, its bounded output, and a writer goroutine of its own that
// writes it to the socket; PUBLISH appends the message to the queue of each
// subscriber and goes on. A subscriber whose queue passes the pubsub class
// of client-output-buffer-limit (32 MB, or 8 MB for 60 s) is disconnected
// and counted (INFO's client_output_buffer_limit_disconnections, the metric
// tenure_pubsub_output_limit_disconnects_total).
//
// Once a connection has a queue, its own replies go through it too
// (flush), so that everything it is sent keeps one order, as in Redis's
// output buffer: a message published before a reply comes before it. The
// confirmation of a SUBSCRIBE is a reply like any other, written by the
// handler; what is published to the connection between the subscription
// and the write of that reply is held (pushQueue.hold) and follows it.
//
// The hub's maps are guarded by pubsub.mu: a subscription changes them
// under the write lock, a publish reads them under the read lock and
// delivers under it, so a publish either misses a subscription or is
// delivered after its confirmation. A connection's own sets
// (subscriptions) are changed only by its goroutine, under the same lock.

// psKind is one of the three namespaces of subscriptions.
type psKind uint8

const (
	psChannel psKind = iota // SUBSCRIBE, PUBLISH
	psPattern               // PSUBSCRIBE
	psShard                 // SSUBSCRIBE, SPUBLISH
	psKinds
)

var (
	psSubscribeWord   = [psKinds]string{"subscribe", "psubscribe", "ssubscribe"}
	psUnsubscribeWord = [psKinds]string{"unsubscribe", "punsubscribe", "sunsubscribe"}
)

// pubsub is a server's channels, patterns and shard channels, and their
// subscribers.
type pubsub struct {
	mu   sync.RWMutex
	subs [psKinds]map[string]map[*conn]struct{}
	// n counts the subscriptions of every kind: a publish, a keyspace
	// notification or a lock event with nobody subscribed reads it and
	// does nothing more.
	n atomic.Int64

	limits atomic.Pointer[obufLimits] // client-output-buffer-limit
	cut    atomic.Int64               // subscribers disconnected at their output limit

	// notify is notify-keyspace-events, as flags (notify.go).
	notify atomic.Uint32
	// lockSink, while L is on, removes the lock module's event sink
	// (notify.go); guarded by sinkMu.
	sinkMu   sync.Mutex
	lockSink func()
}

func (ps *pubsub) init() {
	for k := range ps.subs {
		ps.subs[k] = map[string]map[*conn]struct{}{}
	}
	ps.limits.Store(defaultObufLimits())
}

// subscriptions are one connection's, in the order it made them (UNSUBSCRIBE
// without arguments goes through them in that order).
type subscriptions struct {
	names [psKinds][]string
	set   [psKinds]map[string]struct{}
	q     *pushQueue
}

// count is what a (un)subscribe confirmation of kind k reports: channels
// and patterns together, shard channels apart, as Redis 7.0.
func (s *subscriptions) count(k psKind) int64 {
	if s == nil {
		return 0
	}
	if k == psShard {
		return int64(len(s.names[psShard]))
	}
	return int64(len(s.names[psChannel]) + len(s.names[psPattern]))
}

// total is every subscription of the connection: above 0, a RESP2
// connection is in subscribed mode.
func (s *subscriptions) total() int {
	if s == nil {
		return 0
	}
	return len(s.names[psChannel]) + len(s.names[psPattern]) + len(s.names[psShard])
}

// subscribed says c is in Redis's subscribed mode (some subscription).
func (c *conn) subscribed() bool { return c.ps.total() > 0 }

// subscribedRESP2 says c may only (P|S)(UN)SUBSCRIBE, PING, QUIT and RESET.
func (c *conn) subscribedRESP2() bool { return !c.out.resp3 && c.subscribed() }

// pubsubState is c's subscriptions, made with its queue and writer at
// the first subscription.
func (c *conn) pubsubState() *subscriptions {
	if c.ps == nil {
		s := &subscriptions{q: newPushQueue()}
		for k := range s.set {
			s.set[k] = map[string]struct{}{}
		}
		s.q.resp3.Store(c.out.resp3)
		go c.writePushes(s.q)
		h := &c.srv.pubsub
		h.mu.Lock() // CLIENT LIST reads c.ps from other connections' goroutines
		c.ps = s
		h.mu.Unlock()
	}
	return c.ps
}

// subscribe is SUBSCRIBE, PSUBSCRIBE and SSUBSCRIBE: one confirmation per
// name, with the connection's count after it.
func (c *conn) subscribe(k psKind, names [][]byte) {
	if c.nc == nil {
		// In process (Server.Do) there is no connection to push to.
		c.out.Err("SUBSCRIBE is for a client connection, not a request run in process")
		return
	}
	s := c.pubsubState()
	h := &c.srv.pubsub
	for _, b := range names {
		name := string(b)
		h.mu.Lock()
		if _, ok := s.set[k][name]; !ok {
			s.set[k][name] = struct{}{}
			s.names[k] = append(s.names[k], name)
			m := h.subs[k][name]
			if m == nil {
				m = map[*conn]struct{}{}
				h.subs[k][name] = m
			}
			m[c] = struct{}{}
			h.n.Add(1)
		}
		s.q.hold() // what is published from now on follows this reply
		n := s.count(k)
		h.mu.Unlock()
		c.pushReply(psSubscribeWord[k], b, true, n)
	}
}

// unsubscribe is UNSUBSCRIBE, PUNSUBSCRIBE and SUNSUBSCRIBE: no names means
// every subscription of the kind; with none, one confirmation with a null
// name.
func (c *conn) unsubscribe(k psKind, names [][]byte) {
	s := c.ps
	if len(names) == 0 {
		if s == nil || len(s.names[k]) == 0 {
			c.pushReply(psUnsubscribeWord[k], nil, false, s.count(k))
			return
		}
		for _, n := range s.names[k] {
			names = append(names, []byte(n))
		}
	}
	for _, b := range names {
		n := c.unsubscribeOne(k, string(b))
		c.pushReply(psUnsubscribeWord[k], b, true, n)
	}
}

// unsubscribeOne drops one subscription, if c has it, and returns c's
// count after.
func (c *conn) unsubscribeOne(k psKind, name string) int64 {
	s := c.ps
	if s == nil {
		return 0
	}
	h := &c.srv.pubsub
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := s.set[k][name]; ok {
		delete(s.set[k], name)
		for i, n := range s.names[k] {
			if n == name {
				s.names[k] = append(s.names[k][:i], s.names[k][i+1:]...)
				break
			}
		}
		if m := h.subs[k][name]; m != nil {
			delete(m, c)
			if len(m) == 0 {
				delete(h.subs[k], name)
			}
		}
		h.n.Add(-1)
	}
	return s.count(k)
}

// unsubscribeAll drops every subscription of c, telling nobody: RESET, and
// a connection that closes.
func (c *conn) unsubscribeAll() {
	s := c.ps
	if s == nil {
		return
	}
	h := &c.srv.pubsub
	h.mu.Lock()
	for k := range s.names {
		for _, name := range s.names[k] {
			if m := h.subs[k][name]; m != nil {
				delete(m, c)
				if len(m) == 0 {
					delete(h.subs[k], name)
				}
			}
			h.n.Add(-1)
		}
		s.names[k] = nil
		clear(s.set[k])
	}
	h.mu.Unlock()
}

// pushReply writes a (un)subscribe confirmation: [word, name, count], a
// push in RESP3, an array in RESP2; name is null when !hasName.
func (c *conn) pushReply(word string, name []byte, hasName bool, count int64) {
	c.out.Push(3)
	c.out.BulkString(word)
	if hasName {
		c.out.Bulk(name)
	} else {
		c.out.Null()
	}
	c.out.Int(count)
}

// publish delivers msg on channel (kind psChannel or psShard) to every
// subscriber, and, for psChannel, to every matching pattern's, without
// waiting for any; it returns how many received it, as PUBLISH answers.
func (s *Server) publish(k psKind, channel, msg []byte) int64 {
	h := &s.pubsub
	if h.n.Load() == 0 {
		return 0
	}
	var m message
	m.channel, m.payload = channel, msg
	if k == psShard {
		m.word = "smessage"
	} else {
		m.word = "message"
	}
	var n int64
	lim := h.limits.Load()
	h.mu.RLock()
	for c := range h.subs[k][string(channel)] {
		s.deliver(c, m.encoded(c.ps.q.resp3.Load()), lim)
		n++
	}
	if k == psChannel && len(h.subs[psPattern]) > 0 {
		pm := message{word: "pmessage", channel: channel, payload: msg}
		for pat, conns := range h.subs[psPattern] {
			if !redistext.Match([]byte(pat), channel) {
				continue
			}
			pm.pattern, pm.enc2, pm.enc3 = pat, nil, nil
			for c := range conns {
				s.deliver(c, pm.encoded(c.ps.q.resp3.Load()), lim)
				n++
			}
		}
	}
	h.mu.RUnlock()
	return n
}

// deliver queues b for c, or cuts c off if it would pass its output
// limit. The caller holds pubsub.mu (read).
func (s *Server) deliver(c *conn, b []byte, lim *obufLimits) {
	if c.ps.q.deliver(b, lim, time.Now) {
		return
	}
	s.pubsub.cut.Add(1)
	s.log.Warn("closing a subscriber over client-output-buffer-limit pubsub", "client", c.addr,
		"hard", lim.class[obufPubSub].hard, "soft", lim.class[obufPubSub].soft, "soft_seconds", lim.class[obufPubSub].softSeconds)
	// Its goroutines see the error and end. Apart, as a TLS connection's
	// Close may try to write its close_notify to a full socket for a while:
	// the publisher goes on at once.
	go c.nc.Close()
}

// message is one message to deliver, encoded once per protocol.
type message struct {
	word             string // message, pmessage, smessage
	pattern          string // pmessage only
	channel, payload []byte
	enc2, enc3       []byte
}

func (m *message) encoded(resp3 bool) []byte {
	p := &m.enc2
	if resp3 {
		p = &m.enc3
	}
	if *p == nil {
		n := 3
		if m.pattern != "" {
			n = 4
		}
		size := 64 + len(m.pattern) + len(m.channel) + len(m.payload)
		b := make([]byte, 0, size)
		if resp3 {
			b = appendHeader(b, '>', n)
		} else {
			b = appendHeader(b, '*', n)
		}
		b = appendBulk(b, m.word)
		if m.pattern != "" {
			b = appendBulk(b, m.pattern)
		}
		b = appendBulk(b, string(m.channel))
		b = appendBulk(b, string(m.payload))
		*p = b
	}
	return *p
}

func appendBulk(b []byte, s string) []byte {
	b = appendHeader(b, '$', len(s))
	b = append(b, s...)
	return append(b, '\r', '\n')
}

// Push starts a push of n elements in RESP3 (">n"); in RESP2, where
// pub/sub's messages and confirmations are arrays, an array.
func (r *reply) Push(n int) {
	if r.v != nil || !r.resp3 {
		r.Array(n)
		return
	}
	r.b = appendHeader(r.b, '>', n)
}

// dropSubscribers disconnects every subscriber: this node stopped leading
// a cluster (SPEC §13), and its clients resubscribe where MOVED points.
func (s *Server) dropSubscribers() {
	seen := s.pubsub.subscribers()
	for c := range seen {
		c.nc.Close()
	}
	if len(seen) > 0 {
		s.log.Info("disconnected the subscribers of a node that stopped leading", "subscribers", len(seen))
	}
}

// pubsubCounts are CLIENT LIST's sub, psub and ssub of c.
func (c *conn) pubsubCounts() (sub, psub, ssub int) {
	h := &c.srv.pubsub
	h.mu.RLock()
	defer h.mu.RUnlock()
	if s := c.ps; s != nil {
		return len(s.names[psChannel]), len(s.names[psPattern]), len(s.names[psShard])
	}
	return 0, 0, 0
}

// stats are INFO's pubsub_channels, pubsub_patterns and pubsubshard_channels.
func (ps *pubsub) stats() (channels, patterns, shard int) {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	return len(ps.subs[psChannel]), len(ps.subs[psPattern]), len(ps.subs[psShard])
}

// Handlers.

func cmdSubscribe(c *conn, args [][]byte)    { c.subscribe(psChannel, args[1:]) }
func cmdPSubscribe(c *conn, args [][]byte)   { c.subscribe(psPattern, args[1:]) }
func cmdSSubscribe(c *conn, args [][]byte)   { c.subscribe(psShard, args[1:]) }
func cmdUnsubscribe(c *conn, args [][]byte)  { c.unsubscribe(psChannel, args[1:]) }
func cmdPUnsubscribe(c *conn, args [][]byte) { c.unsubscribe(psPattern, args[1:]) }
func cmdSUnsubscribe(c *conn, args [][]byte) { c.unsubscribe(psShard, args[1:]) }

func cmdPublish(c *conn, args [][]byte) { c.out.Int(c.srv.publish(psChannel, args[1], args[2])) }
func cmdSPublish(c *conn, args [][]byte) {
	c.out.Int(c.srv.publish(psShard, args[1], args[2]))
}

// cmdPubSubChannels is PUBSUB CHANNELS [pattern] and PUBSUB SHARDCHANNELS
// [pattern]: the channels with a subscriber, matching pattern if given.
func pubsubChannels(k psKind) func(c *conn, args [][]byte) {
	return func(c *conn, args [][]byte) {
		if len(args) > 3 {
			c.out.Err("Unknown subcommand or wrong number of arguments for '" + cut128(args[1]) + "'. Try PUBSUB HELP.")
			return
		}
		h := &c.srv.pubsub
		var list []string
		h.mu.RLock()
		for name := range h.subs[k] {
			if len(args) < 3 || redistext.Match(args[2], []byte(name)) {
				list = append(list, name)
			}
		}
		h.mu.RUnlock()
		sort.Strings(list)
		c.out.BulkStrings(list...)
	}
}

// pubsubNumSub is PUBSUB NUMSUB and SHARDNUMSUB: each channel and its
// subscribers, in the order asked.
func pubsubNumSub(k psKind) func(c *conn, args [][]byte) {
	return func(c *conn, args [][]byte) {
		h := &c.srv.pubsub
		c.out.Map(len(args) - 2)
		h.mu.RLock()
		defer h.mu.RUnlock()
		for _, name := range args[2:] {
			c.out.Bulk(name)
			c.out.Int(int64(len(h.subs[k][string(name)])))
		}
	}
}

func cmdPubSubNumPat(c *conn, args [][]byte) {
	_, patterns, _ := c.srv.pubsub.stats()
	c.out.Int(int64(patterns))
}

func cmdPubSubHelp(c *conn, args [][]byte) {
	c.out.BulkStrings(
		"PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"CHANNELS [<pattern>]",
		"    Return the currently active channels matching a <pattern> (default: '*').",
		"NUMPAT",
		"    Return number of subscriptions to patterns.",
		"NUMSUB [<channel> ...]",
		"    Return the number of subscribers for the specified channels, excluding",
		"    pattern subscriptions(default: no channels).",
		"SHARDCHANNELS [<pattern>]",
		"    Return the currently active shard level channels matching a <pattern> (default: '*').",
		"SHARDNUMSUB [<shardchannel> ...]",
		"    Return the number of subscribers for the specified shard level channel(s)",
		"HELP",
		"    Print this help.",
	)
}

// clients is INFO's pubsub_clients: connections with a subscription.
func (ps *pubsub) clients() int { return len(ps.subscribers()) }

// subscribers are the connections with a subscription.
func (ps *pubsub) subscribers() map[*conn]struct{} {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	seen := map[*conn]struct{}{}
	for k := range ps.subs {
		for _, conns := range ps.subs[k] {
			for c := range conns {
				seen[c] = struct{}{}
			}
		}
	}
	return seen
}

// Leadership is what a cluster's node pauses and resumes as leadership
// changes (cluster.Locks): the lock module (LOCK-14), and pub/sub, which
// the leader alone serves (SPEC §13): when the node stops leading, its
// subscribers are disconnected, so that their clients resubscribe where
// MOVED points; and its clients blocked in BLPOP and the like are answered
// TRYAGAIN, so that they retry on the new leader (resp/blocking.go).
func (s *Server) Leadership() cluster.Locks { return leadership{s} }

type leadership struct{ s *Server }

func (l leadership) Pause() {
	l.s.locks.Pause()
	l.s.dropSubscribers()
	l.s.blocks.unblockAll("leader")
}

func (l leadership) Resume(epoch uint64) { l.s.locks.Resume(epoch) }
