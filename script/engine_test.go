package script

import (
	"context"
	"strings"
	"testing"
	"time"
)

// echoCaller answers every command with its arguments as an array of
// bulk strings, and "-ERR boom" for FAIL.
type echoCaller struct{ calls [][]string }

func (c *echoCaller) Call(args [][]byte, resp int) Reply {
	var s []string
	r := Reply{Kind: Array}
	for _, a := range args {
		s = append(s, string(a))
		r.Elems = append(r.Elems, Reply{Kind: Bulk, Str: string(a)})
	}
	c.calls = append(c.calls, s)
	switch strings.ToLower(s[0]) {
	case "fail":
		return ErrReply("ERR boom")
	case "status":
		return Reply{Kind: Status, Str: "OK"}
	case "nil":
		return Reply{Kind: NullBulk}
	case "null":
		return Reply{Kind: Null}
	case "map":
		return Reply{Kind: Map, Elems: []Reply{{Kind: Bulk, Str: "f"}, {Kind: Bulk, Str: "v"}}}
	case "int":
		return Reply{Kind: Int, Int: 42}
	}
	return r
}

func (c *echoCaller) Permitted(args [][]byte) (bool, bool) {
	return string(args[0]) != "denied", string(args[0]) != "nosuch"
}

func runBody(t *testing.T, e *Engine, body string, keys, args []string) Reply {
	t.Helper()
	s, err := Compile([]byte(body))
	if err != nil {
		return ErrReply(err.Error())
	}
	var k, a [][]byte
	for _, x := range keys {
		k = append(k, []byte(x))
	}
	for _, x := range args {
		a = append(a, []byte(x))
	}
	return e.Run(context.Background(), s, k, a, &echoCaller{}, 0)
}

// show spells a reply compactly for the tables below.
func show(r Reply) string {
	switch r.Kind {
	case Null:
		return "nil"
	case NullBulk:
		return "nilbulk"
	case NullArray:
		return "nilarray"
	case Status:
		return "+" + r.Str
	case Error:
		return "-" + r.Str
	case Int:
		return ":" + itoa(r.Int)
	case Bulk:
		return "$" + r.Str
	case Bool:
		return "#" + itoa(r.Int)
	case Double:
		return "," + formatNumber(r.Float)
	case BigNum:
		return "(" + r.Str
	case Verbatim:
		return "=" + r.Format + ":" + r.Str
	}
	var parts []string
	for _, e := range r.Elems {
		parts = append(parts, show(e))
	}
	open := map[Kind]string{Array: "[", Map: "%[", Set: "~["}[r.Kind]
	return open + strings.Join(parts, " ") + "]"
}

func itoa(n int64) string { return formatNumber(float64(n)) }

