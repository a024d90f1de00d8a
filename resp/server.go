package resp

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tenure-db/tenure/internal/redistext"
)

// Server commands: COMMAND, DBSIZE, FLUSHDB/FLUSHALL, TIME,
// SHUTDOWN. INFO has info.go, CONFIG config.go.

func humanBytes(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2fG", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2fM", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.2fK", float64(n)/(1<<10))
	}
	return strconv.FormatUint(n, 10) + "B"
}

func splitHostPort(addr string) (string, string, error) {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return "", "", fmt.Errorf("no port in %q", addr)
	}
	return addr[:i], addr[i+1:], nil
}

// The COMMAND family describes the command table itself.

// cmdCommand is COMMAND alone; dispatch sends COMMAND with arguments to
// its subcommands.
func cmdCommand(c *conn, args [][]byte) {
	names := c.srv.commandNames()
	c.out.Array(len(names))
	for _, n := range names {
		c.writeCommandInfo(c.srv.table[n])
	}
}

func cmdCommandCount(c *conn, args [][]byte) { c.out.Int(int64(len(c.srv.table))) }

// cmdCommandList is COMMAND LIST [FILTERBY MODULE m|ACLCAT c|PATTERN p]:
// every command and subcommand by its full name, as Redis 7 lists them.
// commands here belong to no module and no ACL category.
func cmdCommandList(c *conn, args [][]byte) {
	var pattern string
	filtered := false
	for i := 2; i < len(args); i++ {
		if !strings.EqualFold(string(args[i]), "filterby") || len(args)-1-i != 2 {
			c.syntaxError()
			return
		}
		switch strings.ToLower(string(args[i+1])) {
		case "module", "aclcat":
			c.out.Array(0)
			return
		case "pattern":
			pattern, filtered = cString(args[i+2], len(args[i+2])), true
		default:
			c.syntaxError()
			return
		}
		i += 2
	}
	var names []string
	for _, n := range c.srv.commandNames() {
		cmd := c.srv.table[n]
		for _, full := range append([]string{cmd.Name}, subcommandNames(cmd)...) {
			if !filtered || globMatch(pattern, full) {
				names = append(names, full)
			}
		}
	}
	c.out.BulkStrings(names...)
}

func subcommandNames(cmd *command) []string {
	var names []string
	for _, s := range sortedNames(cmd.Subcommands) {
		names = append(names, cmd.Subcommands[s].Name)
	}
	return names
}

func cmdCommandHelp(c *conn, args [][]byte) {
	c.out.BulkStrings(
		"COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"(no subcommand)", "    Return details about all commands.",
		"COUNT", "    Return the total number of commands in this server.",
		"LIST [FILTERBY PATTERN <pattern>]", "    Return a list of all commands in this server.",
		"INFO [<command-name> ...]", "    Return details about multiple commands.",
		"DOCS [<command-name> ...]", "    Return documentation details about multiple commands.",
		"HELP", "    Print this help.",
	)
}

func cmdCommandInfo(c *conn, args [][]byte) {
	if len(args) == 2 {
		cmdCommand(c, args[:1])
		return
	}
	c.out.Array(len(args) - 2)
	for _, a := range args[2:] {
		if cmd := lookupPath(c.srv.table, a); cmd != nil {
			c.writeCommandInfo(cmd)
		} else {
			c.out.Null()
		}
	}
}

func cmdCommandDocs(c *conn, args [][]byte) {
	var cmds []*command
	if len(args) == 2 {
		for _, n := range c.srv.commandNames() {
			cmds = append(cmds, c.srv.table[n])
		}
	} else {
		for _, a := range args[2:] {
			if cmd := lookupPath(c.srv.table, a); cmd != nil {
				cmds = append(cmds, cmd)
			}
		}
	}
	c.out.Map(len(cmds))
	for _, cmd := range cmds {
		c.out.BulkString(cmd.Name)
		c.writeCommandDocs(cmd)
	}
}

