package redistext

// Match reports whether s matches the glob pattern as Redis's stringmatchlen
// (case-sensitive) decides, for KEYS and SCAN MATCH. In the pattern, '*' is
// any run of bytes, the empty one included; '?' is one byte; "[abc]" is one
// of the bytes listed, "[^abc]" one not listed, "[a-z]" one in the range
// (reversed ranges work too), a '\' inside brackets escapes the next byte,
// and a missing ']' closes the class at the end of the pattern; "\x" is the
// byte x itself.
//
// As in Redis, callers take a pattern of just "*" to mean "everything"; Match
// itself, like stringmatchlen, does not match "*" against an empty string.
func Match(pattern, s []byte) bool {
	skipLonger := false
	return matchFrom(pattern, s, &skipLonger, 0)
}

// matchNestingLimit bounds the recursion of '*', as Redis does against
// abusive patterns.
const matchNestingLimit = 1000

func matchFrom(pat, str []byte, skipLonger *bool, nesting int) bool {
	if nesting > matchNestingLimit {
		return false
	}
	p, s := 0, 0
	for p < len(pat) && s < len(str) {
		switch pat[p] {
		case '*':
			for p+1 < len(pat) && pat[p+1] == '*' {
				p++
			}
			if p+1 == len(pat) {
				return true
			}
			for s < len(str) {
				if matchFrom(pat[p+1:], str[s:], skipLonger, nesting+1) {
					return true
				}
				if *skipLonger {
					return false
				}
				s++
			}
			// The rest of the pattern matches nowhere in the rest of the
			// string, so no earlier '*' taking more can help either.
			*skipLonger = true
			return false
		case '?':
			s++
		case '[':
			p++
			not := p < len(pat) && pat[p] == '^'
			if not {
				p++
			}
			matched := false
			for {
				if p < len(pat) && pat[p] == '\\' && len(pat)-p >= 2 {
					p++
					if pat[p] == str[s] {
						matched = true
					}
				} else if p < len(pat) && pat[p] == ']' {
					break
				} else if p >= len(pat) {
					p-- // unterminated class: the outer p++ lands on the end
					break
				} else if len(pat)-p >= 3 && pat[p+1] == '-' {
					lo, hi := pat[p], pat[p+2]
					if lo > hi {
						lo, hi = hi, lo
					}
					p += 2
					if str[s] >= lo && str[s] <= hi {
						matched = true
					}
				} else if pat[p] == str[s] {
					matched = true
				}
				p++
			}
			if not {
				matched = !matched
			}
			if !matched {
				return false
			}
			s++
		case '\\':
			if len(pat)-p >= 2 {
				p++
			}
			fallthrough
		default:
			if pat[p] != str[s] {
				return false
			}
			s++
		}
		p++
		if s == len(str) {
			for p < len(pat) && pat[p] == '*' {
				p++
			}
			break
		}
	}
	return p == len(pat) && s == len(str)
}
