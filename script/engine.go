package script

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

// Caller is how a script's redis.call and redis.pcall reach the server.
type Caller interface {
	// Call runs one command as the script's caller may run it, its
	// reply spelled in protocol resp (2 or 3). A command the server
	// refuses from a script (unknown, wrong arity, above the caller's
	// role, a write in a read-only script, not allowed from a script) is
	// an Error reply.
	Call(args [][]byte, resp int) Reply
	// Permitted says whether the caller may run args (redis.acl_check_cmd);
	// known is false for a command the server does not have.
	Permitted(args [][]byte) (allowed, known bool)
}

// Log levels of redis.log, Redis's.
const (
	LogDebug = iota
	LogVerbose
	LogNotice
	LogWarning
)

// Options configure an Engine.
type Options struct {
	// Version and VersionNum are redis.REDIS_VERSION and
	// redis.REDIS_VERSION_NUM.
	Version    string
	VersionNum int
	// Log receives redis.log's lines; nil drops them.
	Log func(level int, msg string)
}

// Script is a compiled script, ready to run on any Engine.
type Script struct {
	SHA   string // lowercase hex SHA1 of Body
	Body  string
	proto *lua.FunctionProto
}

// SHA1Hex is the lowercase hex SHA1 of b, as EVALSHA names scripts.
func SHA1Hex(b []byte) string {
	sum := sha1.Sum(b)
	return hex.EncodeToString(sum[:])
}

var syntaxPosition = regexp.MustCompile(`^user_script (?:line:(\d+)\(column:\d+\)|at EOF):? ?`)

// Compile compiles body, answering Redis's "Error compiling script" text
// for one that is not Lua. A leading "#!lua" line (a shebang, as Redis 7
// reads) is blanked, keeping line numbers.
func Compile(body []byte) (*Script, error) {
	src := string(body)
	if strings.HasPrefix(src, "#!") {
		line, _, _ := strings.Cut(src, "\n")
		if err := checkShebang(line); err != nil {
			return nil, err
		}
		src = src[len(line):]
	}
	chunk, err := parse.Parse(strings.NewReader(src), "user_script")
	if err != nil {
		msg := err.Error()
		if m := syntaxPosition.FindStringSubmatch(msg); m != nil {
			line := m[1]
			if line == "" {
				line = strconv.Itoa(strings.Count(src, "\n") + 1)
			}
			msg = "user_script:" + line + ": " + msg[len(m[0]):]
		}
		msg = strings.Join(strings.Fields(msg), " ")
		return nil, errors.New("Error compiling script (new function): " + msg)
	}
	proto, err := lua.Compile(chunk, "user_script")
	if err != nil {
		return nil, errors.New("Error compiling script (new function): " + err.Error())
	}
	// gopher-lua marks a main chunk that does not use "..." as needing
	// Lua 5.0's arg table, and so builds one (a table with a field n, 2.6 KB)
	// on every call, in a register no name reaches: its compiler declares
	// the local arg only in functions with a parent. Lua 5.1, Redis's, never
	// builds it for a main chunk (lparser.c's main function is only
	// VARARG_ISVARARG). What the script can see does not change.
	proto.IsVarArg &^= lua.VarArgNeedsArg
	return &Script{SHA: SHA1Hex(body), Body: string(body), proto: proto}, nil
}

// Flags are what a script's shebang declares.
type Flags struct {
	Shebang  bool // the script has one: only its flags then apply
	NoWrites bool
}

// ScriptFlags reads the flags of a script's "#!lua flags=…" line.
func (s *Script) Flags() Flags {
	if !strings.HasPrefix(s.Body, "#!") {
		return Flags{}
	}
	line, _, _ := strings.Cut(s.Body, "\n")
	f := Flags{Shebang: true}
	for _, part := range strings.Fields(line)[1:] {
		if v, ok := strings.CutPrefix(part, "flags="); ok {
			for _, flag := range strings.Split(v, ",") {
				if flag == "no-writes" {
					f.NoWrites = true
				}
			}
		}
	}
	return f
}

