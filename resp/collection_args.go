package resp

import "time"

// The arguments several families read alike, each read in one place:
// two integers (an index range, LIMIT's offset and count), a pop's count,
// MPOP's numkeys key … LEFT|RIGHT (MIN|MAX) [COUNT n] and its blocking
// form's timeout before it. Handlers answer the error text they return.

// errMustBePositive answers a negative count where Redis wants none.
const errMustBePositive = "value is out of range, must be positive"

// parseIntPair reads two integers: an index range's start and stop
// (LRANGE, LTRIM, ZRANGE by rank, ZREMRANGEBYRANK, GETRANGE) or LIMIT's
// offset and count (ZRANGE, SORT), or Redis's error text when either is
// not one.
func parseIntPair(a, b []byte) (x, y int64, msg string) {
	x, ok1 := parseInt(a)
	y, ok2 := parseInt(b)
	if !ok1 || !ok2 {
		return 0, 0, errNotInteger
	}
	return x, y, ""
}

// popCountArg reads the count of key [count] (LPOP, RPOP, ZPOPMIN,
// ZPOPMAX, SPOP), -1 when there is none, or Redis's error text.
func popCountArg(args [][]byte) (count int64, msg string) {
	if len(args) < 3 {
		return -1, ""
	}
	n, ok := parseInt(args[2])
	switch {
	case !ok:
		return 0, errNotInteger
	case n < 0:
		return 0, errMustBePositive
	}
	return n, ""
}

// mpopArgs reads LMPOP's and ZMPOP's numkeys key … LEFT|RIGHT (MIN|MAX)
// [COUNT n], from numkeys on: the keys, whether the first word (LEFT,
// MIN) was given, and the count (1 if not given).
func mpopArgs(args [][]byte, first, second string) (keys [][]byte, isFirst bool, count int64, msg string) {
	n, ok := parseInt(args[0])
	if !ok || n < 1 {
		return nil, false, 0, "numkeys should be greater than 0"
	}
	where := 1 + n
	if where >= int64(len(args)) {
		return nil, false, 0, errSyntax
	}
	keys = args[1:where]
	switch option(args[where]) {
	case first:
		isFirst = true
	case second:
	default:
		return nil, false, 0, errSyntax
	}
	count = -1
	for j := where + 1; j < int64(len(args)); j++ {
		if count == -1 && option(args[j]) == "count" && j+1 < int64(len(args)) {
			j++
			v, ok := parseInt(args[j])
			if !ok || v < 1 {
				return nil, false, 0, "count should be greater than 0"
			}
			count = v
			continue
		}
		return nil, false, 0, errSyntax
	}
	if count == -1 {
		count = 1
	}
	return keys, isFirst, count, ""
}

// blockingMPopArgs reads BLMPOP's and BZMPOP's timeout numkeys key …
// LEFT|RIGHT (MIN|MAX) [COUNT n], from the command's name on: the timeout
// first, then as mpopArgs.
func blockingMPopArgs(args [][]byte, first, second string) (timeout time.Duration, keys [][]byte, isFirst bool, count int64, msg string) {
	timeout, msg = timeoutArg(args[1])
	if msg != "" {
		return 0, nil, false, 0, msg
	}
	keys, isFirst, count, msg = mpopArgs(args[2:], first, second)
	return timeout, keys, isFirst, count, msg
}
