package tenure

import (
	"context"
	"encoding"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure/resp"
)

// Do runs one command in process, as a connection admitted as admin would
// run it (SPEC §11): the same command table, dispatch and handlers, the
// same replies and errors, with no RESP on the way. So a *DB is the SDK's
// locks.Store, and anything written for a go-redis client's Do runs on it.
//
// The reply is what go-redis decodes a RESP2 reply into (RESP2 whatever
// HELLO says, so a map's pairs come flat, as Redis's docs show them):
// Val() is a string, an int64 or a []any; a null reply is redis.Nil; an
// error reply is a redis.Error whose text is what a client reads ("ERR
// unknown command …", "LOST expired"). Arguments are taken as go-redis
// takes them: strings, []byte, integers, floats, bools, time.Time,
// time.Duration and encoding.BinaryMarshaler.
//
// Each call is a connection of its own: MULTI, WATCH, SELECT and the like
// end with it. A LOCK.HOLD that waits in line waits until ctx ends, then
// leaves the line as a closed connection does and Do returns ctx's error.
// After Close, Do returns ErrClosed.
func (db *DB) Do(ctx context.Context, args ...any) *redis.Cmd {
	cmd := redis.NewCmd(ctx, args...)
	argv := make([][]byte, len(args))
	for i, a := range args {
		b, err := appendArg(nil, a)
		if err != nil {
			cmd.SetErr(err)
			return cmd
		}
		argv[i] = b
	}
	v, err := db.srv.Do(ctx, argv)
	switch {
	case errors.Is(err, resp.ErrNull):
		err = redis.Nil
	case errors.Is(err, resp.ErrServerClosed):
		err = ErrClosed
	}
	if err != nil {
		cmd.SetErr(err)
		return cmd
	}
	cmd.SetVal(v)
	return cmd
}

// appendArg appends a's bytes as go-redis would send a: numbers in
// decimal, bools as 1 or 0, times in RFC 3339 with nanoseconds, durations
// in nanoseconds.
func appendArg(b []byte, a any) ([]byte, error) {
	switch a := a.(type) {
	case nil:
		return b, nil
	case string:
		return append(b, a...), nil
	case []byte:
		return append(b, a...), nil
	case int:
		return strconv.AppendInt(b, int64(a), 10), nil
	case int8:
		return strconv.AppendInt(b, int64(a), 10), nil
	case int16:
		return strconv.AppendInt(b, int64(a), 10), nil
	case int32:
		return strconv.AppendInt(b, int64(a), 10), nil
	case int64:
		return strconv.AppendInt(b, a, 10), nil
	case uint:
		return strconv.AppendUint(b, uint64(a), 10), nil
	case uint8:
		return strconv.AppendUint(b, uint64(a), 10), nil
	case uint16:
		return strconv.AppendUint(b, uint64(a), 10), nil
	case uint32:
		return strconv.AppendUint(b, uint64(a), 10), nil
	case uint64:
		return strconv.AppendUint(b, a, 10), nil
	case float32:
		return strconv.AppendFloat(b, float64(a), 'f', -1, 32), nil
	case float64:
		return strconv.AppendFloat(b, a, 'f', -1, 64), nil
	case bool:
		if a {
			return append(b, '1'), nil
		}
		return append(b, '0'), nil
	case time.Time:
		return a.AppendFormat(b, time.RFC3339Nano), nil
	case time.Duration:
		return strconv.AppendInt(b, a.Nanoseconds(), 10), nil
	case encoding.BinaryMarshaler:
		m, err := a.MarshalBinary()
		if err != nil {
			return nil, err
		}
		return append(b, m...), nil
	}
	return nil, fmt.Errorf("tenure: can't send %T as an argument (implement encoding.BinaryMarshaler)", a)
}
