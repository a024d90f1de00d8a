package resp

import (
	"math"
	"strconv"

	"github.com/tidwall/redcon"
)

// reply accumulates a connection's replies until the batch of requests
// read together is done; the connection writes it in one syscall.
//
// It knows the connection's protocol, so handlers never ask: a handler
// says what Redis 7 sends (a Map, a Set, a Null, Verbatim text) and the
// writer spells it in RESP3, or as RESP2 spells the same reply (a map as
// a flat array of its pairs, a set as an array, verbatim text as a bulk
// string, a null as the null bulk string or the null array). Replies that
// RESP2 and RESP3 spell alike (bulk and simple strings, integers, arrays,
// errors) take no branch: RESP2, the default, costs what it did before
// RESP3. The RESP2 encoders are redcon's.
type reply struct {
	b     []byte
	resp3 bool // set by HELLO 3, cleared by HELLO 2 and RESET
	// v, when not nil, takes the replies as Go values instead of bytes,
	// in RESP2's shapes (a command run in process, see inprocess.go). The
	// RESP paths pay one nil check per reply for it.
	v *values
}

// Error sends "-CODE msg". Every error reply starts with an uppercase code
// word (ERR, WRONGTYPE, NOPERM, NOAUTH, LOST, FENCED, …); redcon would send
// the text as given, so the code is a separate argument here.
func (r *reply) Error(code, msg string) {
	if r.v != nil && !r.v.error(code, msg) {
		return
	}
	r.b = append(r.b, '-')
	r.b = append(r.b, code...)
	if msg != "" {
		r.b = append(r.b, ' ')
		r.b = appendLine(r.b, msg)
	}
	r.b = append(r.b, '\r', '\n')
}

// Err sends "-ERR msg".
func (r *reply) Err(msg string) { r.Error("ERR", msg) }

// OK sends "+OK".
func (r *reply) OK() {
	if r.v != nil {
		r.v.add("OK")
		return
	}
	r.b = redcon.AppendOK(r.b)
}

// Status sends a simple string, "+s".
func (r *reply) Status(s string) {
	if r.v != nil {
		r.v.add(s)
		return
	}
	r.b = redcon.AppendString(r.b, s)
}

// Int sends ":n".
func (r *reply) Int(n int64) {
	if r.v != nil {
		r.v.add(n)
		return
	}
	r.b = redcon.AppendInt(r.b, n)
}

// Bool sends ":1" or ":0".
func (r *reply) Bool(v bool) {
	if r.v != nil {
		var n int64
		if v {
			n = 1
		}
		r.v.add(n)
		return
	}
	if v {
		r.b = append(r.b, ":1\r\n"...)
	} else {
		r.b = append(r.b, ":0\r\n"...)
	}
}

// Bulk sends a bulk string.
func (r *reply) Bulk(b []byte) {
	if r.v != nil {
		r.v.add(string(b))
		return
	}
	r.b = redcon.AppendBulk(r.b, b)
}

// BulkString sends a bulk string.
func (r *reply) BulkString(s string) {
	if r.v != nil {
		r.v.add(s)
		return
	}
	r.b = redcon.AppendBulkString(r.b, s)
}

// BulkInt sends an integer as a bulk string, as SCAN's cursor.
func (r *reply) BulkInt(n int64) {
	if r.v != nil {
		r.v.add(strconv.FormatInt(n, 10))
		return
	}
	r.b = redcon.AppendBulkInt(r.b, n)
}

// BulkUint sends an unsigned integer as a bulk string.
func (r *reply) BulkUint(n uint64) {
	if r.v != nil {
		r.v.add(strconv.FormatUint(n, 10))
		return
	}
	r.b = redcon.AppendBulkUint(r.b, n)
}

// BulkOrNull sends b, or the null bulk string when ok is false.
func (r *reply) BulkOrNull(b []byte, ok bool) {
	if !ok {
		r.Null()
		return
	}
	r.Bulk(b)
}

// Null sends the null that RESP2 spells as a null bulk string, "$-1" (GET
// of a missing key); RESP3 has one null, "_".
func (r *reply) Null() {
	if r.v != nil {
		r.v.null()
		return
	}
	if r.resp3 {
		r.b = append(r.b, "_\r\n"...)
		return
	}
	r.b = redcon.AppendNull(r.b)
}

