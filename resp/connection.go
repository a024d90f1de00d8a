package resp

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Connection commands: PING, ECHO, HELLO, AUTH, QUIT, SELECT, RESET, CLIENT.

func cmdPing(c *conn, args [][]byte) {
	if c.subscribedRESP2() {
		// Redis's PING in RESP2's subscribed mode: ["pong", arg or ""].
		c.out.Array(2)
		c.out.BulkString("pong")
		if len(args) > 1 {
			c.out.Bulk(args[1])
		} else {
			c.out.BulkString("")
		}
		return
	}
	switch len(args) {
	case 1:
		c.out.Status("PONG")
	case 2:
		c.out.Bulk(args[1])
	default:
		c.wrongArity("ping")
	}
}

func cmdEcho(c *conn, args [][]byte) { c.out.Bulk(args[1]) }

func cmdQuit(c *conn, args [][]byte) {
	c.out.OK()
	c.closing = true
}

func cmdSelect(c *conn, args [][]byte) {
	// Redis reads the index as a C int.
	n, ok := parseInt(args[1])
	switch {
	case !ok:
		c.out.Err(errNotInteger)
	case n < math.MinInt32 || n > math.MaxInt32:
		c.out.Err("value is out of range, value must between -2147483648 and 2147483647")
	case n != 0:
		c.out.Err("DB index is out of range")
	default:
		c.out.OK()
	}
}

