package script

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	lua "github.com/yuin/gopher-lua"
)

// cjson is the cjson library Redis bundles (lua-cjson 2.1): encode,
// decode, cjson.null and the settings scripts call, written here after
// its documented behaviour; no maintained Go module implements
// lua-cjson's rules (numbers as %.14g, "/" escaped, an empty table as {}).
type cjson struct {
	null            *lua.LUserData
	encodeMaxDepth  int
	decodeMaxDepth  int
	encodeInvalid   bool
	decodeInvalid   bool
	numberPrecision int
}

func (e *Engine) loadCJSON() {
	L := e.L
	c := &cjson{null: L.NewUserData(), encodeMaxDepth: 1000, decodeMaxDepth: 1000, decodeInvalid: true, numberPrecision: 14}
	t := L.NewTable()
	t.RawSetString("null", c.null)
	t.RawSetString("_NAME", lua.LString("cjson"))
	t.RawSetString("_VERSION", lua.LString("2.1.0"))
	fns := map[string]lua.LGFunction{
		"encode": c.encode,
		"decode": c.decode,
		"encode_max_depth": func(L *lua.LState) int {
			c.encodeMaxDepth = L.OptInt(1, c.encodeMaxDepth)
			L.Push(lua.LNumber(c.encodeMaxDepth))
			return 1
		},
		"decode_max_depth": func(L *lua.LState) int {
			c.decodeMaxDepth = L.OptInt(1, c.decodeMaxDepth)
			L.Push(lua.LNumber(c.decodeMaxDepth))
			return 1
		},
		"encode_invalid_numbers": func(L *lua.LState) int {
			if L.GetTop() > 0 {
				c.encodeInvalid = L.ToBool(1)
			}
			L.Push(lua.LBool(c.encodeInvalid))
			return 1
		},
		"decode_invalid_numbers": func(L *lua.LState) int {
			if L.GetTop() > 0 {
				c.decodeInvalid = L.ToBool(1)
			}
			L.Push(lua.LBool(c.decodeInvalid))
			return 1
		},
		"encode_number_precision": func(L *lua.LState) int {
			p := L.OptInt(1, c.numberPrecision)
			if p < 1 || p > 14 {
				L.ArgError(1, "expected integer between 1 and 14")
			}
			c.numberPrecision = p
			L.Push(lua.LNumber(p))
			return 1
		},
		"encode_keep_buffer": func(L *lua.LState) int { L.Push(lua.LTrue); return 1 },
		"encode_sparse_array": func(L *lua.LState) int {
			L.Push(lua.LFalse)
			L.Push(lua.LNumber(2))
			L.Push(lua.LNumber(10))
			return 3
		},
	}
	for name, fn := range fns {
		t.RawSetString(name, L.NewFunction(fn))
	}
	e.globals.RawSetString("cjson", t)
}

func (c *cjson) encode(L *lua.LState) int {
	if L.GetTop() != 1 {
		L.ArgError(1, "expected 1 argument")
	}
	var b strings.Builder
	c.encodeValue(L, &b, L.Get(1), 0)
	L.Push(lua.LString(b.String()))
	return 1
}

