package resp

import (
	"context"
	"errors"
	"time"
)

// Commands run in process (package tenure's DB.Do): each is one request on
// a connection of its own, admitted as admin, through the same table,
// dispatch and handlers as a request read from a socket; the replies are
// built as Go values, never encoded. The values are those go-redis decodes
// a RESP2 reply into, whatever HELLO says: a string for simple, bulk and
// verbatim strings, an int64 for an integer, a []any for an array, a set
// and a map (its pairs flat, as RESP2 sends them, so one transcript serves
// both ways in), nil for a null inside an array, ErrNull for a null reply
// and a ReplyError for an error. Connection state (MULTI, WATCH, SELECT,
// HELLO, CLIENT SETNAME, AUTH) ends with the request.

// ErrNull is Server.Do's error for the null reply (GET of a missing key,
// LOCK.HOLD not granted), as redis.Nil is go-redis's.
var ErrNull = errors.New("resp: null reply")

// ReplyError is an error reply, "CODE message" as it would be sent. It is
// a go-redis redis.Error, so redis.HasErrorPrefix and the SDK read it as
// they read an error from a connection.
type ReplyError string

func (e ReplyError) Error() string { return string(e) }

// RedisError marks e as a reply of the store, not a failure to reach it.
func (ReplyError) RedisError() {}

// ErrNoCommand is Server.Do's answer to no arguments at all (a connection
// ignores an empty request and answers nothing).
var ErrNoCommand = errors.New("resp: no command given")

// Do runs one request in process and returns its reply. A blocking command
// (LOCK.HOLD) waits until ctx ends, then withdraws its request, as a
// connection that closed, and Do returns ctx's error. Once Shutdown has
// begun Do returns ErrServerClosed; a Do running then finishes first.
func (s *Server) Do(ctx context.Context, args [][]byte) (any, error) {
	if len(args) == 0 {
		return nil, ErrNoCommand
	}
	s.mu.Lock()
	if s.closing.Load() {
		s.mu.Unlock()
		return nil, ErrServerClosed
	}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	c := &conn{
		srv:     s,
		rd:      &reader{limits: s.cfg.Limits},
		id:      s.nextID.Add(1),
		addr:    "in-process",
		created: time.Now(),
		role:    RoleAdmin,
		user:    "default",
		store:   s.store,
		ctx:     ctx,
	}
	c.out.v = &values{}
	c.run(args)
	c.endTx()
	v := c.out.v
	switch {
	case !v.done:
		// A blocking command whose context ended: nobody to answer.
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return nil, context.Canceled
	case v.err != nil:
		return nil, v.err
	}
	return v.top, nil
}

// values builds one reply as Go values (see Do): aggregates are filled
// from a stack of the open ones.
type values struct {
	open []aggregate
	top  any
	err  error // ErrNull or a ReplyError, for the reply itself
	done bool  // the reply is complete
}

type aggregate struct {
	elems []any
	left  int
}

// add puts x in the innermost open aggregate, closing those it completes,
// or makes it the reply.
func (v *values) add(x any) {
	for len(v.open) > 0 {
		a := &v.open[len(v.open)-1]
		a.elems = append(a.elems, x)
		if a.left--; a.left > 0 {
			return
		}
		x = a.elems
		v.open = v.open[:len(v.open)-1]
	}
	v.top, v.done = x, true
}

// array opens an array of n elements (a map's pairs flattened: 2n).
func (v *values) array(n int) {
	if n <= 0 {
		v.add([]any{})
		return
	}
	v.open = append(v.open, aggregate{elems: make([]any, 0, n), left: n})
}

func (v *values) null() {
	if len(v.open) == 0 {
		v.err, v.done = ErrNull, true
		return
	}
	v.add(nil)
}

// error takes an error reply; it reports whether it is the reply itself,
// which the reply's bytes then record too, for exec's count of errors.
func (v *values) error(code, msg string) bool {
	text := code
	if msg != "" {
		text = string(appendLine([]byte(code+" "), msg))
	}
	if len(v.open) == 0 {
		v.err, v.done = ReplyError(text), true
		return true
	}
	v.add(ReplyError(text))
	return false
}

func (v *values) reset() { *v = values{} }
