package resp

import (
	"bytes"
	"slices"
	"strconv"

	"github.com/tenure-db/tenure/kv"
)

// SORT and SORT_RO (SPEC §13) over lists, sets and sorted sets, as Redis
// 7.0's sort.c: BY a pattern into strings or hash fields ("w_*",
// "h_*->field", or a pattern without "*", which does not sort), GET
// patterns ("#" is the element), LIMIT, ASC|DESC, ALPHA, STORE. The
// elements and the patterns' keys are read one after another, not from
// one snapshot; inside MULTI or a script they are one transaction's.

func cmdSort(c *conn, args [][]byte)   { sortCommand(c, args, false) }
func cmdSortRO(c *conn, args [][]byte) { sortCommand(c, args, true) }

type sortItem struct {
	elem  []byte
	score float64
	by    []byte // ALPHA with BY: the value compared; nil when missing
	hasBy bool
}

func sortCommand(c *conn, args [][]byte, readOnly bool) {
	var (
		desc, alpha, dontSort bool
		start, count          int64 = 0, -1
		store, by             []byte
		gets                  [][]byte
	)
	for j := 2; j < len(args); j++ {
		left := len(args) - j - 1
		switch w := option(args[j]); {
		case w == "asc":
			desc = false
		case w == "desc":
			desc = true
		case w == "alpha":
			alpha = true
		case w == "limit" && left >= 2:
			a, b, msg := parseIntPair(args[j+1], args[j+2])
			if msg != "" {
				c.out.Err(msg)
				return
			}
			start, count = a, b
			j += 2
		case !readOnly && w == "store" && left >= 1:
			store = args[j+1]
			j++
		case w == "by" && left >= 1:
			by = args[j+1]
			dontSort = bytes.IndexByte(by, '*') < 0
			j++
		case w == "get" && left >= 1:
			gets = append(gets, args[j+1])
			j++
		default:
			c.syntaxError()
			return
		}
	}
	elems, typ, err := c.store.SortSource(args[1])
	if err != nil {
		c.storeError(err)
		return
	}
	if dontSort && typ == kv.TypeSet && (store != nil || c.store != c.srv.store) {
		// Redis sorts a set anyway when storing or in a script, so that
		// the result does not depend on the set's order.
		dontSort, alpha, by = false, true, nil
	}
	n := int64(len(elems))
	start = min(max(start, 0), n)
	count = min(max(count, -1), n)
	end := n - 1
	if count >= 0 {
		end = start + count - 1
	}
	if start >= n {
		start, end = n-1, n-2
	}
	end = min(end, n-1)
	if dontSort && typ != kv.TypeSet && desc {
		slices.Reverse(elems) // unsorted, DESC reads a list or zset from its end
	}
	items := make([]sortItem, len(elems))
	for i, e := range elems {
		items[i].elem = e
	}
	if !dontSort {
		convErr := false
		for i := range items {
			it := &items[i]
			byval := it.elem
			if by != nil {
				v, ok := c.lookupByPattern(by, it.elem)
				if !ok {
					continue
				}
				byval = v
			}
			if alpha {
				if by != nil {
					it.by, it.hasBy = byval, true
				}
				continue
			}
			f, ok := sortScore(byval)
			if !ok {
				convErr = true
			}
			it.score = f
		}
		if convErr {
			c.out.Err("One or more scores can't be converted into double")
			return
		}
		slices.SortStableFunc(items, func(a, b sortItem) int {
			var r int
			switch {
			case !alpha:
				switch {
				case a.score > b.score:
					r = 1
				case a.score < b.score:
					r = -1
				default:
					r = bytes.Compare(a.elem, b.elem)
				}
			case by != nil:
				switch {
				case !a.hasBy && !b.hasBy:
					r = 0
				case !a.hasBy:
					r = -1
				case !b.hasBy:
					r = 1
				default:
					r = bytes.Compare(a.by, b.by)
				}
			default:
				r = bytes.Compare(a.elem, b.elem)
			}
			if desc {
				return -r
			}
			return r
		})
	}
	var out [][]byte
	var present []bool
	for i := start; i <= end && i >= 0; i++ {
		e := items[i].elem
		if len(gets) == 0 {
			out, present = append(out, e), append(present, true)
			continue
		}
		for _, g := range gets {
			v, ok := c.lookupByPattern(g, e)
			out, present = append(out, v), append(present, ok)
		}
	}
	if store != nil {
		for i := range out {
			if !present[i] {
				out[i] = []byte{}
			}
		}
		existed := c.existsIfNotifying(store)
		m, err := c.store.ListStore(store, out)
		if err != nil {
			c.storeError(err)
			return
		}
		switch {
		case m > 0:
			c.ready(store)
			c.notify(notifyList, "sortstore", store)
		case existed:
			c.notify(notifyGeneric, "del", store)
		}
		c.out.Int(m)
		return
	}
	c.out.Array(len(out))
	for i, v := range out {
		c.out.BulkOrNull(v, present[i])
	}
}

// sortScore reads an element or a BY value as a number, as Redis's strtod:
// "" is 0.
func sortScore(b []byte) (float64, bool) {
	if len(b) == 0 {
		return 0, true
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		if n, ok := parseInt(b); ok {
			return float64(n), true
		}
		return 0, false
	}
	return f, f == f
}

// lookupByPattern is Redis's lookupKeyByPattern: "#" is elem itself;
// otherwise the first "*" of pattern is replaced by elem, and what
// follows "->" (when something does) names a hash field. A missing key,
// or a key of the other type, is no value.
func (c *conn) lookupByPattern(pattern, elem []byte) ([]byte, bool) {
	if len(pattern) == 1 && pattern[0] == '#' {
		return elem, true
	}
	star := bytes.IndexByte(pattern, '*')
	if star < 0 {
		return nil, false
	}
	keyEnd := len(pattern)
	var field []byte
	if f := bytes.Index(pattern[star+1:], []byte("->")); f >= 0 && star+1+f+2 < len(pattern) {
		keyEnd = star + 1 + f
		field = pattern[keyEnd+2:]
	}
	key := make([]byte, 0, keyEnd-1+len(elem))
	key = append(key, pattern[:star]...)
	key = append(key, elem...)
	key = append(key, pattern[star+1:keyEnd]...)
	if field != nil {
		v, ok, err := c.store.HGet(key, field)
		if err != nil {
			return nil, false
		}
		return v, ok
	}
	v, ok, err := c.store.Get(key)
	if err != nil {
		return nil, false
	}
	return v, ok
}