func (c *cjson) encodeValue(L *lua.LState, b *strings.Builder, v lua.LValue, depth int) {
	switch v := v.(type) {
	case *lua.LNilType:
		b.WriteString("null")
	case lua.LBool:
		b.WriteString(strconv.FormatBool(bool(v)))
	case lua.LNumber:
		f := float64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			if !c.encodeInvalid {
				L.RaiseError("Cannot serialise number: must not be NaN or Inf")
			}
			switch {
			case math.IsNaN(f):
				b.WriteString("nan")
			case f > 0:
				b.WriteString("inf")
			default:
				b.WriteString("-inf")
			}
			return
		}
		b.WriteString(strconv.FormatFloat(f, 'g', c.numberPrecision, 64))
	case lua.LString:
		encodeString(b, string(v))
	case *lua.LUserData:
		if v == c.null {
			b.WriteString("null")
			return
		}
		L.RaiseError("Cannot serialise userdata: type not supported")
	case *lua.LTable:
		depth++
		if depth > c.encodeMaxDepth {
			L.RaiseError("Cannot serialise, excessive nesting (%d)", depth)
		}
		n, isArray := arrayLength(v)
		if isArray && n > 0 {
			b.WriteByte('[')
			for i := 1; i <= n; i++ {
				if i > 1 {
					b.WriteByte(',')
				}
				c.encodeValue(L, b, v.RawGetInt(i), depth)
			}
			b.WriteByte(']')
			return
		}
		b.WriteByte('{')
		first := true
		forEach(v, func(k, val lua.LValue) {
			if !first {
				b.WriteByte(',')
			}
			first = false
			switch k := k.(type) {
			case lua.LString:
				encodeString(b, string(k))
			case lua.LNumber:
				encodeString(b, strconv.FormatFloat(float64(k), 'g', c.numberPrecision, 64))
			default:
				L.RaiseError("Cannot serialise %s: table key must be a number or string", k.Type().String())
			}
			b.WriteByte(':')
			c.encodeValue(L, b, val, depth)
		})
		b.WriteByte('}')
	default:
		L.RaiseError("Cannot serialise %s: type not supported", v.Type().String())
	}
}

// arrayLength says whether t is an array (every key a positive integer)
// and its largest key. lua-cjson encodes an array with holes of up to
// ratio 2 with nulls, and refuses sparser ones; this one always fills.
func arrayLength(t *lua.LTable) (int, bool) {
	max, count, ok := 0, 0, true
	forEach(t, func(k, _ lua.LValue) {
		n, isNum := k.(lua.LNumber)
		if !isNum || float64(n) != math.Floor(float64(n)) || n < 1 {
			ok = false
			return
		}
		count++
		if int(n) > max {
			max = int(n)
		}
	})
	if !ok || (max > 10 && max > 2*count) {
		return 0, false
	}
	return max, true
}

func encodeString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch ch {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '/':
			b.WriteString(`\/`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if ch < 0x20 || ch == 0x7f {
				b.WriteString(`\u00`)
				b.WriteByte("0123456789abcdef"[ch>>4])
				b.WriteByte("0123456789abcdef"[ch&15])
			} else {
				b.WriteByte(ch)
			}
		}
	}
	b.WriteByte('"')
}

// jsonDecoder reads one JSON text into Lua values.
type jsonDecoder struct {
	L   *lua.LState
	c   *cjson
	s   string
	i   int
	err string
}

func (c *cjson) decode(L *lua.LState) int {
	if L.GetTop() != 1 {
		L.ArgError(1, "expected 1 argument")
	}
	d := &jsonDecoder{L: L, c: c, s: L.CheckString(1)}
	v := d.value(0)
	d.space()
	if d.err == "" && d.i < len(d.s) {
		d.fail("the end")
	}
	if d.err != "" {
		L.RaiseError("%s", d.err)
	}
	L.Push(v)
	return 1
}

func (d *jsonDecoder) fail(expected string) lua.LValue {
	if d.err == "" {
		d.err = "Expected " + expected + " but found invalid token at character " + strconv.Itoa(d.i+1)
	}
	return lua.LNil
}

func (d *jsonDecoder) space() {
	for d.i < len(d.s) && strings.IndexByte(" \t\r\n", d.s[d.i]) >= 0 {
		d.i++
	}
}

