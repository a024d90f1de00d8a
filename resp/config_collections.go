package resp

import (
	"math"
	"sync/atomic"

	"github.com/tenure-db/tenure/kv"
)

// The settings of sorted sets' and lists' encodings (CONFIG GET/SET), by
// Redis 7.0's names and their older ziplist aliases. The zset limits
// decide what OBJECT ENCODING answers (kv.EncodingLimits); a list is a
// quicklist whatever its size in Redis 7.0, so the list settings are kept
// and answered, and change nothing.

// listSettings are list-max-listpack-size and list-compress-depth.
type listSettings struct {
	maxListpackSize atomic.Int64
	compressDepth   atomic.Int64
	initialized     atomic.Bool
}

func (s *Server) listSetting() *listSettings {
	if s.lists.initialized.CompareAndSwap(false, true) {
		s.lists.maxListpackSize.Store(-2)
	}
	return &s.lists
}

// collectionConfigValues are CONFIG GET's rows for these settings.
func (s *Server) collectionConfigValues() [][2]string {
	l := s.store.EncodingLimits()
	ls := s.listSetting()
	return [][2]string{
		{"zset-max-listpack-entries", itoa(l.ZSetMaxListpackEntries)},
		{"zset-max-ziplist-entries", itoa(l.ZSetMaxListpackEntries)},
		{"zset-max-listpack-value", itoa(l.ZSetMaxListpackValue)},
		{"zset-max-ziplist-value", itoa(l.ZSetMaxListpackValue)},
		{"list-max-listpack-size", itoa(ls.maxListpackSize.Load())},
		{"list-max-ziplist-size", itoa(ls.maxListpackSize.Load())},
		{"list-compress-depth", itoa(ls.compressDepth.Load())},
	}
}

// collectionConfigSet checks CONFIG SET name value for these settings:
// known is false for another name; why is Redis's reason for a bad value.
func (s *Server) collectionConfigSet(name string, val []byte) (apply func(), why string, known bool) {
	n, ok := parseInt(val)
	bad := func(lo, hi int64) string {
		if !ok {
			return "argument couldn't be parsed into an integer"
		}
		if n < lo || n > hi {
			return "argument must be between " + itoa(lo) + " and " + itoa(hi) + " inclusive"
		}
		return ""
	}
	setLimit := func(f func(l *kv.EncodingLimits)) func() {
		return func() {
			l := s.store.EncodingLimits()
			f(&l)
			s.store.SetEncodingLimits(l)
		}
	}
	switch name {
	case "zset-max-listpack-entries", "zset-max-ziplist-entries":
		if why := bad(0, math.MaxInt64); why != "" {
			return nil, why, true
		}
		return setLimit(func(l *kv.EncodingLimits) { l.ZSetMaxListpackEntries = n }), "", true
	case "zset-max-listpack-value", "zset-max-ziplist-value":
		if why := bad(0, math.MaxInt64); why != "" {
			return nil, why, true
		}
		return setLimit(func(l *kv.EncodingLimits) { l.ZSetMaxListpackValue = n }), "", true
	case "list-max-listpack-size", "list-max-ziplist-size":
		if why := bad(math.MinInt32, math.MaxInt32); why != "" {
			return nil, why, true
		}
		return func() { s.listSetting().maxListpackSize.Store(n) }, "", true
	case "list-compress-depth":
		if why := bad(0, math.MaxInt32); why != "" {
			return nil, why, true
		}
		return func() { s.listSetting().compressDepth.Store(n) }, "", true
	}
	return nil, "", false
}
