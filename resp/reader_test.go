package resp

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// chunkReader hands out its data a few bytes at a time, like a slow network.
type chunkReader struct {
	data  []byte
	chunk int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), c.chunk, len(c.data))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// readAll parses every request in src, copying arguments out.
func readAll(src io.Reader, l Limits) ([][]string, error) {
	rd := newReader(src, l)
	var out [][]string
	for {
		args, err := rd.next()
		switch {
		case err == nil:
			var req []string
			for _, a := range args {
				req = append(req, string(a))
			}
			if len(req) > 0 {
				out = append(out, req)
			}
		case errors.Is(err, errIncomplete):
			if err := rd.fill(); err != nil {
				if err == io.EOF {
					return out, nil
				}
				return out, err
			}
		default:
			return out, err
		}
	}
}

func TestReaderParses(t *testing.T) {
	cases := []struct {
		in   string
		want [][]string
	}{
		{"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", [][]string{{"GET", "k"}}},
		{"*1\r\n$0\r\n\r\n", [][]string{{""}}},
		{"PING\r\nECHO hi\n", [][]string{{"PING"}, {"ECHO", "hi"}}},
		{"set k \"a b\\r\\n\" 'c d'\r\n", [][]string{{"set", "k", "a b\r\n", "c d"}}},
		{"echo \"\\x41\\x4a\" ''\r\n", [][]string{{"echo", "AJ", ""}}},
		{"a\"b c\"d\r\n", nil}, // unbalanced: the quote is followed by a letter
		{"\r\n\r\n*0\r\n*-1\r\nPING\r\n", [][]string{{"PING"}}},
	}
	for _, tc := range cases {
		for _, chunk := range []int{1, 3, 1 << 20} {
			got, err := readAll(&chunkReader{data: []byte(tc.in), chunk: chunk}, Limits{})
			if tc.want == nil {
				if err == nil {
					t.Errorf("%q: want an error, got %q", tc.in, got)
				}
				continue
			}
			if err != nil || fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("%q (chunks of %d): got %q, %v; want %q", tc.in, chunk, got, err, tc.want)
			}
		}
	}
}

// A bulk header announcing more than has arrived grows the buffer as the
// bytes come, never to the announced size at once (SPEC §7).
func TestReaderDoesNotPreallocateAnnouncedBulk(t *testing.T) {
	src := &chunkReader{data: []byte("*2\r\n$3\r\nSET\r\n$1000000000\r\n" + strings.Repeat("x", 3<<20)), chunk: 64 << 10}
	rd := newReader(src, Limits{MaxBulkLen: 2 << 30})
	for {
		_, err := rd.next()
		if !errors.Is(err, errIncomplete) {
			t.Fatalf("next: %v", err)
		}
		if err := rd.fill(); err != nil {
			break
		}
		if len(rd.buf) > 2*rd.buffered()+2*maxPrealloc {
			t.Fatalf("buffer %d bytes for %d received", len(rd.buf), rd.buffered())
		}
	}
	if rd.buffered() < 3<<20 {
		t.Fatalf("read %d bytes, want all 3 MB", rd.buffered())
	}
}

func TestReaderUnauthenticatedLimits(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"*11\r\n", "Protocol error: unauthenticated multibulk length"},
		{"*2\r\n$4\r\nAUTH\r\n$16385\r\n", "Protocol error: unauthenticated bulk length"},
		{"a b c d e f g h i j k\r\n", "Protocol error: unauthenticated multibulk length"},
	} {
		rd := newReader(strings.NewReader(tc.in), Limits{})
		rd.unauth = true
		rd.fill()
		_, err := rd.next()
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q: got %v, want %q", tc.in, err, tc.want)
		}
	}
}

// FuzzReader feeds arbitrary bytes to the reader in arbitrary chunks: it
// must never panic, never return more arguments than the limits allow, nor
// more argument bytes than the request had, nor grow past its limits.
func FuzzReader(f *testing.F) {
	for _, s := range []string{
		"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n",
		"PING\r\n",
		"set k \"a\\x41\" 'b'\r\n",
		"*3000000000\r\n",
		"$-10\r\n",
		"*1\r\n$2000000000\r\n",
		"*1\r\n$blabla\r\n",
		"\x00\x00\x00",
		"*-1\r\n*0\r\n\r\n",
	} {
		f.Add([]byte(s), uint8(7))
	}
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		l := Limits{MaxBulkLen: 1 << 16, MaxMultibulk: 64, MaxInline: 1 << 10}
		rd := newReader(&chunkReader{data: data, chunk: int(chunk%64) + 1}, l)
		for {
			start := rd.r
			args, err := rd.next()
			switch {
			case err == nil:
				if len(args) > l.MaxMultibulk {
					t.Fatalf("%d args over the limit", len(args))
				}
				// Every argument is bytes of the request itself.
				total := 0
				for _, a := range args {
					total += len(a)
				}
				if total > rd.r-start {
					t.Fatalf("%d argument bytes from a %d-byte request", total, rd.r-start)
				}
			case errors.Is(err, errIncomplete):
				if rd.fill() != nil {
					return
				}
				if len(rd.buf) > 4*(l.MaxInline+int(l.MaxBulkLen))+minRead {
					t.Fatalf("buffer grew to %d", len(rd.buf))
				}
			default:
				var pe *protocolError
				if !errors.As(err, &pe) {
					t.Fatalf("error %v is not a protocol error", err)
				}
				return
			}
		}
	})
}