// checkShebang accepts Redis 7's "#!lua [name=…] [flags=a,b]".
func checkShebang(line string) error {
	parts := strings.Fields(line[2:])
	if len(parts) == 0 || parts[0] != "lua" {
		engine := ""
		if len(parts) > 0 {
			engine = parts[0]
		}
		return errors.New("Unexpected engine in script shebang: " + engine)
	}
	for _, p := range parts[1:] {
		v, ok := strings.CutPrefix(p, "flags=")
		if !ok {
			return errors.New("Unknown lua shebang option: " + p)
		}
		for _, f := range strings.Split(v, ",") {
			switch f {
			case "", "no-writes", "allow-oom", "allow-stale", "no-cluster", "allow-cross-slot-keys":
			default:
				return errors.New("Unexpected flag in script shebang: " + f)
			}
		}
	}
	return nil
}

// Engine is one Lua interpreter with Redis's API loaded and its globals
// locked. It runs one script at a time: Run is not safe for concurrent
// use.
type Engine struct {
	opts    Options
	L       *lua.LState
	globals *lua.LTable // the real globals: scripts see them through env
	env     *lua.LTable // the empty, read-only face of globals
	// readonly are the tables a script may not change: env, the
	// libraries' faces and their metatables.
	readonly map[*lua.LTable]bool
	handler  *lua.LFunction
	run      *run // the script running, nil between runs
	rand     lrand48
}

// run is one script's run.
type run struct {
	ctx    context.Context
	caller Caller
	resp   int
	killed bool
}

// New makes an Engine.
func New(opts Options) *Engine {
	L := lua.NewState(lua.Options{SkipOpenLibs: true, CallStackSize: 256, RegistrySize: 1024 * 20, RegistryMaxSize: 1024 * 1024})
	e := &Engine{opts: opts, L: L, readonly: map[*lua.LTable]bool{}}
	for _, lib := range []struct {
		name string
		fn   lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString},
		{lua.MathLibName, lua.OpenMath}, {lua.CoroutineLibName, lua.OpenCoroutine}} {
		L.Push(L.NewFunction(lib.fn))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	g := L.G.Global
	e.globals = g
	allowed := map[string]bool{
		"xpcall": true, "tostring": true, "getfenv": true, "setmetatable": true, "next": true, "assert": true,
		"tonumber": true, "rawequal": true, "collectgarbage": true, "getmetatable": true, "rawset": true,
		"pcall": true, "coroutine": true, "type": true, "_G": true, "select": true, "unpack": true, "gcinfo": true,
		"pairs": true, "rawget": true, "loadstring": true, "ipairs": true, "_VERSION": true, "setfenv": true,
		"load": true, "error": true, "newproxy": true, "string": true, "math": true, "table": true,
	}
	var drop []lua.LValue
	g.ForEach(func(k, _ lua.LValue) {
		if s, ok := k.(lua.LString); !ok || !allowed[string(s)] {
			drop = append(drop, k)
		}
	})
	for _, k := range drop {
		g.RawSet(k, lua.LNil)
	}
	str := g.RawGetString("string").(*lua.LTable)
	str.RawSetString("dump", lua.LNil) // Redis refuses binary chunks
	str.RawSetString("rep", L.NewFunction(strRep))
	e.loadRedis()
	e.loadLibraries()
	math := g.RawGetString("math").(*lua.LTable)
	math.RawSetString("random", L.NewFunction(e.mathRandom))
	math.RawSetString("randomseed", L.NewFunction(e.mathRandomSeed))
	g.RawSetString("pcall", L.NewFunction(e.pcall))
	g.RawSetString("getfenv", L.NewFunction(e.getfenv(g.RawGetString("getfenv").(*lua.LFunction))))
	g.RawSetString("setmetatable", L.NewFunction(e.setmetatable))
	g.RawSetString("rawset", L.NewFunction(e.rawset))
	e.handler = L.NewFunction(e.errorHandler)
	e.lockGlobals()
	return e
}

// Close frees the interpreter.
func (e *Engine) Close() { e.L.Close() }

// lockGlobals puts globals behind env, an empty table that reads through
// to them and refuses every write, as Redis 7's read-only globals do; each
// library table likewise behind a face of its own.
func (e *Engine) lockGlobals() {
	L := e.L
	for _, name := range []string{"redis", "string", "math", "table", "coroutine", "cjson", "bit", "struct", "cmsgpack"} {
		if lib, ok := e.globals.RawGetString(name).(*lua.LTable); ok {
			e.globals.RawSetString(name, e.face(lib, nil))
		}
	}
	missing := L.NewTable()
	missing.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Script attempted to access nonexistent global variable '%s'", L.ToString(2))
		return 0
	}))
	missing.RawSetString("__newindex", L.NewFunction(readonlyError))
	L.SetMetatable(e.globals, missing)
	e.env = e.face(e.globals, missing)
	e.globals.RawSetString("_G", e.env)
	L.Env = e.env
}

