package script

import (
	"math"

	lua "github.com/yuin/gopher-lua"
)

// --- cmsgpack (lua-cmsgpack 0.4, as Redis bundles) ---

// msgpackMaxNesting is how deep cmsgpack.pack goes; deeper tables are
// packed as nil, as lua-cmsgpack does.
const msgpackMaxNesting = 16

func (e *Engine) loadMsgpack() {
	L := e.L
	t := L.NewTable()
	t.RawSetString("pack", L.NewFunction(msgpackPack))
	t.RawSetString("unpack", L.NewFunction(func(L *lua.LState) int { return msgpackUnpack(L, 0, 0, false) }))
	t.RawSetString("unpack_one", L.NewFunction(func(L *lua.LState) int {
		return msgpackUnpack(L, 1, L.OptInt(2, 0), true)
	}))
	t.RawSetString("unpack_limit", L.NewFunction(func(L *lua.LState) int {
		return msgpackUnpack(L, int(L.CheckNumber(2)), L.OptInt(3, 0), true)
	}))
	t.RawSetString("_NAME", lua.LString("cmsgpack"))
	t.RawSetString("_VERSION", lua.LString("lua-cmsgpack 0.4.0"))
	e.globals.RawSetString("cmsgpack", t)
}

func msgpackPack(L *lua.LState) int {
	n := L.GetTop()
	if n == 0 {
		L.ArgError(0, "MessagePack pack needs input.")
	}
	var out []byte
	for i := 1; i <= n; i++ {
		out = packValue(out, L.Get(i), 0)
	}
	L.Push(lua.LString(out))
	return 1
}

func packValue(b []byte, v lua.LValue, depth int) []byte {
	switch v := v.(type) {
	case lua.LBool:
		if v {
			return append(b, 0xc3)
		}
		return append(b, 0xc2)
	case lua.LNumber:
		f := float64(v)
		if f == math.Trunc(f) && !math.IsInf(f, 0) && f >= -9.2233720368547758e18 && f < 9.2233720368547758e18 {
			return packInt(b, int64(f))
		}
		if float64(float32(f)) == f {
			return putInt(append(b, 0xca), uint64(math.Float32bits(float32(f))), 4, false)
		}
		return putInt(append(b, 0xcb), math.Float64bits(f), 8, false)
	case lua.LString:
		n := len(v)
		switch {
		case n < 32:
			b = append(b, 0xa0|byte(n))
		case n <= 0xff:
			b = append(b, 0xd9, byte(n))
		case n <= 0xffff:
			b = putInt(append(b, 0xda), uint64(n), 2, false)
		default:
			b = putInt(append(b, 0xdb), uint64(n), 4, false)
		}
		return append(b, v...)
	case *lua.LTable:
		if depth >= msgpackMaxNesting {
			return append(b, 0xc0)
		}
		if n, ok := msgpackArray(v); ok {
			b = packHeader(b, n, 0x90, 0xdc, 0xdd)
			for i := 1; i <= n; i++ {
				b = packValue(b, v.RawGetInt(i), depth+1)
			}
			return b
		}
		count := 0
		forEach(v, func(_, _ lua.LValue) { count++ })
		b = packHeader(b, count, 0x80, 0xde, 0xdf)
		forEach(v, func(k, val lua.LValue) {
			b = packValue(b, k, depth+1)
			b = packValue(b, val, depth+1)
		})
		return b
	}
	return append(b, 0xc0)
}

func packHeader(b []byte, n int, fix, b16, b32 byte) []byte {
	switch {
	case n < 16:
		return append(b, fix|byte(n))
	case n <= 0xffff:
		return putInt(append(b, b16), uint64(n), 2, false)
	}
	return putInt(append(b, b32), uint64(n), 4, false)
}

func packInt(b []byte, n int64) []byte {
	if n >= 0 {
		switch {
		case n < 128:
			return append(b, byte(n))
		case n <= 0xff:
			return append(b, 0xcc, byte(n))
		case n <= 0xffff:
			return putInt(append(b, 0xcd), uint64(n), 2, false)
		case n <= 0xffffffff:
			return putInt(append(b, 0xce), uint64(n), 4, false)
		}
		return putInt(append(b, 0xcf), uint64(n), 8, false)
	}
	switch {
	case n >= -32:
		return append(b, byte(int8(n)))
	case n >= -128:
		return append(b, 0xd0, byte(int8(n)))
	case n >= -32768:
		return putInt(append(b, 0xd1), uint64(n), 2, false)
	case n >= -2147483648:
		return putInt(append(b, 0xd2), uint64(n), 4, false)
	}
	return putInt(append(b, 0xd3), uint64(n), 8, false)
}

