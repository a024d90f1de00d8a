package script

import (
	"encoding/binary"
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// loadLibraries loads the libraries Redis bundles beside Lua's own: cjson,
// bit, struct and cmsgpack. None has a maintained Go implementation that
// follows the C libraries Redis ships (LuaBitOp, Roberto Ierusalimschy's
// struct, lua-cmsgpack, lua-cjson) closely enough, so they are written
// here from those libraries' documented behaviour.
func (e *Engine) loadLibraries() {
	e.loadCJSON()
	e.loadBit()
	e.loadStruct()
	e.loadMsgpack()
}

// --- bit (LuaBitOp 1.0) ---

// tobit is LuaBitOp's conversion: the number rounded, its low 32 bits as
// a signed integer.
func tobit(f float64) int32 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	f = math.RoundToEven(math.Mod(f, 4294967296))
	return int32(uint32(int64(f)))
}

func bitArg(L *lua.LState, i int) int32 { return tobit(float64(L.CheckNumber(i))) }

func (e *Engine) loadBit() {
	L := e.L
	t := L.NewTable()
	push := func(L *lua.LState, v int32) int { L.Push(lua.LNumber(v)); return 1 }
	fold := func(op func(a, b int32) int32) lua.LGFunction {
		return func(L *lua.LState) int {
			v := bitArg(L, 1)
			for i := 2; i <= L.GetTop(); i++ {
				v = op(v, bitArg(L, i))
			}
			return push(L, v)
		}
	}
	shift := func(op func(v int32, n uint) int32) lua.LGFunction {
		return func(L *lua.LState) int { return push(L, op(bitArg(L, 1), uint(bitArg(L, 2))&31)) }
	}
	fns := map[string]lua.LGFunction{
		"tobit": func(L *lua.LState) int { return push(L, bitArg(L, 1)) },
		"bnot":  func(L *lua.LState) int { return push(L, ^bitArg(L, 1)) },
		"band":  fold(func(a, b int32) int32 { return a & b }),
		"bor":   fold(func(a, b int32) int32 { return a | b }),
		"bxor":  fold(func(a, b int32) int32 { return a ^ b }),
		"lshift": shift(func(v int32, n uint) int32 {
			return int32(uint32(v) << n)
		}),
		"rshift":  shift(func(v int32, n uint) int32 { return int32(uint32(v) >> n) }),
		"arshift": shift(func(v int32, n uint) int32 { return v >> n }),
		"rol":     shift(func(v int32, n uint) int32 { u := uint32(v); return int32(u<<n | u>>(32-n)) }),
		"ror":     shift(func(v int32, n uint) int32 { u := uint32(v); return int32(u>>n | u<<(32-n)) }),
		"bswap": func(L *lua.LState) int {
			u := uint32(bitArg(L, 1))
			return push(L, int32(u>>24|(u>>8)&0xff00|(u<<8)&0xff0000|u<<24))
		},
		"tohex": func(L *lua.LState) int {
			v := uint32(bitArg(L, 1))
			n := 8
			if L.GetTop() >= 2 {
				n = int(bitArg(L, 2))
			}
			digits := "0123456789abcdef"
			if n < 0 {
				n, digits = -n, "0123456789ABCDEF"
			}
			n = min(n, 8)
			buf := make([]byte, n)
			for i := n - 1; i >= 0; i-- {
				buf[i] = digits[v&15]
				v >>= 4
			}
			L.Push(lua.LString(buf))
			return 1
		},
	}
	for name, fn := range fns {
		t.RawSetString(name, L.NewFunction(fn))
	}
	e.globals.RawSetString("bit", t)
}

// --- struct (Roberto Ierusalimschy's struct library, as Redis bundles) ---

type structFormat struct {
	s      string
	i      int
	little bool
}

// next reads one option: its letter and size (n for i, I, c).
func (f *structFormat) next(L *lua.LState) (opt byte, size int, ok bool) {
	for f.i < len(f.s) {
		opt = f.s[f.i]
		f.i++
		num := func(def int) int {
			j := f.i
			for j < len(f.s) && f.s[j] >= '0' && f.s[j] <= '9' {
				j++
			}
			if j == f.i {
				return def
			}
			n, _ := strconv.Atoi(f.s[f.i:j])
			f.i = j
			return n
		}
		switch opt {
		case ' ':
			continue
		case '>':
			f.little = false
			continue
		case '<':
			f.little = true
			continue
		case '=':
			f.little = true
			continue
		case '!':
			num(8)
			continue
		case 'b', 'B', 'x':
			return opt, 1, true
		case 'h', 'H':
			return opt, 2, true
		case 'l', 'L', 'T', 'd':
			return opt, 8, true
		case 'f':
			return opt, 4, true
		case 'i', 'I':
			n := num(4)
			if n < 1 || n > 8 {
				L.RaiseError("integral size %d is larger than limit of 8", n)
			}
			return opt, n, true
		case 'c':
			return opt, num(1), true
		case 's':
			return opt, 0, true
		default:
			L.RaiseError("invalid format option '%c'", opt)
		}
	}
	return 0, 0, false
}

