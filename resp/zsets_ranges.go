package resp

import (
	"github.com/tenure-db/tenure/internal/redistext"
	"github.com/tenure-db/tenure/kv"
)

// A sorted set's ranges, as Redis's t_zset.c reads them: scores ("("
// for an exclusive end, inf), lex ends ("-", "+", "[m", "(m"), ranks,
// and ZRANGE's options (BYSCORE, BYLEX, REV, LIMIT, WITHSCORES).

// Redis's answers to a range end it cannot read.
const (
	errMinMaxFloat = "min or max is not a float"
	errMinMaxLex   = "min or max not valid string range item"
)

// parseScore reads a score as Redis's getDoubleFromObject: a float,
// "inf" and "-inf" included, NaN refused.
func parseScore(b []byte) (float64, bool) { return redistext.ParseFloat(b) }

// parseScoreBound reads one end of a score range: a float, or "(" and a
// float for an exclusive end (Redis's zslParseRange).
func parseScoreBound(b []byte) (f float64, ex, ok bool) {
	if len(b) > 0 && b[0] == '(' {
		ex, b = true, b[1:]
	}
	f, ok = redistext.ParseFloat(b)
	return f, ex, ok
}

// parseScoreRange reads min and max, or Redis's error text.
func parseScoreRange(min, max []byte) (kv.ScoreRange, string) {
	var r kv.ScoreRange
	var ok1, ok2 bool
	r.Min, r.MinEx, ok1 = parseScoreBound(min)
	r.Max, r.MaxEx, ok2 = parseScoreBound(max)
	if !ok1 || !ok2 {
		return r, errMinMaxFloat
	}
	return r, ""
}

// parseLexBound reads one end of a lex range: "-", "+", "[member" or
// "(member" (Redis's zslParseLexRangeItem).
func parseLexBound(b []byte) (kv.LexBound, bool) {
	if len(b) == 0 {
		return kv.LexBound{}, false
	}
	switch b[0] {
	case '+':
		return kv.LexBound{Inf: 1}, len(b) == 1
	case '-':
		return kv.LexBound{Inf: -1}, len(b) == 1
	case '(':
		return kv.LexBound{Value: b[1:], Ex: true}, true
	case '[':
		return kv.LexBound{Value: b[1:]}, true
	}
	return kv.LexBound{}, false
}

func parseLexRange(min, max []byte) (kv.LexRange, string) {
	lo, ok1 := parseLexBound(min)
	hi, ok2 := parseLexBound(max)
	if !ok1 || !ok2 {
		return kv.LexRange{}, errMinMaxLex
	}
	return kv.LexRange{Min: lo, Max: hi}, ""
}

// zrangeRequest is a parsed ZRANGE (or one of its older spellings).
type zrangeRequest struct {
	spec       kv.ZRangeSpec
	withScores bool
}

// parseZRange reads ZRANGE's arguments after the key: min max and the
// options, as Redis's zrangeGenericCommand reads them. by and rev fix the
// range's kind and direction for the older commands (ZRANGEBYSCORE, …),
// whose options may not change them; auto leaves them to the options
// (ZRANGE). store refuses WITHSCORES (ZRANGESTORE).
func parseZRange(args [][]byte, by kv.RangeBy, rev, auto, store bool) (zrangeRequest, string) {
	req := zrangeRequest{spec: kv.ZRangeSpec{By: by, Rev: rev, Limit: -1}}
	byAuto, revAuto := auto, auto
	limited := false
	for j := 2; j < len(args); j++ {
		switch w := option(args[j]); {
		case !store && w == "withscores":
			req.withScores = true
		case w == "limit" && len(args)-j-1 >= 2:
			off, lim, msg := parseIntPair(args[j+1], args[j+2])
			if msg != "" {
				return req, msg
			}
			req.spec.Offset, req.spec.Limit, limited = off, lim, true
			j += 2
		case revAuto && w == "rev":
			req.spec.Rev, revAuto = true, false
		case byAuto && w == "bylex":
			req.spec.By, byAuto = kv.ByLex, false
		case byAuto && w == "byscore":
			req.spec.By, byAuto = kv.ByScore, false
		default:
			return req, errSyntax
		}
	}
	if limited && req.spec.By == kv.ByRank {
		return req, "syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"
	}
	if req.withScores && req.spec.By == kv.ByLex {
		return req, "syntax error, WITHSCORES not supported in combination with BYLEX"
	}
	if !limited && req.spec.Limit < 0 {
		req.spec.Limit = -1
	}
	lo, hi := args[0], args[1]
	if req.spec.Rev && req.spec.By != kv.ByRank {
		lo, hi = hi, lo // given as max min
	}
	return req, parseRangeBy(&req.spec, lo, hi)
}

// parseRangeBy reads lo and hi as the ends of spec's range, of the kind
// spec.By says: start and stop by rank, min and max by score or by lex;
// it returns Redis's error text, "" when both are read.
func parseRangeBy(spec *kv.ZRangeSpec, lo, hi []byte) (msg string) {
	switch spec.By {
	case kv.ByRank:
		spec.Start, spec.Stop, msg = parseIntPair(lo, hi)
	case kv.ByScore:
		spec.Score, msg = parseScoreRange(lo, hi)
	case kv.ByLex:
		spec.Lex, msg = parseLexRange(lo, hi)
	}
	return msg
}
