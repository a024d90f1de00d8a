package resp

import (
	"strconv"

	"github.com/tidwall/redcon"
)

// reply accumulates a connection's replies in RESP2 until the batch of
// requests read together is done; the connection writes it in one syscall.
// The encoders are redcon's.
type reply struct {
	b []byte
}

// Error sends "-CODE msg". Every error reply starts with an uppercase code
// word (ERR, WRONGTYPE, NOPERM, NOAUTH, LOST, FENCED, …); redcon would send
// the text as given, so the code is a separate argument here.
func (r *reply) Error(code, msg string) {
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
func (r *reply) OK() { r.b = redcon.AppendOK(r.b) }

// Status sends a simple string, "+s".
func (r *reply) Status(s string) { r.b = redcon.AppendString(r.b, s) }

// Int sends ":n".
func (r *reply) Int(n int64) { r.b = redcon.AppendInt(r.b, n) }

// Bool sends ":1" or ":0".
func (r *reply) Bool(v bool) {
	if v {
		r.b = append(r.b, ":1\r\n"...)
	} else {
		r.b = append(r.b, ":0\r\n"...)
	}
}

// Bulk sends a bulk string.
func (r *reply) Bulk(b []byte) { r.b = redcon.AppendBulk(r.b, b) }

// BulkString sends a bulk string.
func (r *reply) BulkString(s string) { r.b = redcon.AppendBulkString(r.b, s) }

// BulkInt sends an integer as a bulk string, as SCAN's cursor.
func (r *reply) BulkInt(n int64) { r.b = redcon.AppendBulkInt(r.b, n) }

// BulkUint sends an unsigned integer as a bulk string.
func (r *reply) BulkUint(n uint64) { r.b = redcon.AppendBulkUint(r.b, n) }

// BulkOrNull sends b, or the null bulk string when ok is false.
func (r *reply) BulkOrNull(b []byte, ok bool) {
	if !ok {
		r.Null()
		return
	}
	r.Bulk(b)
}

// Null sends the RESP2 null bulk string, "$-1".
func (r *reply) Null() { r.b = redcon.AppendNull(r.b) }

// NullArray sends the RESP2 null array, "*-1".
func (r *reply) NullArray() { r.b = append(r.b, "*-1\r\n"...) }

// Array starts an array of n elements; the caller sends them next.
func (r *reply) Array(n int) { r.b = redcon.AppendArray(r.b, n) }

// BulkStrings sends an array of bulk strings.
func (r *reply) BulkStrings(ss ...string) {
	r.Array(len(ss))
	for _, s := range ss {
		r.BulkString(s)
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