func (e *Engine) loadStruct() {
	L := e.L
	t := L.NewTable()
	t.RawSetString("pack", L.NewFunction(structPack))
	t.RawSetString("unpack", L.NewFunction(structUnpack))
	t.RawSetString("size", L.NewFunction(structSize))
	e.globals.RawSetString("struct", t)
}

func putInt(b []byte, v uint64, size int, little bool) []byte {
	for i := 0; i < size; i++ {
		shift := uint(i * 8)
		if !little {
			shift = uint((size - 1 - i) * 8)
		}
		b = append(b, byte(v>>shift))
	}
	return b
}

func structPack(L *lua.LState) int {
	f := &structFormat{s: L.CheckString(1), little: true}
	var out []byte
	arg := 2
	for {
		opt, size, ok := f.next(L)
		if !ok {
			break
		}
		switch opt {
		case 'x':
			out = append(out, 0)
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			n := float64(L.CheckNumber(arg))
			arg++
			var v uint64
			if n < 0 {
				v = uint64(int64(n))
			} else {
				v = uint64(n)
			}
			out = putInt(out, v, size, f.little)
		case 'f':
			out = putInt(out, uint64(math.Float32bits(float32(L.CheckNumber(arg)))), 4, f.little)
			arg++
		case 'd':
			out = putInt(out, math.Float64bits(float64(L.CheckNumber(arg))), 8, f.little)
			arg++
		case 'c', 's':
			s := L.CheckString(arg)
			arg++
			if opt == 's' {
				out = append(append(out, s...), 0)
				break
			}
			if size == 0 {
				size = len(s)
			}
			if len(s) < size {
				L.ArgError(arg-1, "string too short")
			}
			out = append(out, s[:size]...)
		}
	}
	L.Push(lua.LString(out))
	return 1
}

func structUnpack(L *lua.LState) int {
	f := &structFormat{s: L.CheckString(1), little: true}
	data := L.CheckString(2)
	pos := L.OptInt(3, 1) - 1
	if pos < 0 || pos > len(data) {
		L.ArgError(3, "offset must be 1 or greater")
	}
	n := 0
	var last float64
	need := func(size int) {
		if pos+size > len(data) || size < 0 {
			L.ArgError(2, "data string too short")
		}
	}
	for {
		opt, size, ok := f.next(L)
		if !ok {
			break
		}
		switch opt {
		case 'x':
			need(1)
			pos++
			continue
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			need(size)
			var v uint64
			for i := 0; i < size; i++ {
				shift := uint(i * 8)
				if !f.little {
					shift = uint((size - 1 - i) * 8)
				}
				v |= uint64(data[pos+i]) << shift
			}
			pos += size
			if opt == 'b' || opt == 'h' || opt == 'l' || opt == 'i' {
				sh := uint(64 - size*8)
				last = float64(int64(v<<sh) >> sh)
			} else {
				last = float64(v)
			}
			L.Push(lua.LNumber(last))
		case 'f':
			need(4)
			var v uint64
			b := []byte(data[pos : pos+4])
			if f.little {
				v = uint64(binary.LittleEndian.Uint32(b))
			} else {
				v = uint64(binary.BigEndian.Uint32(b))
			}
			pos += 4
			L.Push(lua.LNumber(math.Float32frombits(uint32(v))))
		case 'd':
			need(8)
			b := []byte(data[pos : pos+8])
			var v uint64
			if f.little {
				v = binary.LittleEndian.Uint64(b)
			} else {
				v = binary.BigEndian.Uint64(b)
			}
			pos += 8
			L.Push(lua.LNumber(math.Float64frombits(v)))
		case 'c':
			if size == 0 {
				if n == 0 {
					L.RaiseError("format 'c0' needs a previous size")
				}
				size = int(last)
				L.Pop(1)
				n--
			}
			need(size)
			L.Push(lua.LString(data[pos : pos+size]))
			pos += size
		case 's':
			end := strings.IndexByte(data[pos:], 0)
			if end < 0 {
				L.RaiseError("unfinished string in data")
			}
			L.Push(lua.LString(data[pos : pos+end]))
			pos += end + 1
		}
		n++
	}
	L.Push(lua.LNumber(pos + 1))
	return n + 1
}

func structSize(L *lua.LState) int {
	f := &structFormat{s: L.CheckString(1), little: true}
	total := 0
	for {
		opt, size, ok := f.next(L)
		if !ok {
			break
		}
		if opt == 's' || (opt == 'c' && size == 0) {
			L.ArgError(1, "options 'c0' - 's' have undefined sizes")
		}
		total += size
	}
	L.Push(lua.LNumber(total))
	return 1
}

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