// face is an empty, read-only table whose reads go to t. Its metatable,
// and what getmetatable shows of it, are read-only too.
func (e *Engine) face(t, shown *lua.LTable) *lua.LTable {
	L := e.L
	f := L.NewTable()
	mt := L.NewTable()
	mt.RawSetString("__index", t)
	mt.RawSetString("__newindex", L.NewFunction(readonlyError))
	guard := L.NewTable() // getmetatable's answer: reads through, refuses writes
	gmt := L.NewTable()
	gmt.RawSetString("__index", mt)
	gmt.RawSetString("__newindex", L.NewFunction(readonlyError))
	L.SetMetatable(guard, gmt)
	mt.RawSetString("__metatable", guard)
	L.SetMetatable(f, mt)
	e.readonly[f], e.readonly[mt], e.readonly[guard], e.readonly[t] = true, true, true, true
	if shown != nil {
		e.readonly[shown] = true
	}
	return f
}

func readonlyError(L *lua.LState) int {
	L.RaiseError("Attempt to modify a readonly table")
	return 0
}

func (e *Engine) setmetatable(L *lua.LState) int {
	if t, ok := L.Get(1).(*lua.LTable); ok && e.readonly[t] {
		L.RaiseError("Attempt to modify a readonly table")
	}
	L.CheckTypes(2, lua.LTNil, lua.LTTable)
	obj := L.Get(1)
	if obj == lua.LNil {
		L.RaiseError("cannot set metatable to a nil object.")
	}
	var mt lua.LValue = lua.LNil
	switch o := obj.(type) {
	case *lua.LTable:
		mt = o.Metatable
	case *lua.LUserData:
		mt = o.Metatable
	}
	if m, ok := mt.(*lua.LTable); ok && m.RawGetString("__metatable") != lua.LNil {
		L.RaiseError("cannot change a protected metatable")
	}
	L.SetMetatable(obj, L.Get(2))
	L.SetTop(1)
	return 1
}

func (e *Engine) rawset(L *lua.LState) int {
	t := L.CheckTable(1)
	if e.readonly[t] {
		L.RaiseError("Attempt to modify a readonly table")
	}
	t.RawSet(L.CheckAny(2), L.CheckAny(3))
	L.SetTop(1)
	return 1
}

// getfenv never shows the real globals, only their read-only face.
func (e *Engine) getfenv(orig *lua.LFunction) lua.LGFunction {
	return func(L *lua.LState) int {
		n := L.GetTop()
		L.Push(orig)
		for i := 1; i <= n; i++ {
			L.Push(L.Get(i))
		}
		L.Call(n, 1)
		if L.Get(-1) == e.globals {
			L.Pop(1)
			L.Push(e.env)
		}
		return 1
	}
}

// strRep is string.rep with a cap, so that a script cannot ask for more
// memory than a bulk string may hold.
func strRep(L *lua.LState) int {
	s := L.CheckString(1)
	n := L.CheckInt(2)
	if n <= 0 || len(s) == 0 {
		L.Push(lua.LString(""))
		return 1
	}
	if int64(len(s))*int64(n) > maxString {
		L.RaiseError("string.rep: resulting string too large")
	}
	L.Push(lua.LString(strings.Repeat(s, n)))
	return 1
}

// maxString is the longest string a script may build with string.rep:
// Redis's proto-max-bulk-len.
const maxString = 512 << 20

// errorHandler is Redis's __redis__err__handler: it makes every error a
// table {err=…} and notes where it was raised.
func (e *Engine) errorHandler(L *lua.LState) int {
	err := L.Get(1)
	t, ok := err.(*lua.LTable)
	if !ok {
		t = fieldTable(L, "err", lua.LString("ERR "+lua.LVAsString(L.ToStringMeta(err))))
	}
	for level := 0; level < 8; level++ {
		dbg, ok := L.GetStack(level)
		if !ok {
			break
		}
		if _, err := L.GetInfo("Sl", dbg, lua.LNil); err != nil {
			break
		}
		if dbg.CurrentLine > 0 && dbg.Source == "user_script" {
			t.RawSetString("source", lua.LString("@user_script"))
			t.RawSetString("line", lua.LString(strconv.Itoa(dbg.CurrentLine)))
			break
		}
	}
	L.Push(t)
	return 1
}