func (c *conn) writeCommandDocs(cmd *command) {
	n := 3 + docsExtraFields(cmd)
	if cmd.Subcommands != nil {
		n++
	}
	c.out.Map(n)
	c.out.BulkString("summary")
	c.out.BulkString(cmd.Summary)
	c.out.BulkString("since")
	c.out.BulkString(cmp.Or(cmd.Since, "1.0.0"))
	c.out.BulkString("group")
	c.out.BulkString(cmd.Group)
	c.writeDocsExtra(cmd) // complexity, arguments: see commanddocs.go
	if cmd.Subcommands != nil {
		c.out.BulkString("subcommands")
		subs := sortedNames(cmd.Subcommands)
		c.out.Map(len(subs))
		for _, s := range subs {
			c.out.BulkString(cmd.Subcommands[s].Name)
			c.writeCommandDocs(cmd.Subcommands[s])
		}
	}
}

// globMatch is Redis's stringmatch with nocase set, as COMMAND LIST and
// CONFIG GET use it.
func globMatch(pattern, name string) bool {
	return redistext.Match([]byte(strings.ToLower(pattern)), []byte(strings.ToLower(name)))
}

// lookupPath finds "name" or "name|sub".
func lookupPath(table map[string]*command, path []byte) *command {
	name, sub, hasSub := strings.Cut(strings.ToLower(string(path)), "|")
	cmd := table[name]
	if cmd == nil || !hasSub {
		return cmd
	}
	return cmd.Subcommands[sub]
}

// writeCommandInfo writes Redis 7's ten-element COMMAND INFO entry, with
// Redis 7.0's RESP3 types: flags, ACL categories, tips and key specs are
// sets (each key spec a map), and so is an empty list of subcommands; a
// list with subcommands is an array.
func (c *conn) writeCommandInfo(cmd *command) {
	c.out.Array(10)
	c.out.BulkString(cmd.Name)
	c.out.Int(int64(cmd.Arity))
	flags := commandInfoFlags(cmd)
	c.out.Set(len(flags))
	for _, f := range flags {
		c.out.Status(f)
	}
	c.out.Int(int64(cmd.FirstKey))
	c.out.Int(int64(cmd.LastKey))
	c.out.Int(int64(cmd.Step))
	c.out.Set(0) // ACL categories
	c.out.Set(0) // tips
	c.writeKeySpecs(cmd)
	subs := sortedNames(cmd.Subcommands)
	if len(subs) == 0 {
		c.out.Set(0)
		return
	}
	c.out.Array(len(subs))
	for _, s := range subs {
		c.writeCommandInfo(cmd.Subcommands[s])
	}
}

// commandInfoFlags are COMMAND INFO's flags of a row. Whether it writes
// and the role it needs are different facts, each from its own field:
// "write" when the row changes the store (its Effect), "readonly" when it
// does not and needs no more than the write role, "admin" when it needs
// the admin role (FLUSHALL: write and admin; CONFIG SET: admin).
func commandInfoFlags(cmd *command) []string {
	var flags []string
	switch {
	case cmd.Effect&effPubSub != 0:
		// Redis's: neither write nor readonly, whatever the role.
		flags = append(flags, "pubsub")
	case cmd.writes():
		flags = append(flags, "write")
	case cmd.Role < RoleAdmin:
		flags = append(flags, "readonly")
	}
	if cmd.Role == RoleAdmin {
		flags = append(flags, "admin")
	}
	if cmd.Flags&FlagNoAuth != 0 {
		flags = append(flags, "noauth")
	}
	if cmd.Effect&effBlock != 0 {
		flags = append(flags, "blocking")
	}
	for _, f := range []struct {
		flag commandFlags
		name string
	}{{FlagFast, "fast"}, {FlagNoMulti, "no_multi"}, {FlagNoScript, "noscript"}} {
		if cmd.Flags&f.flag != 0 {
			flags = append(flags, f.name)
		}
	}
	return flags
}

func (s *Server) commandNames() []string { return sortedNames(s.table) }

func sortedNames(m map[string]*command) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func cmdDBSize(c *conn, args [][]byte) {
	n, err := c.store.DBSize()
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.Int(n)
}

// cmdFlushAll empties the keyspace. Leases are not keys: they stay.
func cmdFlushAll(c *conn, args [][]byte) {
	if len(args) > 2 || (len(args) == 2 && !strings.EqualFold(string(args[1]), "async") && !strings.EqualFold(string(args[1]), "sync")) {
		c.syntaxError()
		return
	}
	if err := c.store.FlushAll(); err != nil {
		c.storeError(err)
		return
	}
	c.out.OK()
}

