package resp

import (
	"bytes"
	"errors"
	"io"

	"github.com/tenure-db/tenure/internal/redistext"
)

// Limits bound what one request may make the server hold in memory (SPEC §7).
// The zero value of a field means the default named beside it.
type Limits struct {
	MaxBulkLen   int64 // a bulk string; Redis's proto-max-bulk-len, 512 MB
	MaxMultibulk int   // elements of one request; 1,048,576, tenure's cap (Redis allows 2^31 - 1)
	MaxInline    int   // an inline request or a header line; Redis's 64 KB
}

const (
	defaultMaxBulkLen   = 512 << 20
	defaultMaxMultibulk = 1024 * 1024
	defaultMaxInline    = 64 << 10

	// Before authentication Redis reads at most 10 arguments of 16 KB each.
	unauthMaxMultibulk = 10
	unauthMaxBulkLen   = 16 << 10

	// minRead is the least room a read is given; reads are one syscall each.
	minRead = 16 << 10
	// maxPrealloc caps what a bulk header alone can make us allocate: a
	// client that announces 1 GB gets room as the bytes arrive, not before.
	maxPrealloc = 1 << 20
)

// WithDefaults is l with SPEC §7's limit in each field left zero.
func (l Limits) WithDefaults() Limits {
	if l.MaxBulkLen <= 0 {
		l.MaxBulkLen = defaultMaxBulkLen
	}
	if l.MaxMultibulk <= 0 {
		l.MaxMultibulk = defaultMaxMultibulk
	}
	if l.MaxInline <= 0 {
		l.MaxInline = defaultMaxInline
	}
	return l
}

// protocolError is a request the server cannot parse; the connection is
// answered "-ERR Protocol error: …" and closed, as Redis does.
type protocolError struct{ msg string }

func (e *protocolError) Error() string { return "Protocol error: " + e.msg }

func protoErr(msg string) error { return &protocolError{msg} }

// errIncomplete says the buffer does not yet hold a whole request.
var errIncomplete = errors.New("incomplete request")

// reader parses RESP requests (multibulk and inline) from a connection with
// the limits of SPEC §7. It is written here rather than taken from redcon
// because redcon's reader has no caps: it grows its buffer to whatever a
// header announces and accepts any element count.
//
// Arguments returned by next point into the reader's buffer and stay valid
// until the next call to fill; handlers copy what they keep.
type reader struct {
	src    io.Reader
	buf    []byte // unread data is buf[r:w]
	r, w   int
	limits Limits
	unauth bool // apply the pre-authentication limits
	args   [][]byte
	need   int // bytes buf[r:] must hold before parsing can progress
	err    error
}

func newReader(src io.Reader, l Limits) *reader {
	return &reader{src: src, buf: make([]byte, minRead), limits: l.WithDefaults()}
}

// buffered reports how many unread bytes the reader holds.
func (rd *reader) buffered() int { return rd.w - rd.r }

// fill reads once from the source, making room first. It is the only
// method that moves buffered data, so it invalidates earlier arguments.
func (rd *reader) fill() error {
	if rd.err != nil {
		return rd.err
	}
	if rd.r > 0 {
		n := copy(rd.buf, rd.buf[rd.r:rd.w])
		rd.r, rd.w = 0, n
	}
	rd.grow(rd.need)
	n, err := rd.src.Read(rd.buf[rd.w:])
	rd.w += n
	if err != nil && n == 0 {
		rd.err = err
		return err
	}
	return nil
}

// grow makes room for at least minRead more bytes, and towards need bytes
// in all, doubling at most, so memory follows the bytes that arrive.
func (rd *reader) grow(need int) {
	have := rd.w - rd.r
	want := max(have+minRead, min(need, have*2, have+maxPrealloc))
	if rd.r+want <= len(rd.buf) {
		return
	}
	nb := make([]byte, max(want, minRead))
	rd.w = copy(nb, rd.buf[rd.r:rd.w])
	rd.r = 0
	rd.buf = nb
}

// shrink drops a large buffer once it is empty, so one big request does not
// pin its memory for the life of the connection.
func (rd *reader) shrink() {
	if rd.r == rd.w && len(rd.buf) > 4*minRead {
		rd.buf = make([]byte, minRead)
		rd.r, rd.w = 0, 0
	}
}

// next returns the next request's arguments, errIncomplete when more bytes
// are needed, or a *protocolError. An empty request (a blank line, "*0",
// "*-1") returns zero arguments.
func (rd *reader) next() ([][]byte, error) {
	b := rd.buf[rd.r:rd.w]
	if len(b) == 0 {
		rd.need = 0
		return nil, errIncomplete
	}
	var (
		args [][]byte
		n    int
		err  error
	)
	if b[0] == '*' {
		args, n, err = rd.parseMultibulk(b)
	} else {
		args, n, err = rd.parseInline(b)
	}
	if err != nil {
		return nil, err
	}
	rd.r += n
	rd.need = 0
	return args, nil
}

func (rd *reader) maxMultibulk() int {
	if rd.unauth {
		return unauthMaxMultibulk
	}
	return rd.limits.MaxMultibulk
}

func (rd *reader) maxBulkLen() int64 {
	if rd.unauth {
		return unauthMaxBulkLen
	}
	return rd.limits.MaxBulkLen
}

// line returns the header line at the start of b without its CRLF, and the
// bytes it takes with the CRLF.
func (rd *reader) line(b []byte, tooLong string) ([]byte, int, error) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		if len(b) > rd.limits.MaxInline {
			return nil, 0, protoErr(tooLong)
		}
		rd.need = len(b) + 1
		return nil, 0, errIncomplete
	}
	if i > rd.limits.MaxInline {
		return nil, 0, protoErr(tooLong)
	}
	end := i
	if end > 0 && b[end-1] == '\r' {
		end--
	}
	return b[:end], i + 1, nil
}

