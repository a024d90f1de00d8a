package redistext

import (
	"strings"
	"testing"
	"time"
)

func TestMatch(t *testing.T) {
	cases := []struct {
		pattern, s string
		want       bool
	}{
		{"*", "anything", true},
		{"*", "", false}, // as stringmatchlen; callers special-case "*"
		{"", "", true},
		{"", "a", false},
		{"a*", "a", true},
		{"a*", "abc", true},
		{"*c", "abc", true},
		{"*b*", "abc", true},
		{"*d*", "abc", false},
		{"a**c", "abc", true},
		{"h?llo", "hello", true},
		{"h?llo", "hllo", false},
		{"h*llo", "hllo", true},
		{"h*llo", "heeeello", true},
		{"h[ae]llo", "hallo", true},
		{"h[ae]llo", "hillo", false},
		{"h[^e]llo", "hallo", true},
		{"h[^e]llo", "hello", false},
		{"h[a-b]llo", "hbllo", true},
		{"h[a-b]llo", "hcllo", false},
		{"h[b-a]llo", "hallo", true}, // reversed range
		{"[a-]", "-", false},         // as Redis: "a-]" is a range, the class unterminated
		{"[a-]", "_", true},          // '_' lies between ']' and 'a'
		{`h\*llo`, "h*llo", true},
		{`h\*llo`, "hello", false},
		{`h\?llo`, "h?llo", true},
		{`[\]]`, "]", true},
		{`[\^]`, "^", true},
		{`[a`, "a", true}, // unterminated class ends at the pattern's end
		{`[`, "a", false},
		{`a\`, `a\`, true}, // trailing backslash is literal
		{"a?", "a", false},
		{"?", "", false},
		{"\xff*", "\xff\x00", true}, // binary-safe
		{"*a*a*a*a*a*a*a*a*a*b", strings.Repeat("a", 60), false},
	}
	for _, tc := range cases {
		if got := Match([]byte(tc.pattern), []byte(tc.s)); got != tc.want {
			t.Errorf("Match(%q, %q) = %v; want %v", tc.pattern, tc.s, got, tc.want)
		}
	}
}

// TestMatchAbusive: patterns that would take exponential time or deep
// recursion end quickly.
func TestMatchAbusive(t *testing.T) {
	start := time.Now()
	long := []byte(strings.Repeat("a", 5000))
	if Match([]byte(strings.Repeat("*a", 2000)+"b"), long) {
		t.Error("matched")
	}
	if Match([]byte(strings.Repeat("a*", 50)+"b"), long) {
		t.Error("matched")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
}

func TestParseInt(t *testing.T) {
	good := map[string]int64{
		"0": 0, "1": 1, "-1": -1, "123": 123,
		"9223372036854775807":  9223372036854775807,
		"-9223372036854775808": -9223372036854775808,
	}
	for s, want := range good {
		if got, ok := ParseInt([]byte(s)); !ok || got != want {
			t.Errorf("ParseInt(%q) = %d, %v; want %d", s, got, ok, want)
		}
	}
	for _, s := range []string{"", "-", "-0", "00", "01", "+1", " 1", "1 ", "1a", "1.0",
		"9223372036854775808", "-9223372036854775809", "99999999999999999999", "123456789012345678901"} {
		if got, ok := ParseInt([]byte(s)); ok {
			t.Errorf("ParseInt(%q) = %d; want not an integer", s, got)
		}
	}
}

func TestParseFloat(t *testing.T) {
	for _, s := range []string{"", " 1", "1 ", "1_0", "nan", "NaN", "abc", "1e400", "-1e400", "0x", "0x1p", "0x1g", strings.Repeat("1", maxFloatChars)} {
		if got, ok := ParseFloat([]byte(s)); ok {
			t.Errorf("ParseFloat(%q) = %v; want not a float", s, got)
		}
	}
	for s, want := range map[string]float64{"1": 1, "-1.5": -1.5, "+2": 2, ".5": .5, "5.": 5, "1e3": 1000, "0x1p-2": .25, "0x10": 16, "-0X1.8": -1.5, "0x.8": .5} {
		if got, ok := ParseFloat([]byte(s)); !ok || got != want {
			t.Errorf("ParseFloat(%q) = %v, %v; want %v", s, got, ok, want)
		}
	}
}