func cmdTime(c *conn, args [][]byte) {
	now := time.Now()
	c.out.Array(2)
	c.out.BulkInt(now.Unix())
	c.out.BulkInt(int64(now.Nanosecond() / 1000))
}

// cmdShutdown closes the server cleanly. Like Redis, a successful SHUTDOWN
// sends no reply: the connection just closes. There is nothing to save:
// every write is already in the store, so SAVE and NOSAVE change nothing,
// but their combinations are checked as Redis checks them.
func cmdShutdown(c *conn, args [][]byte) {
	var save, noSave, abort, other bool
	for _, a := range args[1:] {
		switch strings.ToLower(string(a)) {
		case "nosave":
			noSave = true
		case "save":
			save = true
		case "now", "force":
			other = true
		case "abort":
			abort = true
		default:
			c.syntaxError()
			return
		}
	}
	if (abort && (save || noSave || other)) || (save && noSave) {
		c.syntaxError()
		return
	}
	if abort {
		c.out.Err("No shutdown in progress.")
		return
	}
	c.srv.log.Info("shutdown requested", "client", c.addr)
	c.closing = true
	c.srv.requestShutdown()
}

// cmdLastSave is LASTSAVE: there are no snapshots, and every write is in
// the write-ahead log as it is in an AOF; what is on disk for sure is what
// the last fsync covered, so its time is the answer (with --fsync
// everysec, about a second ago while writes come in).
func cmdLastSave(c *conn, args [][]byte) { c.out.Int(c.store.Stats().LastSync) }

// keyPositions are the indexes of cmd's keys in args (args[0] its name),
// from the row's FirstKey, LastKey and Step; a negative LastKey counts
// from the end, -1 being the last argument.
func keyPositions(cmd *command, n int) []int {
	if cmd.FirstKey == 0 {
		return nil
	}
	last := cmd.LastKey
	if last < 0 {
		last += n
	}
	var at []int
	for i := cmd.FirstKey; i <= last && i < n; i += max(cmd.Step, 1) {
		at = append(at, i)
	}
	return at
}

// cmdCommandGetKeys is COMMAND GETKEYS command [arg ...]: the keys the
// command would touch, found from its row as a cluster client would.
func cmdCommandGetKeys(c *conn, args [][]byte) { getKeys(c, args, false) }

// cmdCommandGetKeysAndFlags is COMMAND GETKEYSANDFLAGS: GETKEYS with each
// key's flags, those of the row's key spec (see keySpecFlags).
func cmdCommandGetKeysAndFlags(c *conn, args [][]byte) { getKeys(c, args, true) }

func getKeys(c *conn, args [][]byte, withFlags bool) {
	cmd, req, msg := commandOf(c.srv.table, args[2:])
	if msg != "" {
		c.out.Err(msg)
		return
	}
	at := keyPositions(cmd, len(req))
	c.out.Array(len(at))
	for _, i := range at {
		if !withFlags {
			c.out.Bulk(req[i])
			continue
		}
		flags := keySpecFlags(cmd)
		c.out.Array(2)
		c.out.Bulk(req[i])
		c.out.Set(len(flags))
		for _, f := range flags {
			c.out.Status(f)
		}
	}
}

// commandOf finds the row a request names (a subcommand when its command
// has them) and checks that it has keys, with COMMAND GETKEYS's errors.
func commandOf(table map[string]*command, req [][]byte) (*command, [][]byte, string) {
	cmd := lookup(table, req[0])
	if cmd != nil && cmd.Subcommands != nil && len(req) > 1 {
		cmd = lookup(cmd.Subcommands, req[1])
	}
	switch {
	case cmd == nil || cmd.Handler == nil:
		return nil, nil, "Invalid command specified"
	case cmd.FirstKey == 0:
		return nil, nil, "The command has no key arguments"
	case !arityOK(cmd.Arity, len(req)):
		return nil, nil, "Invalid number of arguments specified for command"
	}
	return cmd, req, ""
}

// keySpecFlags are the flags of a row's one key spec, coarsely from its
// effect: a row that writes updates its keys, any other only reads them.
// Redis tells finer kinds apart (DEL's keys are "RM delete", SET's "RW
// access update"); cluster clients read only where the keys are.
func keySpecFlags(cmd *command) []string {
	if cmd.Effect&effPubSub != 0 {
		return []string{"not_key"} // a shard channel, which cluster clients route as a key
	}
	if cmd.writes() {
		return []string{"RW", "update"}
	}
	return []string{"RO", "access"}
}