func (d *jsonDecoder) value(depth int) lua.LValue {
	if d.err != "" {
		return lua.LNil
	}
	d.space()
	if d.i >= len(d.s) {
		return d.fail("value")
	}
	switch ch := d.s[d.i]; {
	case ch == '{' || ch == '[':
		depth++
		if depth > d.c.decodeMaxDepth {
			d.err = "Found too many nested data structures (" + strconv.Itoa(depth) + ") at character " + strconv.Itoa(d.i+1)
			return lua.LNil
		}
		d.i++
		t := d.L.NewTable()
		closing := byte(']')
		if ch == '{' {
			closing = '}'
		}
		d.space()
		if d.i < len(d.s) && d.s[d.i] == closing {
			d.i++
			return t
		}
		for n := 1; ; n++ {
			if ch == '{' {
				d.space()
				if d.i >= len(d.s) || d.s[d.i] != '"' {
					return d.fail("object key string")
				}
				k := d.str()
				d.space()
				if d.i >= len(d.s) || d.s[d.i] != ':' {
					return d.fail("colon")
				}
				d.i++
				t.RawSet(k, d.value(depth))
			} else {
				t.RawSetInt(n, d.value(depth))
			}
			if d.err != "" {
				return lua.LNil
			}
			d.space()
			if d.i < len(d.s) && d.s[d.i] == ',' {
				d.i++
				continue
			}
			if d.i < len(d.s) && d.s[d.i] == closing {
				d.i++
				return t
			}
			if ch == '{' {
				return d.fail("comma or object end")
			}
			return d.fail("comma or array end")
		}
	case ch == '"':
		return d.str()
	case strings.HasPrefix(d.s[d.i:], "true"):
		d.i += 4
		return lua.LTrue
	case strings.HasPrefix(d.s[d.i:], "false"):
		d.i += 5
		return lua.LFalse
	case strings.HasPrefix(d.s[d.i:], "null"):
		d.i += 4
		return d.c.null
	case ch == '-' || (ch >= '0' && ch <= '9') || ch == 'i' || ch == 'n' || ch == 'I' || ch == 'N':
		j := d.i
		for j < len(d.s) && strings.IndexByte("+-0123456789.eEinfatyINFATY", d.s[j]) >= 0 {
			j++
		}
		f, err := strconv.ParseFloat(d.s[d.i:j], 64)
		if err != nil && !isRangeErr(err) {
			return d.fail("value")
		}
		if (math.IsNaN(f) || math.IsInf(f, 0)) && !d.c.decodeInvalid {
			return d.fail("value")
		}
		d.i = j
		return lua.LNumber(f)
	}
	return d.fail("value")
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// str reads a JSON string at d.i, its opening quote included.
func (d *jsonDecoder) str() lua.LValue {
	d.i++
	var b strings.Builder
	for d.i < len(d.s) {
		ch := d.s[d.i]
		switch {
		case ch == '"':
			d.i++
			return lua.LString(b.String())
		case ch == '\\':
			if d.i+1 >= len(d.s) {
				return d.fail("string")
			}
			esc := d.s[d.i+1]
			d.i += 2
			switch esc {
			case '"', '\\', '/':
				b.WriteByte(esc)
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'u':
				r, ok := d.hex4()
				if !ok {
					return d.fail("valid unicode escape")
				}
				if r >= 0xD800 && r < 0xDC00 && strings.HasPrefix(d.s[d.i:], `\u`) {
					d.i += 2
					lo, ok := d.hex4()
					if !ok || lo < 0xDC00 || lo > 0xDFFF {
						return d.fail("valid unicode escape")
					}
					r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
				}
				var buf [4]byte
				b.Write(buf[:utf8.EncodeRune(buf[:], r)])
			default:
				return d.fail("valid escape")
			}
		default:
			b.WriteByte(ch)
			d.i++
		}
	}
	return d.fail("string end")
}

func (d *jsonDecoder) hex4() (rune, bool) {
	if d.i+4 > len(d.s) {
		return 0, false
	}
	v, err := strconv.ParseUint(d.s[d.i:d.i+4], 16, 32)
	if err != nil {
		return 0, false
	}
	d.i += 4
	return rune(v), true
}
