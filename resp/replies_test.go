package resp

import "testing"

// The reply writer's cost on GET's two replies, a 16-byte value and the
// null of a missing key, in RESP2: the protocol check must cost next to
// nothing there (the bench's GET and SET rows go through it).
func BenchmarkReplyGetRESP2(b *testing.B) {
	var r reply
	v := []byte("0123456789abcdef")
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		r.b = r.b[:0]
		r.BulkOrNull(v, true)
		r.BulkOrNull(nil, false)
		r.OK()
	}
}