func TestConversions(t *testing.T) {
	e := New(Options{Version: "7.0.15", VersionNum: 0x07000f})
	defer e.Close()
	for _, tc := range []struct{ body, want string }{
		{"return 'hello'", "$hello"},
		{"return 100.5", ":100"},
		{"return true", ":1"},
		{"return false", "nil"},
		{"return nil", "nil"},
		{"return {ok='fine'}", "+fine"},
		{"return {err='ERR this is an error'}", "-ERR this is an error"},
		{"return {1,2,3,'ciao',{1,2}}", "[:1 :2 :3 $ciao [:1 :2]]"},
		{"return {1,2,nil,4}", "[:1 :2]"},
		{"return {KEYS[1],KEYS[2],ARGV[1],ARGV[2]}", "[$a $b $c $d]"},
		{"return redis.call('int')", ":42"},
		{"return redis.call('nil')", "nil"},
		{"return type(redis.call('nil'))", "$boolean"},
		{"return redis.call('status')", "+OK"},
		{"return redis.call('get', 1.5, 10)", "[$get $1.5 $10]"},
		{"return redis.pcall('fail')", "-ERR boom"},
		{"local t = redis.pcall('fail'); return t['err']", "$ERR boom"},
		{"return redis.call('fail')", "-ERR boom script: *, on @user_script:1."},
		{"return redis.error_reply('MY_ERR custom')", "-MY_ERR custom"},
		{"return redis.error_reply('')", "-ERR "},
		{"return redis.status_reply('fine')", "+fine"},
		{"return redis.sha1hex('Pizza & Mandolino')", "$74822d82031af7493c20eefa13bd07ec4fada82f"},
		{"redis.setresp(3); return true", "#1"},
		{"redis.setresp(3); return false", "#0"},
		{"redis.setresp(3); return {double=3.5}", ",3.5"},
		{"redis.setresp(3); return {big_number='123\\r\\n4'}", "(123  4"},
		{"redis.setresp(3); return redis.call('map')", "%[$f $v]"},
		{"redis.setresp(3); return type(redis.call('null'))", "$nil"},
		{"return redis.call('map')['map']['f']", "$v"},
		{"return redis.acl_check_cmd('set', 'x')", ":1"},
		{"return redis.acl_check_cmd('denied')", "nil"},
		{"return redis.call()", "-ERR Please specify at least one argument for this redis lib call script: *, on @user_script:1."},
		{"return redis.call('x', {})", "-ERR Lua redis lib command arguments must be strings or integers script: *, on @user_script:1."},
		{"return cjson.encode({a={1,2,'x/y'}})", `${"a":[1,2,"x\/y"]}`},
		{"return cjson.encode({})", "${}"},
		{"return table.concat(cjson.decode('[0.0, -5e3, -1, 0.3e-3, 1023.2, 0e10]'), ' ')", "$0 -5000 -1 0.0003 1023.2 0"},
		{"return cjson.decode('{\"a\":null}').a == cjson.null", ":1"},
		{"return bit.bor(1,2,4,8,16,32,64,128)", ":255"},
		{"return bit.tohex(-1)", "$ffffffff"},
		{"return struct.unpack('>I2', struct.pack('>I2', 513))", ":513"},
		{"local e = cmsgpack.pack(-1099511627776); local h = '' for i=1,#e do h = h .. string.format('%02x', string.byte(e, i)) end return h", "$d3ffffff0000000000"},
		{"local e = cmsgpack.pack(0.1); local h = '' for i=1,#e do h = h .. string.format('%02x', string.byte(e, i)) end return h", "$cb3fb999999999999a"},
		{"return cmsgpack.unpack(cmsgpack.pack({1,2,{a='b'}}))[3].a", "$b"},
		{"return _G", "[]"},
		{"local a = {}; setmetatable(a,{__index=function() foo() end}) return a", "[]"},
		{"return redis.REDIS_VERSION", "$7.0.15"},
		{"return 'hello' --trailing comment", "$hello"},
		{"#!lua flags=no-writes\nreturn 1", ":1"},
	} {
		got := show(runBody(t, e, tc.body, []string{"a", "b"}, []string{"c", "d"}))
		if !match(tc.want, got) {
			t.Errorf("%s\n got %s\nwant %s", tc.body, got, tc.want)
		}
	}
}

