package resp

import (
	"bytes"
	"slices"
	"strings"
	"sync"
)

// INFO's Errorstats: the error replies sent, counted by their code, the
// word an error begins with (-WRONGTYPE, -NOSCRIPT, a script's own
// -MY_CODE), as Redis 7.0.15 counts them (networking.c, afterErrorReply):
// the code ends at the first space within the reply's first 32 bytes, and
// a reply with none there counts as ERR.

// maxErrorCodes bounds the codes counted: a script's redis.error_reply
// may make up any code, and each would otherwise be kept until CONFIG
// RESETSTAT. Redis 7.2 has the same bound; an error of a new code past it
// is still in total_error_replies.
const maxErrorCodes = 128

// errorCounts is the count of error replies by code.
type errorCounts struct {
	mu     sync.Mutex
	byCode map[string]int64
}

// add counts the error reply that begins reply ("-CODE message\r\n").
func (e *errorCounts) add(reply []byte) {
	code := "ERR"
	if sp := bytes.IndexByte(reply[:min(len(reply), 32)], ' '); sp > 0 {
		code = string(reply[1:sp])
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.byCode[code]; !ok {
		if len(e.byCode) >= maxErrorCodes {
			return
		}
		if e.byCode == nil {
			e.byCode = map[string]int64{}
		}
	}
	e.byCode[code]++
}

// reset forgets every count (CONFIG RESETSTAT).
func (e *errorCounts) reset() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.byCode = nil
}

// infoSafe is s with the characters an INFO line cannot hold (#, :, CR,
// LF) replaced by '_', as Redis's getSafeInfoString does.
var infoSafe = strings.NewReplacer("#", "_", ":", "_", "\r", "_", "\n", "_")

// errorStats is INFO's Errorstats section: errorstat_CODE:count=N, by
// code in byte order.
func (s *Server) errorStats() [][2]string {
	e := &s.stats.errors
	e.mu.Lock()
	defer e.mu.Unlock()
	codes := make([]string, 0, len(e.byCode))
	for code := range e.byCode {
		codes = append(codes, code)
	}
	slices.Sort(codes)
	out := make([][2]string, len(codes))
	for i, code := range codes {
		out[i] = [2]string{"errorstat_" + infoSafe.Replace(code), "count=" + itoa(e.byCode[code])}
	}
	return out
}