// writeKeySpecs writes COMMAND INFO's key specs of a row: one spec, an
// index to begin at and a range, in Redis 7's shape, so that clients that
// read key specs rather than first/last/step find the same keys.
func (c *conn) writeKeySpecs(cmd *command) {
	if cmd.FirstKey == 0 {
		c.out.Set(0)
		return
	}
	last := cmd.LastKey
	if last > 0 {
		last -= cmd.FirstKey // relative to the first key
	}
	c.out.Set(1)
	c.out.Map(3)
	c.out.BulkString("flags")
	flags := keySpecFlags(cmd)
	c.out.Set(len(flags))
	for _, f := range flags {
		c.out.Status(f)
	}
	c.out.BulkString("begin_search")
	c.out.Map(2)
	c.out.BulkString("type")
	c.out.BulkString("index")
	c.out.BulkString("spec")
	c.out.Map(1)
	c.out.BulkString("index")
	c.out.Int(int64(cmd.FirstKey))
	c.out.BulkString("find_keys")
	c.out.Map(2)
	c.out.BulkString("type")
	c.out.BulkString("range")
	c.out.BulkString("spec")
	c.out.Map(3)
	c.out.BulkString("lastkey")
	c.out.Int(int64(last))
	c.out.BulkString("keystep")
	c.out.Int(int64(max(cmd.Step, 1)))
	c.out.BulkString("limit")
	c.out.Int(0)
}

// cmdSave is SAVE: a durable point of the whole keyspace (kv.Store.Save),
// before the reply. Refused inside MULTI (its row's FlagNoMulti), as
// Redis refuses it.
func cmdSave(c *conn, args [][]byte) {
	if err := c.srv.store.Save(); err != nil {
		c.storeError(err)
		return
	}
	c.out.OK()
}

// cmdBgSave is BGSAVE [SCHEDULE]: SAVE's durable point, made in the
// background; LASTSAVE moves once it is made. One at a time, as Redis's:
// another while one runs is refused, or with SCHEDULE runs after it.
func cmdBgSave(c *conn, args [][]byte) {
	if len(args) > 2 || (len(args) == 2 && option(args[1]) != "schedule") {
		c.syntaxError()
		return
	}
	schedule := len(args) == 2
	srv := c.srv
	if !srv.saving.CompareAndSwap(false, true) {
		if !schedule {
			c.out.Err("Background save already in progress")
			return
		}
		go func() {
			srv.saveMu.Lock()
			defer srv.saveMu.Unlock()
			if err := srv.store.Save(); err != nil {
				srv.log.Error("bgsave failed", "err", err)
			}
		}()
		c.out.Status("Background saving scheduled")
		return
	}
	go func() {
		srv.saveMu.Lock()
		defer srv.saveMu.Unlock()
		defer srv.saving.Store(false)
		if err := srv.store.Save(); err != nil {
			srv.log.Error("bgsave failed", "err", err)
		}
	}()
	c.out.Status("Background saving started")
}

// cmdMemoryUsage is MEMORY USAGE key [SAMPLES count]: an estimate in
// bytes (kv.Store.MemoryUsage), null for a missing key.
func cmdMemoryUsage(c *conn, args [][]byte) {
	samples := int64(5)
	if len(args) == 5 && option(args[3]) == "samples" {
		n, ok := parseInt(args[4])
		if !ok {
			c.out.Err(errNotInteger)
			return
		}
		samples = n
	} else if len(args) != 3 {
		c.syntaxError()
		return
	}
	n, ok, err := c.store.MemoryUsage(args[2], samples)
	switch {
	case err != nil:
		c.storeError(err)
	case !ok:
		c.out.Null()
	default:
		c.out.Int(n)
	}
}

func cmdMemoryHelp(c *conn, args [][]byte) {
	c.out.BulkStrings(
		"MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"USAGE <key> [SAMPLES <count>]",
		"    Return memory in bytes used by <key> and its value. Nested values are",
		"    sampled up to <count> times (default: 5, 0 means sample all).",
		"HELP",
		"    Print this help.",
	)
}