// cmdHello is HELLO [protover [AUTH user pass] [SETNAME name]], as Redis 7
// answers it: every option is checked before AUTH is tried, the name is set
// and the protocol switched only once the connection is admitted, and the
// reply is in the protocol just chosen. Without a version the connection
// keeps the one it speaks.
func cmdHello(c *conn, args [][]byte) {
	i, proto := 1, c.out.Proto()
	if len(args) > 1 {
		v, ok := parseInt(args[1])
		if !ok {
			c.out.Err("Protocol version is not an integer or out of range")
			return
		}
		if v != 2 && v != 3 {
			c.out.Error("NOPROTO", "unsupported protocol version")
			return
		}
		i, proto = 2, int(v)
	}
	var user, password, name []byte
	auth, setName := false, false
	for ; i < len(args); i++ {
		more := len(args) - 1 - i
		switch opt := strings.ToLower(string(args[i])); {
		case opt == "auth" && more >= 2:
			user, password, auth = args[i+1], args[i+2], true
			i += 2
		case opt == "setname" && more >= 1:
			if !validClientName(args[i+1]) {
				c.out.Err(errClientName)
				return
			}
			name, setName = args[i+1], true
			i++
		default:
			c.out.Err("Syntax error in HELLO option '" + cString(args[i], len(args[i])) + "'")
			return
		}
	}
	if auth && !c.authenticate(user, password) {
		return
	}
	if c.role == RoleNone {
		c.out.Error("NOAUTH", "HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
		return
	}
	c.mu.Lock()
	if setName {
		c.name = string(name)
	}
	c.out.resp3 = proto == 3
	c.mu.Unlock()
	c.out.Map(7)
	c.out.BulkString("server")
	c.out.BulkString("tenure")
	c.out.BulkString("version")
	c.out.BulkString(RedisVersion)
	c.out.BulkString("proto")
	c.out.Int(int64(proto))
	c.out.BulkString("id")
	c.out.Int(c.id)
	c.out.BulkString("mode")
	c.out.BulkString("standalone")
	c.out.BulkString("role")
	c.out.BulkString("master")
	c.out.BulkString("modules")
	c.out.Array(0)
}

func cmdAuth(c *conn, args [][]byte) {
	switch len(args) {
	case 2:
		if c.srv.users == nil {
			c.out.Err("AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
			return
		}
		if c.authenticate([]byte("default"), args[1]) {
			c.out.OK()
		}
	case 3:
		if c.authenticate(args[1], args[2]) {
			c.out.OK()
		}
	default:
		c.syntaxError()
	}
}

// authenticate admits the connection as user with that user's role, or
// answers -WRONGPASS and reports false.
func (c *conn) authenticate(user, password []byte) bool {
	role, ok := c.srv.users.check(string(user), password)
	if !ok {
		c.srv.stats.authFailures.Add(1)
		c.srv.log.Warn("authentication failed", "client", c.addr, "user", string(user))
		c.out.Error("WRONGPASS", "invalid username-password pair or user is disabled.")
		return false
	}
	c.mu.Lock()
	c.role, c.user = role, string(user)
	c.mu.Unlock()
	c.rd.unauth = false
	return true
}

// cmdReset puts the connection back as it was opened: no name, RESP2,
// and, with users configured, not authenticated.
func cmdReset(c *conn, args [][]byte) {
	c.endTx()
	c.unsubscribeAll() // out of subscribed mode, telling nobody
	c.stopMonitoring()
	c.replyMode = replyOn
	c.mu.Lock()
	c.name = ""
	c.noEvict, c.noTouch = false, false
	c.out.resp3 = false
	if c.srv.users != nil {
		c.role, c.user = RoleNone, "default"
		c.rd.unauth = true
	}
	c.mu.Unlock()
	c.out.Status("RESET")
}

func cmdClientID(c *conn, args [][]byte) { c.out.Int(c.id) }

func cmdClientSetName(c *conn, args [][]byte) {
	if !validClientName(args[2]) {
		c.out.Err(errClientName)
		return
	}
	c.mu.Lock()
	c.name = string(args[2])
	c.mu.Unlock()
	c.out.OK()
}

func cmdClientGetName(c *conn, args [][]byte) {
	c.mu.Lock()
	name := c.name
	c.mu.Unlock()
	if name == "" {
		c.out.Null()
		return
	}
	c.out.BulkString(name)
}

func cmdClientSetInfo(c *conn, args [][]byte) {
	// Redis's errors name the attribute as the client spelled it.
	attr := strings.ToLower(string(args[2]))
	if attr != "lib-name" && attr != "lib-ver" {
		c.out.Err("Unrecognized option '" + cString(args[2], len(args[2])) + "'")
		return
	}
	if !validClientName(args[3]) {
		c.out.Err(cString(args[2], len(args[2])) + " cannot contain spaces, newlines or special characters.")
		return
	}
	c.mu.Lock()
	if attr == "lib-name" {
		c.libName = string(args[3])
	} else {
		c.libVer = string(args[3])
	}
	c.mu.Unlock()
	c.out.OK()
}

func cmdClientInfo(c *conn, args [][]byte) { c.out.Verbatim(c.describe(time.Now()) + "\n") }

// cmdClientList is CLIENT LIST [TYPE type | ID id [id ...]], as Redis 7.2
// reads it: one filter or none. Every connection here is of type normal.
func cmdClientList(c *conn, args [][]byte) {
	var ids []int64
	listType := "" // a subscriber is of type pubsub, any other normal
	switch {
	case len(args) == 2:
	case len(args) == 4 && strings.EqualFold(string(args[2]), "type"):
		typ, ok := clientType(args[3])
		if !ok {
			c.out.Err("Unknown client type '" + cString(args[3], len(args[3])) + "'")
			return
		}
		if typ != "normal" && typ != "pubsub" {
			c.out.Verbatim("")
			return
		}
		listType = typ
	case len(args) > 3 && strings.EqualFold(string(args[2]), "id"):
		for _, a := range args[3:] {
			id, ok := parseInt(a)
			if !ok {
				c.out.Err("Invalid client ID")
				return
			}
			ids = append(ids, id)
		}
	default:
		c.syntaxError()
		return
	}
	now := time.Now()
	var b strings.Builder
	conns := c.srv.connections()
	if ids == nil {
		for _, o := range conns {
			if listType != "" && listType != o.clientType() {
				continue
			}
			b.WriteString(o.describe(now))
			b.WriteByte('\n')
		}
	} else {
		// In the order asked, as Redis looks each id up.
		for _, id := range ids {
			for _, o := range conns {
				if o.id == id {
					b.WriteString(o.describe(now))
					b.WriteByte('\n')
				}
			}
		}
	}
	c.out.Verbatim(b.String())
}

// clientType is Redis's type of o: pubsub while it has a subscription.
func (c *conn) clientType() string {
	if sub, psub, ssub := c.pubsubCounts(); sub+psub+ssub > 0 {
		return "pubsub"
	}
	return "normal"
}

// clientType reads a client type name as Redis's getClientTypeByName does.
func clientType(b []byte) (string, bool) {
	switch t := strings.ToLower(string(b)); t {
	case "normal", "master", "pubsub":
		return t, true
	case "replica", "slave":
		return "replica", true
	}
	return "", false
}

// cmdClientKill takes the old form, CLIENT KILL addr:port, and the new one
// of filters (ID, TYPE, ADDR, LADDR, USER, SKIPME). A killed holder's lease
// stays to its deadline (LOCK-11): killing closes the connection and
// nothing else.
func cmdClientKill(c *conn, args [][]byte) {
	if len(args) == 3 {
		// The old form may kill the asking connection itself.
		addr := string(args[2])
		for _, o := range c.srv.connections() {
			if o.addr == addr {
				c.out.OK()
				c.kill(o)
				return
			}
		}
		c.out.Err("No such client")
		return
	}
	var (
		id                  int64
		typ, addr, laddr, u string
		hasUser             bool
		skipMe              = true
	)
	msg := parseOptions(args[2:],
		opt{name: "id", value: true, set: func(v []byte) string {
			n, ok := parseInt(v)
			if !ok || n <= 0 {
				return "client-id should be greater than 0"
			}
			id = n
			return ""
		}},
		opt{name: "type", value: true, set: func(v []byte) string {
			t, ok := clientType(v)
			if !ok {
				return "Unknown client type '" + cString(v, len(v)) + "'"
			}
			typ = t
			return ""
		}},
		opt{name: "addr", value: true, set: func(v []byte) string { addr = string(v); return "" }},
		opt{name: "laddr", value: true, set: func(v []byte) string { laddr = string(v); return "" }},
		opt{name: "user", value: true, set: func(v []byte) string {
			if !c.srv.users.exists(string(v)) {
				return "No such user '" + cString(v, len(v)) + "'"
			}
			u, hasUser = string(v), true
			return ""
		}},
		opt{name: "skipme", value: true, set: func(v []byte) string {
			switch strings.ToLower(string(v)) {
			case "yes":
				skipMe = true
			case "no":
				skipMe = false
			default:
				return errSyntax
			}
			return ""
		}},
	)
	if msg != "" {
		c.out.Err(msg)
		return
	}
	var killed int64
	for _, o := range c.srv.connections() {
		if (id != 0 && o.id != id) || (typ != "" && typ != o.clientType()) ||
			(addr != "" && o.addr != addr) || (laddr != "" && o.laddr != laddr) ||
			(hasUser && o.userName() != u) || (skipMe && o == c) {
			continue
		}
		killed++
		c.kill(o)
	}
	c.out.Int(killed)
}

func (c *conn) userName() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.user
}

// kill closes o's connection; its goroutine sees the error and ends. The
// asking connection closes itself after its reply.
func (c *conn) kill(o *conn) {
	if o == c {
		c.closing = true
		return
	}
	o.nc.Close()
}

func cmdClientHelp(c *conn, args [][]byte) {
	c.out.BulkStrings(
		"CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"ID", "    Return the ID of the current connection.",
		"INFO", "    Return information about the current client connection.",
		"GETNAME", "    Return the name of the current connection.",
		"SETNAME <name>", "    Assign the name <name> to the current connection.",
		"SETINFO <option> <value>", "    Set client meta attr. Options are: LIB-NAME, LIB-VER.",
		"LIST [TYPE normal] [ID <id> [<id> ...]]", "    Return information about client connections.",
		"KILL <ip:port> | KILL <filter> <value> [<filter> <value> ...]", "    Kill connections: ID, TYPE, ADDR, LADDR, USER, SKIPME (yes|no).",
		"HELP", "    Print this help.",
	)
}

// validClientName is Redis's rule: printable ASCII without spaces.
func validClientName(b []byte) bool {
	for _, ch := range b {
		if ch < '!' || ch > '~' {
			return false
		}
	}
	return true
}

// describe is the connection's line in CLIENT LIST, in Redis's format, with
// the user and the role it was admitted with.
func (c *conn) describe(now time.Time) string {
	c.mu.Lock()
	name, lib, ver, user, role, proto := c.name, c.libName, c.libVer, c.user, c.role, c.out.Proto()
	flags := ""
	if c.noEvict {
		flags += "e"
	}
	if c.noTouch {
		flags += "T"
	}
	if c.monitoring {
		flags += "O"
	}
	c.mu.Unlock()
	if flags == "" {
		flags = "N"
	}
	cmd := "NULL"
	if lc := c.lastCmd.Load(); lc != nil {
		cmd = lc.Name
	}
	idle := now.Sub(time.Unix(0, c.lastActive.Load()))
	sub, psub, ssub := c.pubsubCounts()
	if sub+psub+ssub > 0 {
		flags = strings.Replace(flags, "N", "", 1) + "P"
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "id=%d addr=%s laddr=%s fd=-1 name=%s age=%d idle=%d flags=%s db=0 sub=%d psub=%d ssub=%d multi=-1 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd=%s user=%s role=%s redir=-1 resp=%d lib-name=%s lib-ver=%s",
		c.id, c.addr, c.laddr, name, int64(now.Sub(c.created).Seconds()), int64(idle.Seconds()), flags,
		sub, psub, ssub, cmd, user, role, proto, lib, ver)
	return b.String()
}

// connections lists the open connections, oldest first.
func (s *Server) connections() []*conn {
	s.mu.Lock()
	list := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		list = append(list, c)
	}
	s.mu.Unlock()
	sortConns(list)
	return list
}

