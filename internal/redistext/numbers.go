package redistext

import (
	"bytes"
	"math"
	"strconv"
	"strings"
)

// ParseInt reads b as Redis's string2ll does, for values and for arguments
// such as INCRBY's: an optional '-', then digits with no leading zero (so
// "0" but not "00", "-0", "+1", " 1" or "1 "), within int64.
func ParseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) >= 21 {
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	if b[0] < '1' || b[0] > '9' {
		return 0, false
	}
	v, ok := ParseDigits(b)
	if !ok {
		return 0, false
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return int64(-v), true // -(1<<63) wraps to MinInt64, as wanted
	}
	if v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}

// ParseDigits reads an unsigned decimal of digits only (leading zeros
// allowed, no sign), refusing overflow: SCAN's cursor, SET's FENCE.
func ParseDigits(b []byte) (uint64, bool) {
	var n uint64
	for _, ch := range b {
		if ch < '0' || ch > '9' {
			return 0, false
		}
		d := uint64(ch - '0')
		if n > (math.MaxUint64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// maxFloatChars is Redis's MAX_LONG_DOUBLE_CHARS: longer strings are not
// floats.
const maxFloatChars = 5 * 1024

// ParseFloat reads b as Redis's string2ld does, for INCRBYFLOAT's value and
// argument: what strtod reads, as a whole, no leading space, not NaN, not out
// of range; "inf" reads as an infinity. Go's syntax stands in for strtod's,
// with two corrections: underscores are refused, and a hexadecimal float
// may leave out its 'p' exponent ("0x10" is 16), as strtod allows.
func ParseFloat(b []byte) (float64, bool) {
	if len(b) == 0 || len(b) >= maxFloatChars || bytes.IndexByte(b, '_') >= 0 {
		return 0, false
	}
	s := string(b)
	if isHexFloat(s) && !strings.ContainsAny(s, "pP") {
		s += "p0"
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

func isHexFloat(s string) bool {
	if s != "" && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	return len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')
}

// FormatFloat writes f as INCRBYFLOAT replies: plain decimal, no exponent, no
// trailing zeros, the fewest digits that read back as f, and "0" rather than
// "-0". Redis prints its long double with %.17Lf and trims the zeros, which
// gives the same short text for the usual decimal sums (10.5 + 0.1 is "10.6"
// in both).
func FormatFloat(f float64) []byte {
	if f == 0 {
		return []byte{'0'}
	}
	return strconv.AppendFloat(nil, f, 'f', -1, 64)
}