// NullArray sends the null that RESP2 spells as a null array, "*-1"
// (LOCK.HOLD not granted, LOCK.INFO of a free key); in RESP3 it is "_".
func (r *reply) NullArray() {
	if r.v != nil {
		r.v.null()
		return
	}
	if r.resp3 {
		r.b = append(r.b, "_\r\n"...)
		return
	}
	r.b = append(r.b, "*-1\r\n"...)
}

// Array starts an array of n elements; the caller sends them next.
func (r *reply) Array(n int) {
	if r.v != nil {
		r.v.array(n)
		return
	}
	r.b = redcon.AppendArray(r.b, n)
}

// Map starts a map of n pairs; the caller sends each key and its value
// next. RESP2 has no maps: there it is an array of 2n elements.
func (r *reply) Map(n int) {
	if r.v != nil {
		r.v.array(2 * n)
		return
	}
	if r.resp3 {
		r.b = appendHeader(r.b, '%', n)
		return
	}
	r.Array(2 * n)
}

// Set starts a set of n elements, as Redis 7 sends COMMAND INFO's flags;
// in RESP2 an array.
func (r *reply) Set(n int) {
	if r.v != nil {
		r.v.array(n)
		return
	}
	if r.resp3 {
		r.b = appendHeader(r.b, '~', n)
		return
	}
	r.Array(n)
}

// Verbatim sends text meant for people (INFO, CLIENT LIST): in RESP3 a
// verbatim string of format txt, in RESP2 a bulk string.
func (r *reply) Verbatim(text string) {
	if r.v != nil {
		r.v.add(text)
		return
	}
	if r.resp3 {
		r.b = appendHeader(r.b, '=', len(text)+4)
		r.b = append(r.b, "txt:"...)
		r.b = append(r.b, text...)
		r.b = append(r.b, '\r', '\n')
		return
	}
	r.BulkString(text)
}

// Proto is the protocol the replies are spelled in, 2 or 3.
func (r *reply) Proto() int {
	if r.resp3 {
		return 3
	}
	return 2
}

// appendHeader appends an aggregate's or a string's header: its type byte
// and its length.
func appendHeader(b []byte, typ byte, n int) []byte {
	b = append(b, typ)
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\r', '\n')
}

// BulkStrings sends an array of bulk strings.
func (r *reply) BulkStrings(ss ...string) {
	r.Array(len(ss))
	for _, s := range ss {
		r.BulkString(s)
	}
}

// truncate drops the replies after mark (a Len): those of a handler that
// panicked, or of an EXEC whose commit failed.
func (r *reply) truncate(mark int) {
	r.b = r.b[:mark]
	if r.v != nil {
		r.v.reset()
	}
}

// Len is the number of bytes waiting to be written.
func (r *reply) Len() int { return len(r.b) }

// appendLine appends s with CR and LF replaced by spaces: an error or
// status line must stay one line.
func appendLine(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\r' || c == '\n' {
			c = ' '
		}
		b = append(b, c)
	}
	return b
}

// errNotInteger is Redis's reply to a number it cannot read.
const errNotInteger = "value is not an integer or out of range"

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// Double sends a score as Redis's addReplyDouble does: in RESP3 a double
// (",1.5"), in RESP2 a bulk string; "%.17g" either way, inf as "inf".
func (r *reply) Double(f float64) {
	var buf [32]byte
	var text []byte
	switch {
	case math.IsInf(f, 1):
		text = append(buf[:0], "inf"...)
	case math.IsInf(f, -1):
		text = append(buf[:0], "-inf"...)
	default:
		text = strconv.AppendFloat(buf[:0], f, 'g', 17, 64)
	}
	if r.v != nil {
		r.v.add(string(text))
		return
	}
	if r.resp3 {
		r.b = append(r.b, ',')
		r.b = append(r.b, text...)
		r.b = append(r.b, '\r', '\n')
		return
	}
	r.b = redcon.AppendBulk(r.b, text)
}