// msgpackArray is lua-cmsgpack's table_is_an_array: every key a positive
// integer and none missing from 1 to their count.
func msgpackArray(t *lua.LTable) (int, bool) {
	count, max, ok := 0, 0, true
	forEach(t, func(k, _ lua.LValue) {
		n, isNum := k.(lua.LNumber)
		if !isNum || n < 1 || float64(n) != math.Trunc(float64(n)) {
			ok = false
			return
		}
		count++
		max = int(math.Max(float64(max), float64(n)))
	})
	return count, ok && max == count
}

// msgpackUnpack decodes up to limit objects (0: all) from offset.
func msgpackUnpack(L *lua.LState, limit, offset int, withOffset bool) int {
	s := L.CheckString(1)
	if offset < 0 || limit < 0 {
		L.RaiseError("Invalid request to unpack with offset of %d and limit of %d.", offset, limit)
	}
	if offset > len(s) {
		L.RaiseError("Start offset %d greater than input length %d.", offset, len(s))
	}
	d := &msgpackDecoder{L: L, s: s, i: offset}
	n := 0
	if withOffset {
		L.Push(lua.LNil) // the offset, set below
	}
	for d.i < len(s) && (limit == 0 || n < limit) {
		L.Push(d.value(0))
		n++
	}
	if withOffset {
		next := d.i
		if next >= len(s) {
			next = -1
		}
		L.Replace(-n-1, lua.LNumber(next))
		return n + 1
	}
	return n
}

type msgpackDecoder struct {
	L *lua.LState
	s string
	i int
}

func (d *msgpackDecoder) take(n int) string {
	if n < 0 || d.i+n > len(d.s) {
		d.L.RaiseError("Missing bytes in input.")
	}
	v := d.s[d.i : d.i+n]
	d.i += n
	return v
}

func (d *msgpackDecoder) uint(n int) uint64 {
	var v uint64
	for _, c := range []byte(d.take(n)) {
		v = v<<8 | uint64(c)
	}
	return v
}

func (d *msgpackDecoder) value(depth int) lua.LValue {
	if depth > 1000 {
		d.L.RaiseError("Bad data format in input.")
	}
	c := d.take(1)[0]
	switch {
	case c < 0x80:
		return lua.LNumber(c)
	case c >= 0xe0:
		return lua.LNumber(int8(c))
	case c&0xe0 == 0xa0:
		return lua.LString(d.take(int(c & 0x1f)))
	case c&0xf0 == 0x90:
		return d.array(int(c&0x0f), depth)
	case c&0xf0 == 0x80:
		return d.table(int(c&0x0f), depth)
	}
	switch c {
	case 0xc0:
		return lua.LNil
	case 0xc2:
		return lua.LFalse
	case 0xc3:
		return lua.LTrue
	case 0xcc:
		return lua.LNumber(d.uint(1))
	case 0xcd:
		return lua.LNumber(d.uint(2))
	case 0xce:
		return lua.LNumber(d.uint(4))
	case 0xcf:
		return lua.LNumber(float64(d.uint(8)))
	case 0xd0:
		return lua.LNumber(int8(d.uint(1)))
	case 0xd1:
		return lua.LNumber(int16(d.uint(2)))
	case 0xd2:
		return lua.LNumber(int32(d.uint(4)))
	case 0xd3:
		return lua.LNumber(float64(int64(d.uint(8))))
	case 0xca:
		return lua.LNumber(math.Float32frombits(uint32(d.uint(4))))
	case 0xcb:
		return lua.LNumber(math.Float64frombits(d.uint(8)))
	case 0xd9, 0xc4:
		return lua.LString(d.take(int(d.uint(1))))
	case 0xda, 0xc5:
		return lua.LString(d.take(int(d.uint(2))))
	case 0xdb, 0xc6:
		return lua.LString(d.take(int(d.uint(4))))
	case 0xdc:
		return d.array(int(d.uint(2)), depth)
	case 0xdd:
		return d.array(int(d.uint(4)), depth)
	case 0xde:
		return d.table(int(d.uint(2)), depth)
	case 0xdf:
		return d.table(int(d.uint(4)), depth)
	}
	d.L.RaiseError("Bad data format in input.")
	return lua.LNil
}

func (d *msgpackDecoder) array(n, depth int) lua.LValue {
	if n > len(d.s)-d.i {
		d.L.RaiseError("Missing bytes in input.")
	}
	t := d.L.CreateTable(n, 0)
	for i := 1; i <= n; i++ {
		t.RawSetInt(i, d.value(depth+1))
	}
	return t
}

func (d *msgpackDecoder) table(n, depth int) lua.LValue {
	if 2*n > len(d.s)-d.i {
		d.L.RaiseError("Missing bytes in input.")
	}
	t := d.L.NewTable()
	for range n {
		k := d.value(depth + 1)
		v := d.value(depth + 1)
		if k != lua.LNil {
			t.RawSet(k, v)
		}
	}
	return t
}
