package kv

import "github.com/cockroachdb/pebble/v2"

// LCSMatch is one run of the common subsequence: bytes A[0]..A[1] of the
// first string equal bytes B[0]..B[1] of the second (inclusive).
type LCSMatch struct {
	A, B [2]int64
	Len  int64
}

// LCSResult is what LCS found: the subsequence (without Idx), its length,
// and with Idx its runs, from the end of the strings to their start, as
// Redis lists them.
type LCSResult struct {
	Seq     []byte
	Len     int64
	Matches []LCSMatch
}

// LCS is LCS key1 key2: the longest common subsequence of the two strings,
// read at one instant; a missing key is an empty string. With idx it
// reports the runs of at least minMatchLen bytes instead of the
// subsequence. It needs a table of (len1+1)×(len2+1) 32-bit cells, and
// refuses with ErrLCSTooLarge one larger than MaxValueLen, as Redis does
// against proto-max-bulk-len.
func (s *Store) LCS(key1, key2 []byte, idx bool, minMatchLen int64) (LCSResult, error) {
	if s.closed.Load() {
		return LCSResult{}, ErrClosed
	}
	snap := s.reader() // inside a transaction nothing else writes
	if s.tx == nil {
		ss := s.db.NewSnapshot()
		defer ss.Close()
		snap = ss
	}
	a, err := s.snapshotValue(snap, key1)
	if err != nil {
		return LCSResult{}, wrap("lcs", err)
	}
	b, err := s.snapshotValue(snap, key2)
	if err == nil {
		err = s.settleRead()
	}
	if err != nil {
		return LCSResult{}, wrap("lcs", err)
	}
	cells := (uint64(len(a)) + 1) * (uint64(len(b)) + 1)
	if cells > uint64(s.MaxValueLen())/4 {
		return LCSResult{}, ErrLCSTooLarge
	}
	return lcs(a, b, idx, minMatchLen), nil
}

// snapshotValue reads key's live value from snap, nil when missing, and
// counts the lookup. An expired key reads as missing; the sweep deletes it.
func (s *Store) snapshotValue(snap pebble.Reader, key []byte) ([]byte, error) {
	rec, closer, found, err := getRecord(snap, dataKey(hashKey(key), key))
	if err != nil {
		return nil, err
	}
	if found && s.expiredNow(rec.expiry) {
		_ = closer.Close()
		found = false
	}
	s.lookups.count(found)
	if !found {
		return nil, nil
	}
	defer closer.Close()
	if err := rec.is(TypeString); err != nil {
		return nil, err
	}
	return clone(rec.value), nil
}

// lcs fills the classic dynamic-programming table, where cell (i, j) is
// the length of the LCS of a[:i] and b[:j], then walks back from the end.
// On a tie it moves along b first, which picks the same subsequence and
// runs as Redis.
func lcs(a, b []byte, idx bool, minMatchLen int64) LCSResult {
	w := len(b) + 1
	t := make([]uint32, (len(a)+1)*w)
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			switch {
			case a[i-1] == b[j-1]:
				t[i*w+j] = t[(i-1)*w+j-1] + 1
			default:
				t[i*w+j] = max(t[(i-1)*w+j], t[i*w+j-1])
			}
		}
	}
	n := int64(t[len(a)*w+len(b)])
	res := LCSResult{Len: n}
	if !idx {
		res.Seq = make([]byte, n)
	}
	// run is the match being extended backwards, while open.
	var run LCSMatch
	open := false
	emit := func() {
		if open && (minMatchLen == 0 || run.Len >= minMatchLen) {
			res.Matches = append(res.Matches, run)
		}
		open = false
	}
	k := n
	for i, j := len(a), len(b); i > 0 && j > 0; {
		if a[i-1] != b[j-1] {
			emit()
			if t[(i-1)*w+j] > t[i*w+j-1] {
				i--
			} else {
				j--
			}
			continue
		}
		k--
		if res.Seq != nil {
			res.Seq[k] = a[i-1]
		}
		i, j = i-1, j-1
		if open {
			run.A[0], run.B[0] = int64(i), int64(j)
			run.Len++
		} else {
			run = LCSMatch{A: [2]int64{int64(i), int64(i)}, B: [2]int64{int64(j), int64(j)}, Len: 1}
			open = true
		}
	}
	emit()
	return res
}
