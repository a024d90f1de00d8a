package script

import (
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// loadRedis makes the global table redis: Redis 7's API for scripts.
func (e *Engine) loadRedis() {
	L := e.L
	r := L.NewTable()
	fns := map[string]lua.LGFunction{
		"call":               e.redisCall(true),
		"pcall":              e.redisCall(false),
		"error_reply":        errorReply,
		"status_reply":       statusReply,
		"sha1hex":            sha1hex,
		"log":                e.log,
		"setresp":            e.setResp,
		"set_repl":           e.setRepl,
		"replicate_commands": func(L *lua.LState) int { L.Push(lua.LTrue); return 1 },
		"breakpoint":         func(L *lua.LState) int { L.Push(lua.LFalse); return 1 },
		"debug":              func(L *lua.LState) int { return 0 },
		"acl_check_cmd":      e.aclCheckCmd,
	}
	for name, fn := range fns {
		r.RawSetString(name, L.NewFunction(fn))
	}
	for name, v := range map[string]int{"LOG_DEBUG": LogDebug, "LOG_VERBOSE": LogVerbose, "LOG_NOTICE": LogNotice,
		"LOG_WARNING": LogWarning, "REPL_NONE": 0, "REPL_AOF": 1, "REPL_SLAVE": 2, "REPL_REPLICA": 2, "REPL_ALL": 3} {
		r.RawSetString(name, lua.LNumber(v))
	}
	r.RawSetString("REDIS_VERSION", lua.LString(e.opts.Version))
	r.RawSetString("REDIS_VERSION_NUM", lua.LNumber(e.opts.VersionNum))
	e.globals.RawSetString("redis", r)
}

// inRun is the script running, or raises Redis's error naming what was
// called outside of one.
func (e *Engine) inRun(L *lua.LState, what string) *run {
	if e.run == nil {
		raise(L, what+" can only be called inside a script invocation")
	}
	return e.run
}

// commandArgs are a redis.call's arguments as the command's: strings, and
// numbers spelled as "%.17g".
func commandArgs(L *lua.LState) ([][]byte, *lua.LTable) {
	n := L.GetTop()
	if n == 0 {
		return nil, errorTable(L, "Please specify at least one argument for this redis lib call")
	}
	args := make([][]byte, n)
	for i := 1; i <= n; i++ {
		switch v := L.Get(i).(type) {
		case lua.LNumber:
			args[i-1] = []byte(formatNumber(float64(v)))
		case lua.LString:
			args[i-1] = []byte(v)
		default:
			return nil, errorTable(L, "Lua redis lib command arguments must be strings or integers")
		}
	}
	return args, nil
}

// redisCall is redis.call (raise true) and redis.pcall.
func (e *Engine) redisCall(raiseErr bool) lua.LGFunction {
	return func(L *lua.LState) int {
		r := e.inRun(L, "redis.call/pcall")
		if r.ctx.Err() != nil {
			return raise(L, killedText)
		}
		args, fail := commandArgs(L)
		if fail == nil {
			reply := r.caller.Call(args, r.resp)
			if reply.Kind != Error {
				L.Push(e.toLua(reply, 0))
				return 1
			}
			fail = errorTable(L, "-"+reply.Str)
			fail.RawSetString("ignore_error_stats_update", lua.LTrue)
		}
		if raiseErr {
			L.Error(fail, 0)
		}
		L.Push(fail)
		return 1
	}
}

// pcall is Lua's pcall as Redis 7 replaces it: an error raised as a
// table {err=…} is caught as its text, as before Redis 7.
func (e *Engine) pcall(L *lua.LState) int {
	n := L.GetTop()
	if n == 0 {
		L.ArgError(1, "value expected")
	}
	if err := L.PCall(n-1, lua.MultRet, nil); err != nil {
		var obj lua.LValue = lua.LString(err.Error())
		if api, ok := err.(*lua.ApiError); ok {
			obj = api.Object
		}
		if t, ok := obj.(*lua.LTable); ok {
			if s, ok := t.RawGetString("err").(lua.LString); ok {
				obj = s
			}
		}
		L.Push(lua.LFalse)
		L.Push(obj)
		return 2
	}
	got := L.GetTop()
	L.Insert(lua.LTrue, 1)
	return got + 1
}

func errorReply(L *lua.LState) int {
	s, ok := L.Get(1).(lua.LString)
	if L.GetTop() != 1 || !ok {
		L.Push(errorTable(L, "wrong number or type of arguments"))
		return 1
	}
	L.Push(errorTable(L, "-"+strings.TrimPrefix(string(s), "-")))
	return 1
}

func statusReply(L *lua.LState) int {
	s, ok := L.Get(1).(lua.LString)
	if L.GetTop() != 1 || !ok {
		L.Push(errorTable(L, "wrong number or type of arguments"))
		return 1
	}
	L.Push(fieldTable(L, "ok", s))
	return 1
}

func sha1hex(L *lua.LState) int {
	if L.GetTop() != 1 {
		return raise(L, "wrong number of arguments")
	}
	L.Push(lua.LString(SHA1Hex([]byte(L.ToString(1)))))
	return 1
}

func (e *Engine) log(L *lua.LState) int {
	n := L.GetTop()
	if n < 2 {
		return raise(L, "redis.log() requires two arguments or more.")
	}
	level, ok := L.Get(1).(lua.LNumber)
	if !ok {
		return raise(L, "First argument must be a number (log level).")
	}
	if level < LogDebug || level > LogWarning {
		return raise(L, "Invalid debug level.")
	}
	var parts []string
	for i := 2; i <= n; i++ {
		switch v := L.Get(i).(type) {
		case lua.LString, lua.LNumber:
			parts = append(parts, v.String())
		}
	}
	if e.opts.Log != nil {
		e.opts.Log(int(level), strings.Join(parts, " "))
	}
	return 0
}

func (e *Engine) setResp(L *lua.LState) int {
	r := e.inRun(L, "redis.setresp")
	if L.GetTop() != 1 {
		return raise(L, "redis.setresp() requires one argument.")
	}
	v := int(L.ToNumber(1))
	if v != 2 && v != 3 {
		return raise(L, "RESP version must be 2 or 3.")
	}
	r.resp = v
	return 0
}

func (e *Engine) setRepl(L *lua.LState) int {
	e.inRun(L, "redis.set_repl")
	if L.GetTop() != 1 {
		return raise(L, "redis.set_repl() requires two arguments.")
	}
	if v := int(L.ToNumber(1)); v&^3 != 0 {
		return raise(L, "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.")
	}
	return 0 // a script's writes reach the log and the disk as one batch, always
}

func (e *Engine) aclCheckCmd(L *lua.LState) int {
	r := e.inRun(L, "redis.acl_check_cmd")
	args, fail := commandArgs(L)
	if fail != nil {
		L.Error(fail, 0)
	}
	allowed, known := r.caller.Permitted(args)
	if !known {
		return raise(L, "Invalid command passed to redis.acl_check_cmd()")
	}
	L.Push(lua.LBool(allowed))
	return 1
}

// toLua is a command's reply as Redis hands it to a script.
func (e *Engine) toLua(r Reply, depth int) lua.LValue {
	L := e.L
	single := func(field string, v lua.LValue) lua.LValue { return fieldTable(L, field, v) }
	switch r.Kind {
	case Int:
		return lua.LNumber(r.Int)
	case Bulk:
		return lua.LString(r.Str)
	case NullBulk, NullArray:
		return lua.LFalse
	case Null:
		return lua.LNil
	case Status:
		return single("ok", lua.LString(r.Str))
	case Error:
		return errorTable(L, "-"+r.Str)
	case Bool:
		return lua.LBool(r.Int != 0)
	case Double:
		return single("double", lua.LNumber(r.Float))
	case BigNum:
		return single("big_number", lua.LString(r.Str))
	case Verbatim:
		v := L.CreateTable(0, 2)
		v.RawSetString("string", lua.LString(r.Str))
		v.RawSetString("format", lua.LString(r.Format))
		return single("verbatim_string", v)
	case Array:
		t := L.CreateTable(len(r.Elems), 0)
		for i, el := range r.Elems {
			t.RawSetInt(i+1, e.toLua(el, depth+1))
		}
		return t
	case Map:
		m := L.CreateTable(0, len(r.Elems)/2)
		for i := 0; i+1 < len(r.Elems); i += 2 {
			m.RawSet(e.toLua(r.Elems[i], depth+1), e.toLua(r.Elems[i+1], depth+1))
		}
		return single("map", m)
	case Set:
		m := L.CreateTable(0, len(r.Elems))
		for _, el := range r.Elems {
			m.RawSet(e.toLua(el, depth+1), lua.LTrue)
		}
		return single("set", m)
	}
	return lua.LNil
}

// maxDepth is how deep a script's result may nest before the rest is
// Redis's "reached lua stack limit" (a table that holds itself).
const maxDepth = 1000

// toReply is a script's result as Redis replies it, resp being the
// protocol the script chose with redis.setresp.
func (e *Engine) toReply(v lua.LValue, resp, depth int) Reply {
	if depth > maxDepth {
		return ErrReply("ERR reached lua stack limit")
	}
	switch v := v.(type) {
	case lua.LString:
		return Reply{Kind: Bulk, Str: string(v)}
	case lua.LBool:
		if resp == 2 {
			if v {
				return Reply{Kind: Int, Int: 1}
			}
			return Reply{Kind: Null}
		}
		if v {
			return Reply{Kind: Bool, Int: 1}
		}
		return Reply{Kind: Bool}
	case lua.LNumber:
		return Reply{Kind: Int, Int: toInt64(float64(v))}
	case *lua.LTable:
		if s, ok := v.RawGetString("err").(lua.LString); ok {
			return ErrReply(string(s))
		}
		if s, ok := v.RawGetString("ok").(lua.LString); ok {
			return Reply{Kind: Status, Str: oneLine(string(s))}
		}
		if n, ok := v.RawGetString("double").(lua.LNumber); ok {
			return Reply{Kind: Double, Float: float64(n)}
		}
		if s, ok := v.RawGetString("big_number").(lua.LString); ok {
			return Reply{Kind: BigNum, Str: oneLine(string(s))}
		}
		if t, ok := v.RawGetString("verbatim_string").(*lua.LTable); ok {
			f, okf := t.RawGetString("format").(lua.LString)
			s, oks := t.RawGetString("string").(lua.LString)
			if okf && oks {
				return Reply{Kind: Verbatim, Str: string(s), Format: string(f)}
			}
		}
		if t, ok := v.RawGetString("map").(*lua.LTable); ok {
			r := Reply{Kind: Map}
			e.forEach(t, func(k, val lua.LValue) {
				r.Elems = append(r.Elems, e.toReply(k, resp, depth+1), e.toReply(val, resp, depth+1))
			})
			return r
		}
		if t, ok := v.RawGetString("set").(*lua.LTable); ok {
			r := Reply{Kind: Set}
			e.forEach(t, func(k, _ lua.LValue) { r.Elems = append(r.Elems, e.toReply(k, resp, depth+1)) })
			return r
		}
		r := Reply{Kind: Array}
		for i := 1; ; i++ {
			el := v.RawGetInt(i)
			if el == lua.LNil {
				break
			}
			r.Elems = append(r.Elems, e.toReply(el, resp, depth+1))
			if depth+1 > maxDepth {
				break
			}
		}
		return r
	}
	return Reply{Kind: Null}
}

// forEach walks t as Lua's next does: in an order that depends only on
// how the table was built, so that every node of a cluster encodes a
// table alike. (gopher-lua's ForEach walks Go maps, in random order.)
func (e *Engine) forEach(t *lua.LTable, fn func(k, v lua.LValue)) { forEach(t, fn) }

func forEach(t *lua.LTable, fn func(k, v lua.LValue)) {
	for k, v := t.Next(lua.LNil); k != lua.LNil; k, v = t.Next(k) {
		fn(k, v)
	}
}

// toInt64 is C's (long long) cast of a Lua number, saturating where C's
// is undefined.
func toInt64(f float64) int64 {
	switch {
	case f != f:
		return 0
	case f >= 9.2233720368547758e18:
		return 1<<63 - 1
	case f <= -9.2233720368547758e18:
		return -1 << 63
	}
	return int64(f)
}

func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' {
			return ' '
		}
		return r
	}, s)
}