// killedText is the error of a script stopped by SCRIPT KILL.
const killedText = "Script killed by user with SCRIPT KILL..."

// Run runs s with keys and args as KEYS and ARGV, its redis.call going to
// caller, and returns its result as the server should reply it. It stops
// when ctx is done (SCRIPT KILL, SHUTDOWN), replying Redis's "killed"
// error. seed seeds math.random for this run: the server passes what
// every node of a cluster agrees on, so that a script decides alike
// everywhere.
func (e *Engine) Run(ctx context.Context, s *Script, keys, args [][]byte, caller Caller, seed int64) (reply Reply) {
	L := e.L
	r := &run{ctx: ctx, caller: caller, resp: 2}
	e.run = r
	e.rand.seed(seed)
	e.globals.RawSetString("KEYS", stringsTable(L, keys))
	e.globals.RawSetString("ARGV", stringsTable(L, args))
	L.SetContext(ctx)
	top := L.GetTop()
	defer func() {
		L.RemoveContext()
		L.SetTop(top)
		e.run = nil
		if p := recover(); p != nil {
			reply = ErrReply(fmt.Sprintf("ERR Error running script: %v", p))
		}
	}()
	fn := L.NewFunctionFromProto(s.proto)
	fn.Env = e.env
	L.Push(fn)
	if err := L.PCall(0, 1, e.handler); err != nil {
		if ctx.Err() != nil {
			return ErrReply("ERR " + killedText)
		}
		return e.failed(s, err)
	}
	return e.toReply(L.Get(-1), r.resp, 0)
}

// failed is the reply to a script that raised an error.
func (e *Engine) failed(s *Script, err error) Reply {
	var api *lua.ApiError
	if !errors.As(err, &api) {
		return ErrReply("ERR Error running script " + s.SHA + ", " + err.Error())
	}
	t, ok := api.Object.(*lua.LTable)
	if !ok {
		return ErrReply("ERR Error running script " + s.SHA + ", " + cut(api.Object.String(), 100))
	}
	msg := "ERR " + lua.LVAsString(t.RawGetString("err"))
	if m, ok := t.RawGetString("err").(lua.LString); ok { // as given: it has its code
		msg = strings.TrimPrefix(string(m), "-")
	}
	src, line := t.RawGetString("source"), t.RawGetString("line")
	if src != lua.LNil && line != lua.LNil {
		msg += " script: " + s.SHA + ", on " + lua.LVAsString(src) + ":" + lua.LVAsString(line) + "."
	}
	return ErrReply(msg)
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func stringsTable(L *lua.LState, items [][]byte) *lua.LTable {
	t := L.CreateTable(len(items), 0)
	for i, it := range items {
		t.RawSetInt(i+1, lua.LString(it))
	}
	return t
}

// errorText is an error as Redis's luaPushErrorBuff reads it: "-CODE msg"
// keeps its code, "-msg" of one word and a message without "-" are ERR's,
// and a trailing CRLF goes.
func errorText(s string) string {
	code, msg := "ERR", s
	if rest, ok := strings.CutPrefix(s, "-"); ok {
		var found bool
		if code, msg, found = strings.Cut(rest, " "); !found {
			code, msg = "ERR", rest
		}
	}
	return code + " " + strings.TrimRight(msg, "\r\n")
}

// errorTable is a Lua error table {err = "CODE msg"}.
func errorTable(L *lua.LState, text string) *lua.LTable {
	return fieldTable(L, "err", lua.LString(errorText(text)))
}

// fieldTable is the table {field = v}: how a reply other than a string, a
// number, a boolean or an array reaches a script ({ok = "OK"} for every
// SET). It is sized for its one field: L.NewTable reserves 32 array slots
// and 32 hash slots, 5 KB of allocation for each such reply. A script may
// still add to it as to any table.
func fieldTable(L *lua.LState, field string, v lua.LValue) *lua.LTable {
	t := L.CreateTable(0, 1)
	t.RawSetString(field, v)
	return t
}

// raise raises a Redis error table from a Go function.
func raise(L *lua.LState, text string) int {
	L.Error(errorTable(L, text), 0)
	return 0
}

// formatNumber spells a Lua number as redis.call passes it: "%.17g".
func formatNumber(f float64) string {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		switch {
		case math.IsNaN(f):
			return "nan"
		case f > 0:
			return "inf"
		}
		return "-inf"
	}
	return strconv.FormatFloat(f, 'g', 17, 64)
}
