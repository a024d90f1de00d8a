package resp

import (
	"log/slog"
	"testing"
	"time"
)

// BenchmarkMetricsDone is what counting adds to every command: a latency
// observation and a counter, resolved once per row.
func BenchmarkMetricsDone(b *testing.B) {
	m := newMetrics(slog.Default())
	cmd := &command{Name: "get"}
	cmd.metrics = m.row(cmd.Name)
	ok, lost := []byte("$1\r\nv\r\n"), []byte("-LOST expired\r\n")
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		reply := ok
		if i++; i%8 == 0 {
			reply = lost
		}
		m.done(cmd, time.Now(), reply)
	}
}