// mathRandom is Redis's math.random: Lua 5.1's, on redisLrand48, so every
// platform draws the same sequence from the same seed.
func (e *Engine) mathRandom(L *lua.LState) int {
	e.inRun(L, "math.random")
	r := float64(e.rand.next()%lrand48Max) / float64(lrand48Max)
	switch L.GetTop() {
	case 0:
		L.Push(lua.LNumber(r))
	case 1:
		u := int(L.CheckNumber(1))
		if u < 1 {
			L.ArgError(1, "interval is empty")
		}
		L.Push(lua.LNumber(float64(int64(r*float64(u))) + 1))
	case 2:
		l, u := int(L.CheckNumber(1)), int(L.CheckNumber(2))
		if l > u {
			L.ArgError(2, "interval is empty")
		}
		L.Push(lua.LNumber(float64(int64(r*float64(u-l+1))) + float64(l)))
	default:
		L.RaiseError("wrong number of arguments")
	}
	return 1
}

func (e *Engine) mathRandomSeed(L *lua.LState) int {
	e.inRun(L, "math.randomseed")
	e.rand.seed(int64(int32(int(L.CheckNumber(1)))))
	return 0
}

// lrand48 is the 48-bit generator of POSIX's lrand48, as Redis's rand.c.
type lrand48 struct{ x uint64 }

const lrand48Max = 1<<31 - 1

func (r *lrand48) seed(s int64) { r.x = uint64(uint32(s))<<16 | 0x330E }

func (r *lrand48) next() uint64 {
	r.x = (0x5DEECE66D*r.x + 0xB) & (1<<48 - 1)
	return r.x >> 17
}
