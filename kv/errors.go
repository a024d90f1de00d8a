package kv

import "errors"

// Sentinel errors. Their texts are Redis's: resp replies "-ERR <text>", or
// "-FENCED <text>" for ErrFenced, "-WRONGTYPE <text>" for ErrWrongType.
// Compare with errors.Is.
var (
	// ErrNotInteger: the value, or an argument, is not a 64-bit integer as
	// Redis's string2ll reads one.
	ErrNotInteger = errors.New("value is not an integer or out of range")
	// ErrNotFloat: the value is not a float as Redis's string2ld reads one.
	ErrNotFloat = errors.New("value is not a valid float")
	// ErrOverflow: INCRBY/DECRBY would leave the int64 range.
	ErrOverflow = errors.New("increment or decrement would overflow")
	// ErrNaN: INCRBYFLOAT would store NaN or an infinity.
	ErrNaN = errors.New("increment would produce NaN or Infinity")
	// ErrNoSuchKey: RENAME of a missing key.
	ErrNoSuchKey = errors.New("no such key")
	// ErrTooLarge: APPEND or SETRANGE would make a string longer than
	// Options.MaxValueLen.
	ErrTooLarge = errors.New("string exceeds maximum allowed size (proto-max-bulk-len)")
	// ErrFenced: SET … FENCE f on a key that remembers a fence larger than f
	// (LOCK-12). Nothing was written.
	ErrFenced = errors.New("a newer fence has written this key")
	// ErrLCSTooLarge: LCS would need a table larger than
	// Options.MaxValueLen.
	ErrLCSTooLarge = errors.New("Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len")
	// ErrOffsetOutOfRange: SETRANGE with a negative offset.
	ErrOffsetOutOfRange = errors.New("offset is out of range")
	// ErrDiskFailed: a write to the disk failed (a full disk, a read-only
	// or failing data directory), and writes are refused: until the store
	// is reopened when Pebble failed a WAL write, since it cannot go on
	// after that; until a flush succeeds when flushes failed. Reads go on.
	// The error wraps the failure.
	ErrDiskFailed = errors.New("a write to the disk failed; writes are refused")
	// ErrWrongType: a command of one type (a string command, say) on a key
	// that holds another. resp replies "-WRONGTYPE <text>". Decided in one
	// place: Type.check (types.go).
	ErrWrongType = errors.New("Operation against a key holding the wrong kind of value")
	// ErrScoreNaN: ZADD … INCR or ZINCRBY would make a score NaN (inf
	// plus -inf). Nothing was written.
	ErrScoreNaN = errors.New("resulting score is not a number (NaN)")
	// ErrIndexOutOfRange: LSET at an index past either end of the list.
	ErrIndexOutOfRange = errors.New("index out of range")
	// ErrClosed: the Store was used after Close.
	ErrClosed = errors.New("kv: store is closed")
)
