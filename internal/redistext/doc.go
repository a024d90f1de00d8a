// Package redistext reads and writes text the way Redis 7 does, where tenure
// must give the same answer: integers as string2ll reads them, floats as
// string2ld reads and INCRBYFLOAT prints them, and glob patterns as
// stringmatchlen matches them. resp uses it for arguments and request
// headers, kv for stored values and KEYS/SCAN patterns.
//
// It is not a general number formatter, knows nothing of RESP or of the
// keyspace, and keeps no state.
package redistext