func sortConns(list []*conn) {
	slices.SortFunc(list, func(a, b *conn) int { return cmp.Compare(a.id, b.id) })
}

const errClientName = "Client names cannot contain spaces, newlines or special characters."

// exists says whether name is a user, for CLIENT KILL USER. As in Redis,
// "default" always is: it is who a connection is before AUTH.
func (u *Users) exists(name string) bool {
	if u == nil || name == "default" {
		return name == "default"
	}
	_, ok := u.byName[name]
	return ok
}

// cmdClientNoEvict is CLIENT NO-EVICT ON|OFF. tenure never evicts a client
// for its memory (its limits are per request, SPEC §7), so the mode only
// shows in CLIENT LIST and CLIENT INFO, as the "e" flag.
func cmdClientNoEvict(c *conn, args [][]byte) { c.clientMode(args[2], &c.noEvict) }

// cmdClientNoTouch is CLIENT NO-TOUCH ON|OFF (Redis 7.2). tenure keeps no
// access times for a command to touch, so the mode only shows, as the "T"
// flag.
func cmdClientNoTouch(c *conn, args [][]byte) { c.clientMode(args[2], &c.noTouch) }

func (c *conn) clientMode(arg []byte, mode *bool) {
	var on bool
	switch option(arg) {
	case "on":
		on = true
	case "off":
	default:
		c.syntaxError()
		return
	}
	c.mu.Lock()
	*mode = on
	c.mu.Unlock()
	c.out.OK()
}

// replyMode is CLIENT REPLY's setting of a connection.
type replyMode uint8

const (
	replyOn   replyMode = iota
	replyOff            // no reply to anything until CLIENT REPLY ON
	replySkip           // no reply to the next command
)

// cmdClientReply is CLIENT REPLY ON|OFF|SKIP: ON answers OK, OFF and SKIP
// nothing (exec drops the replies; pushes still go, as Redis sends them).
func cmdClientReply(c *conn, args [][]byte) {
	switch option(args[2]) {
	case "on":
		c.replyMode = replyOn
		c.out.OK()
	case "off":
		c.replyMode = replyOff
	case "skip":
		if c.replyMode != replyOff {
			c.replyMode = replySkip
		}
	default:
		c.syntaxError()
	}
}
