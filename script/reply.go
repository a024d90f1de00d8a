package script

import (
	"errors"
	"strconv"
	"strings"
)

// Kind is the type of a Reply, one per RESP2 or RESP3 reply type.
type Kind uint8

const (
	Null      Kind = iota // RESP3's "_"; what a script's nil becomes
	NullBulk              // RESP2's "$-1"
	NullArray             // RESP2's "*-1"
	Status                // "+text"
	Error                 // "-CODE text"; Str holds "CODE text"
	Int                   // ":n"
	Bulk                  // "$n", a binary-safe string
	Array                 // "*n"
	Map                   // "%n"; Elems holds key, value, key, value, …
	Set                   // "~n"
	Double                // ","
	Bool                  // "#t" or "#f"; Int is 1 or 0
	BigNum                // "(digits"
	Verbatim              // "=n"; Format is "txt" or "mkd"
)

// Reply is one reply of a command run by a script, or a script's result.
type Reply struct {
	Kind   Kind
	Str    string // Status, Error, Bulk, BigNum, Verbatim
	Int    int64  // Int, Bool
	Float  float64
	Format string
	Elems  []Reply // Array, Map, Set
}

// ErrReply makes an error reply from "CODE text".
func ErrReply(s string) Reply {
	return Reply{Kind: Error, Str: strings.TrimPrefix(s, "-")}
}

// ErrIncomplete is ParseRESP's answer to a reply cut short.
var ErrIncomplete = errors.New("script: incomplete reply")

// ParseRESP reads one RESP2 or RESP3 reply from the front of b, as the
// server spells them, and says how many bytes it took. RESP3 attributes
// are skipped, as Redis hides them from scripts.
func ParseRESP(b []byte) (Reply, int, error) {
	return parseReply(b, 0)
}

func parseReply(b []byte, depth int) (Reply, int, error) {
	if depth > 1000 {
		return Reply{}, 0, errors.New("script: reply nested too deep")
	}
	line, n := cutLine(b)
	if n < 0 || len(line) == 0 {
		return Reply{}, 0, ErrIncomplete
	}
	typ, text := line[0], string(line[1:])
	switch typ {
	case '+':
		return Reply{Kind: Status, Str: text}, n, nil
	case '-':
		return Reply{Kind: Error, Str: text}, n, nil
	case ':':
		v, err := strconv.ParseInt(text, 10, 64)
		return Reply{Kind: Int, Int: v}, n, err
	case '_':
		return Reply{Kind: Null}, n, nil
	case '#':
		if text == "t" {
			return Reply{Kind: Bool, Int: 1}, n, nil
		}
		return Reply{Kind: Bool}, n, nil
	case ',':
		v, err := parseDouble(text)
		return Reply{Kind: Double, Float: v}, n, err
	case '(':
		return Reply{Kind: BigNum, Str: text}, n, nil
	case '$', '=', '!':
		size, err := strconv.Atoi(text)
		if err != nil {
			return Reply{}, 0, err
		}
		if size < 0 {
			return Reply{Kind: NullBulk}, n, nil
		}
		if len(b) < n+size+2 {
			return Reply{}, 0, ErrIncomplete
		}
		s := string(b[n : n+size])
		n += size + 2
		switch typ {
		case '=':
			if len(s) < 4 {
				return Reply{}, 0, errors.New("script: bad verbatim string")
			}
			return Reply{Kind: Verbatim, Format: s[:3], Str: s[4:]}, n, nil
		case '!':
			return Reply{Kind: Error, Str: s}, n, nil
		}
		return Reply{Kind: Bulk, Str: s}, n, nil
	case '*', '%', '~', '|', '>':
		count, err := strconv.Atoi(text)
		if err != nil {
			return Reply{}, 0, err
		}
		if count < 0 {
			return Reply{Kind: NullArray}, n, nil
		}
		kind := Array
		elems := count
		switch typ {
		case '%':
			kind, elems = Map, 2*count
		case '~':
			kind = Set
		case '|':
			elems = 2 * count
		}
		r := Reply{Kind: kind, Elems: make([]Reply, 0, min(elems, 1024))}
		for range elems {
			e, m, err := parseReply(b[n:], depth+1)
			if err != nil {
				return Reply{}, 0, err
			}
			n += m
			r.Elems = append(r.Elems, e)
		}
		if typ == '|' { // an attribute: the reply follows it
			e, m, err := parseReply(b[n:], depth+1)
			return e, n + m, err
		}
		return r, n, nil
	}
	return Reply{}, 0, errors.New("script: unknown reply type " + strconv.QuoteRune(rune(typ)))
}

func parseDouble(s string) (float64, error) {
	switch s {
	case "inf":
		s = "+Inf"
	case "-inf":
		s = "-Inf"
	}
	return strconv.ParseFloat(s, 64)
}

// cutLine returns the line at the front of b without its CRLF, and the
// length taken with it; -1 when there is no CRLF.
func cutLine(b []byte) ([]byte, int) {
	for i := 0; i+1 < len(b); i++ {
		if b[i] == '\r' && b[i+1] == '\n' {
			return b[:i], i + 2
		}
	}
	return nil, -1
}