func (rd *reader) parseMultibulk(b []byte) ([][]byte, int, error) {
	hdr, pos, err := rd.line(b, "too big mbulk count string")
	if err != nil {
		return nil, 0, err
	}
	count, ok := parseInt(hdr[1:])
	if !ok || count > int64(rd.limits.MaxMultibulk) {
		return nil, 0, protoErr("invalid multibulk length")
	}
	if count > int64(rd.maxMultibulk()) {
		return nil, 0, protoErr("unauthenticated multibulk length")
	}
	if count <= 0 {
		return nil, pos, nil
	}
	args := rd.args[:0]
	for range count {
		if pos >= len(b) {
			rd.need = pos + 1
			return nil, 0, errIncomplete
		}
		if b[pos] != '$' {
			return nil, 0, protoErr("expected '$', got '" + string(b[pos]) + "'")
		}
		hdr, n, err := rd.line(b[pos:], "too big bulk count string")
		if err != nil {
			if err == errIncomplete {
				rd.need += pos
			}
			return nil, 0, err
		}
		size, ok := parseInt(hdr[1:])
		if !ok || size < 0 || size > rd.limits.MaxBulkLen {
			return nil, 0, protoErr("invalid bulk length")
		}
		if size > rd.maxBulkLen() {
			return nil, 0, protoErr("unauthenticated bulk length")
		}
		pos += n
		end := pos + int(size)
		if end+2 > len(b) {
			rd.need = end + 2
			return nil, 0, errIncomplete
		}
		if b[end] != '\r' || b[end+1] != '\n' {
			return nil, 0, protoErr("expected CRLF after bulk string")
		}
		args = append(args, b[pos:end:end])
		pos = end + 2
	}
	rd.args = args
	return args, pos, nil
}

func (rd *reader) parseInline(b []byte) ([][]byte, int, error) {
	ln, n, err := rd.line(b, "too big inline request")
	if err != nil {
		return nil, 0, err
	}
	args, err := splitArgs(ln, rd.args[:0])
	if err != nil {
		return nil, 0, err
	}
	if len(args) > rd.maxMultibulk() {
		return nil, 0, protoErr("unauthenticated multibulk length")
	}
	for _, a := range args {
		if int64(len(a)) > rd.maxBulkLen() {
			return nil, 0, protoErr("unauthenticated bulk length")
		}
	}
	rd.args = args
	return args, n, nil
}

// splitArgs splits an inline request the way Redis's sdssplitargs does:
// spaces separate, "double quotes" take \n \r \t \b \a and \xHH escapes
// (any other escaped byte stands for itself), 'single quotes' take \', and
// a closing quote must be followed by a space or the end.
func splitArgs(line []byte, args [][]byte) ([][]byte, error) {
	i := 0
	for {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i == len(line) {
			return args, nil
		}
		start := i
		for i < len(line) && !isSpace(line[i]) && line[i] != '"' && line[i] != '\'' {
			i++
		}
		if i == len(line) || isSpace(line[i]) {
			args = append(args, line[start:i:i]) // no quotes: no copy
			continue
		}
		cur := append([]byte(nil), line[start:i]...)
		var err error
		cur, i, err = quotedArg(line, i, cur)
		if err != nil {
			return nil, err
		}
		args = append(args, cur)
	}
}

// quotedArg reads the rest of an argument from line[i:], where a quote
// opens, and returns it appended to cur with the position after it.
func quotedArg(line []byte, i int, cur []byte) ([]byte, int, error) {
	unbalanced := protoErr("unbalanced quotes in request")
	var quote byte
	for ; ; i++ {
		if i >= len(line) {
			if quote != 0 {
				return nil, 0, unbalanced
			}
			return cur, i, nil
		}
		c := line[i]
		switch {
		case quote == 0:
			if isSpace(c) {
				return cur, i, nil
			}
			if c == '"' || c == '\'' {
				quote = c
			} else {
				cur = append(cur, c)
			}
		case c == quote:
			if i+1 < len(line) && !isSpace(line[i+1]) {
				return nil, 0, unbalanced
			}
			return cur, i + 1, nil
		case quote == '"' && c == '\\' && i+3 < len(line) && line[i+1] == 'x' && isHex(line[i+2]) && isHex(line[i+3]):
			cur = append(cur, unhex(line[i+2])<<4|unhex(line[i+3]))
			i += 3
		case quote == '"' && c == '\\' && i+1 < len(line):
			i++
			cur = append(cur, unescape(line[i]))
		case quote == '\'' && c == '\\' && i+1 < len(line) && line[i+1] == '\'':
			i++
			cur = append(cur, '\'')
		default:
			cur = append(cur, c)
		}
	}
}

func unescape(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'b':
		return '\b'
	case 'a':
		return '\a'
	}
	return c
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\v' || c == '\f'
}

func isHex(c byte) bool {
	return ('0' <= c && c <= '9') || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

// parseInt reads a decimal integer as Redis's string2ll does, for headers
// and for arguments alike: an optional '-', digits without a leading zero
// ("0" but not "00", "-0", "+1", " 1"), within int64.
func parseInt(b []byte) (int64, bool) { return redistext.ParseInt(b) }

// parseDigits reads an unsigned decimal of digits only, refusing overflow.
func parseDigits(b []byte) (uint64, bool) { return redistext.ParseDigits(b) }
