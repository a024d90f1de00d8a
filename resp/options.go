package resp

import (
	"bytes"
	"strings"
)

// errSyntax is Redis's reply to an option it does not take here.
const errSyntax = "syntax error"

// opt is one option a command takes after its fixed arguments: the word
// that names it, whether the next argument is its value, and what taking
// it does. set returns the error text to answer, "" when the option is
// taken (errSyntax when it may not be given with an option seen before).
type opt struct {
	name  string
	value bool // the next argument is the option's value
	once  bool // a second use is a syntax error, as for tenure's own options
	set   func(v []byte) string
}

// parseOptions takes args as options, in order, and returns the first
// error text: errSyntax for a word that names no option, a missing value
// or a second use of a once-only option, else what a setter returned.
// A word is matched in any case, as a whole.
func parseOptions(args [][]byte, opts ...opt) string {
	return takeOptions(args, false, opts)
}

// parseRedisOptions is parseOptions for the options of a Redis command,
// whose word ends at a NUL as Redis's strcasecmp reads it ("ex\x00tra" is
// EX).
func parseRedisOptions(args [][]byte, opts ...opt) string {
	return takeOptions(args, true, opts)
}

func takeOptions(args [][]byte, cWord bool, opts []opt) string {
	var seen uint64 // bit i: opts[i] was given
	for i := 0; i < len(args); i++ {
		word := args[i]
		if cWord {
			if n := bytes.IndexByte(word, 0); n >= 0 {
				word = word[:n]
			}
		}
		k := -1
		for j := range opts {
			if strings.EqualFold(argView(word), opts[j].name) {
				k = j
				break
			}
		}
		if k < 0 || (opts[k].once && seen&(1<<k) != 0) {
			return errSyntax
		}
		seen |= 1 << k
		var v []byte
		if opts[k].value {
			if i+1 >= len(args) {
				return errSyntax
			}
			i++
			v = args[i]
		}
		if msg := opts[k].set(v); msg != "" {
			return msg
		}
	}
	return ""
}
