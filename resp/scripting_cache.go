package resp

import (
	"strings"

	"github.com/tenure-db/tenure/script"
)

// The script cache: EVAL's bodies by SHA1, for EVALSHA; SCRIPT LOAD,
// EXISTS, FLUSH and HELP.

// errNoScript answers an EVALSHA whose script the cache does not hold.
const errNoScript = "No matching script. Please use EVAL."

// script finds the script of EVAL's body or EVALSHA's sha, compiling and
// caching a new body; nil when it answered an error.
func (c *conn) script(arg []byte, bySHA bool) *script.Script {
	s := &c.srv.scripts
	sha := strings.ToLower(string(arg))
	if !bySHA {
		sha = script.SHA1Hex(arg)
	}
	s.cacheMu.Lock()
	sc := s.cache[sha]
	s.cacheMu.Unlock()
	if sc != nil {
		return sc
	}
	if bySHA {
		c.out.Error("NOSCRIPT", errNoScript)
		return nil
	}
	sc, err := script.Compile(arg)
	if err != nil {
		c.out.Err(err.Error())
		return nil
	}
	s.cacheMu.Lock()
	if s.cache == nil {
		s.cache = map[string]*script.Script{}
	}
	s.cache[sha] = sc
	s.cacheMu.Unlock()
	return sc
}

// cached is how many scripts the cache holds, for INFO.
func (s *scripts) cached() int64 {
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	return int64(len(s.cache))
}

func cmdScriptLoad(c *conn, args [][]byte) {
	sc := c.script(args[2], false)
	if sc != nil {
		c.out.BulkString(sc.SHA)
	}
}

func cmdScriptExists(c *conn, args [][]byte) {
	s := &c.srv.scripts
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	c.out.Array(len(args) - 2)
	for _, a := range args[2:] {
		c.out.Bool(s.cache[strings.ToLower(string(a))] != nil)
	}
}

func cmdScriptFlush(c *conn, args [][]byte) {
	if len(args) > 3 || (len(args) == 3 && !strings.EqualFold(string(args[2]), "sync") && !strings.EqualFold(string(args[2]), "async")) {
		c.out.Err("SCRIPT FLUSH only support SYNC|ASYNC option")
		return
	}
	s := &c.srv.scripts
	s.cacheMu.Lock()
	s.cache = nil
	s.cacheMu.Unlock()
	s.mu.Lock()
	if s.engine != nil {
		s.engine.Close()
		s.engine = nil // a new interpreter at the next script
	}
	s.mu.Unlock()
	c.out.OK()
}

func cmdScriptHelp(c *conn, args [][]byte) {
	c.out.BulkStrings(
		"SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"EXISTS <sha1> [<sha1> ...]", "    Return information about the existence of the scripts in the script cache.",
		"FLUSH [ASYNC|SYNC]", "    Flush the Lua scripts cache.",
		"KILL", "    Kill the currently executing Lua script.",
		"LOAD <script>", "    Load a script into the scripts cache without executing it.",
		"HELP", "    Print this help.",
	)
}
