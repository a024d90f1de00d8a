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