// match is a glob with * only.
func match(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for _, p := range parts[1:] {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return parts[len(parts)-1] == "" || s == ""
}

// The sandbox: no file, OS or module access, no new globals, and library
// tables a script cannot change (SPEC §13).
func TestSandbox(t *testing.T) {
	e := New(Options{})
	defer e.Close()
	for _, tc := range []struct{ body, want string }{
		{"return a", "-ERR user_script:1: Script attempted to access nonexistent global variable 'a'*"},
		{"a = 10", "-ERR user_script:1: Attempt to modify a readonly table*"},
		{"setmetatable(_G, {})", "*Attempt to modify a readonly table*"},
		{"local g = getmetatable(_G); g.__index = {}", "*Attempt to modify a readonly table*"},
		{"redis = function() return 1 end", "*Attempt to modify a readonly table*"},
		{"_G = {}", "*Attempt to modify a readonly table*"},
		{"redis.call = function() return 1 end", "*Attempt to modify a readonly table*"},
		{"cjson.encode = function() return 1 end", "*Attempt to modify a readonly table*"},
		{"cmsgpack.pack = function() return 1 end", "*Attempt to modify a readonly table*"},
		{"bit.lshift = function() return 1 end", "*Attempt to modify a readonly table*"},
		{"string.format = nil", "*Attempt to modify a readonly table*"},
		{"rawset(_G, 'x', 1)", "*Attempt to modify a readonly table*"},
		{"getfenv(tostring).x = 1", "*Attempt to modify a readonly table*"},
		{"rawset(getfenv(tostring), 'redis', 1)", "*Attempt to modify a readonly table*"},
		{"loadfile('/etc/passwd')", "*Script attempted to access nonexistent global variable 'loadfile'*"},
		{"dofile('/etc/passwd')", "*Script attempted to access nonexistent global variable 'dofile'*"},
		{"print('x')", "*Script attempted to access nonexistent global variable 'print'*"},
		{"return io.open('/etc/passwd')", "*nonexistent global variable 'io'*"},
		{"return os.getenv('HOME')", "*nonexistent global variable 'os'*"},
		{"return require('os')", "*nonexistent global variable 'require'*"},
		{"return package.loaded", "*nonexistent global variable 'package'*"},
		{"return debug.getinfo(1)", "*nonexistent global variable 'debug'*"},
		{"return loadstring(string.dump(function() return 1 end))()", "*attempt to call a n*"},
		{"return loadstring('return os')()", "*nonexistent global variable 'os'*"},
		{"return string.rep('x', 1e12)", "*too large*"},
		{"return", "nil"},
	} {
		got := show(runBody(t, e, tc.body, nil, nil))
		if !match(tc.want, got) {
			t.Errorf("%s\n got %s\nwant %s", tc.body, got, tc.want)
		}
	}
	// A script's failure leaves nothing behind for the next.
	if got := show(runBody(t, e, "return redis.call('echo', 'x')[1]", nil, nil)); got != "$echo" {
		t.Errorf("after the sandbox tests: %s", got)
	}
}

func TestRandomIsSeededPerRun(t *testing.T) {
	e := New(Options{})
	defer e.Close()
	s, _ := Compile([]byte("return tostring(math.random())"))
	a := e.Run(context.Background(), s, nil, nil, &echoCaller{}, 7)
	b := e.Run(context.Background(), s, nil, nil, &echoCaller{}, 7)
	c := e.Run(context.Background(), s, nil, nil, &echoCaller{}, 8)
	if a.Str != b.Str || a.Str == c.Str {
		t.Fatalf("seeds 7, 7, 8 drew %s, %s, %s", a.Str, b.Str, c.Str)
	}
	s2, _ := Compile([]byte("math.randomseed(ARGV[1]); return tostring(math.random())"))
	x := e.Run(context.Background(), s2, nil, [][]byte{[]byte("10")}, &echoCaller{}, 1)
	y := e.Run(context.Background(), s2, nil, [][]byte{[]byte("10")}, &echoCaller{}, 2)
	if x.Str != y.Str {
		t.Fatalf("randomseed(10) drew %s then %s", x.Str, y.Str)
	}
}

func TestKill(t *testing.T) {
	e := New(Options{})
	defer e.Close()
	for _, body := range []string{
		"while true do end",
		"local f = function() while 1 do redis.call('ping') end end while 1 do pcall(f) end",
	} {
		s, err := Compile([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		got := e.Run(ctx, s, nil, nil, &echoCaller{}, 0)
		cancel()
		if got.Kind != Error || !strings.Contains(got.Str, "killed by user") {
			t.Fatalf("%s: %s", body, show(got))
		}
	}
}

func TestCompileError(t *testing.T) {
	_, err := Compile([]byte("return 'x"))
	if err == nil || !strings.HasPrefix(err.Error(), "Error compiling script (new function): user_script:1:") {
		t.Fatalf("got %v", err)
	}
	for _, body := range []string{"#!foo\nreturn 1", "#!lua bad=1\nreturn 1", "#!lua flags=nope\nreturn 1"} {
		if _, err := Compile([]byte(body)); err == nil {
			t.Errorf("%q compiled", body)
		}
	}
}

// TestEncodingIsDeterministic: a table's keys are walked in an order that
// depends only on how the table was built, so two engines (two nodes of a
// cluster) encode it alike (SPEC §13).
func TestEncodingIsDeterministic(t *testing.T) {
	const body = `local t = {} for i = 1, 50 do t['k' .. i] = i end
		return {cjson.encode(t), cmsgpack.pack(t), {map=t}}`
	var first string
	for range 10 {
		e := New(Options{})
		got := show(runBody(t, e, "redis.setresp(3) "+body, nil, nil))
		e.Close()
		if first == "" {
			first = got
		} else if got != first {
			t.Fatalf("two engines encoded one table differently:\n%s\n%s", first, got)
		}
	}
}
