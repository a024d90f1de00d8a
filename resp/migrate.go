package resp

import (
	"bufio"
	"bytes"
	"errors"
	"net"
	"strconv"
	"syscall"
	"time"

	"github.com/tenure-db/tenure/internal/dump"
	"github.com/tenure-db/tenure/kv"
)

// MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE]
// [AUTH password | AUTH2 username password] [KEYS key …]: keys sent to
// another server (a Redis or a tenure) as RESTOREs of their DUMPs, then
// deleted here unless COPY, as Redis's migrateCommand does, with its
// replies: +NOKEY when none of the keys is here, "IOERR error or timeout
// … target instance", "Target instance replied with error: …".
//
// Unlike Redis, which runs nothing else meanwhile, tenure goes on serving
// while a MIGRATE waits for its target: the keys are read together, and
// deleted only if no write touched them since (a WATCH of them); one that
// was written meanwhile stays here, with the write, and MIGRATE says so.
// It keeps no connection to the target between calls. Not inside MULTI or
// a script, which would hold every stripe while it waits on the network,
// nor in a cluster, where a write row is an entry that every node runs.
func cmdMigrate(c *conn, args [][]byte) {
	var copyOnly, replace bool
	var user, password []byte
	keys := [][]byte{args[3]}
	for j := 6; j < len(args); j++ {
		more := len(args) - 1 - j
		switch option(args[j]) {
		case "copy":
			copyOnly = true
		case "replace":
			replace = true
		case "auth":
			if more < 1 {
				c.out.Err(errSyntax)
				return
			}
			j++
			user, password = nil, args[j]
		case "auth2":
			if more < 2 {
				c.out.Err(errSyntax)
				return
			}
			user, password = args[j+1], args[j+2]
			j += 2
		case "keys":
			if len(args[3]) != 0 {
				c.out.Err("When using MIGRATE KEYS option, the key argument must be set to the empty string")
				return
			}
			keys = args[j+1:]
			j = len(args)
		default:
			c.out.Err(errSyntax)
			return
		}
	}
	timeoutMs, ok1 := parseInt(args[5])
	db, ok2 := parseInt(args[4])
	switch {
	case !ok1 || !ok2:
		c.out.Err(errNotInteger)
		return
	case c.srv.cluster != nil || c.applyingEntry():
		// A write row goes through the log, and every node would run it.
		c.out.Err("MIGRATE is not supported in a cluster: DUMP the keys here and RESTORE them there")
		return
	case c.store != c.srv.store:
		c.out.Err("MIGRATE cannot run inside MULTI or a script: it waits on another server")
		return
	}
	if timeoutMs <= 0 {
		timeoutMs = 1000
	}
	timeout := time.Duration(timeoutMs) * time.Millisecond

	var w kv.Watch
	defer c.srv.store.Unwatch(&w)
	for _, k := range keys {
		if err := c.srv.store.Watch(&w, k); err != nil {
			c.storeError(err)
			return
		}
	}
	sent, restores, err := migrationOf(c, keys, replace)
	switch {
	case err != nil:
		c.storeError(err)
		return
	case len(sent) == 0:
		c.out.Status("NOKEY")
		return
	}

	var req []byte
	if password != nil {
		if user != nil {
			req = appendCommand(req, []byte("AUTH"), user, password)
		} else {
			req = appendCommand(req, []byte("AUTH"), password)
		}
	}
	req = appendCommand(req, []byte("SELECT"), strconv.AppendInt(nil, db, 10))
	req = append(req, restores...)
	nc, err := net.DialTimeout("tcp", net.JoinHostPort(string(args[1]), string(args[2])), timeout)
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		// Redis connects without waiting, and learns of the refusal
		// as it writes.
		c.out.Error("IOERR", "error or timeout writing to target instance")
		return
	case err != nil:
		c.out.Error("IOERR", "error or timeout connecting to the client")
		return
	}
	defer nc.Close()
	nc.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := nc.Write(req); err != nil {
		c.out.Error("IOERR", "error or timeout writing to target instance")
		return
	}
	// The replies: AUTH's, SELECT's, then one RESTORE's per key. The
	// first error of the target is the answer; keys it restored are
	// deleted here all the same (without COPY), as Redis does.
	rd := bufio.NewReader(nc)
	readLine := func() ([]byte, bool) {
		nc.SetReadDeadline(time.Now().Add(timeout))
		l, err := rd.ReadSlice('\n')
		if err != nil {
			return nil, false
		}
		return bytes.TrimRight(l, "\r\n"), true
	}
	isErr := func(l []byte) bool { return len(l) > 0 && l[0] == '-' }
	var targetErr []byte
	headsOK := true // AUTH and SELECT: after an error of theirs, no key counts
	heads := 1
	if password != nil {
		heads++
	}
	for range heads {
		l, ok := readLine()
		if !ok {
			c.out.Error("IOERR", "error or timeout reading to target instance")
			return
		}
		if isErr(l) && headsOK {
			headsOK, targetErr = false, bytes.Clone(l[1:])
		}
	}
	var restored [][]byte
	readFailed := false
	for _, k := range sent {
		l, ok := readLine()
		if !ok {
			readFailed = true
			break
		}
		switch {
		case isErr(l) && targetErr == nil:
			targetErr = bytes.Clone(l[1:])
		case !isErr(l) && headsOK:
			restored = append(restored, k)
		}
	}
	changed := false
	if !copyOnly && len(restored) > 0 {
		ran, err := c.srv.store.Tx(&w, func(tx *kv.Store) {
			_, _ = tx.Del(restored)
		})
		if err != nil {
			c.storeError(err)
			return
		}
		changed = !ran
		if ran {
			for _, k := range restored {
				c.notify(notifyGeneric, "del", k)
			}
		}
	}
	switch {
	case targetErr != nil:
		c.out.Err("Target instance replied with error: " + string(targetErr))
	case readFailed:
		c.out.Error("IOERR", "error or timeout reading to target instance")
	case changed:
		c.out.Err("MIGRATE copied the keys, and did not delete them here: one was written meanwhile")
	default:
		c.out.OK()
	}
}

// migrationOf reads keys, whole and together, and returns those that are
// here and the RESTOREs that recreate them elsewhere, each with the TTL
// it has left.
func migrationOf(c *conn, keys [][]byte, replace bool) (sent [][]byte, restores []byte, err error) {
	err = c.atomically(func(store *kv.Store) error {
		now := c.nowMs()
		for _, k := range keys {
			v, found, err := dumpValue(store, k)
			if err != nil {
				return err
			}
			if !found {
				continue
			}
			at, err := store.Deadline(k)
			if err != nil {
				return err
			}
			ttl := int64(0)
			if at > 0 {
				ttl = max(at-now, 1)
			}
			cmd := [][]byte{[]byte("RESTORE"), k, strconv.AppendInt(nil, ttl, 10), dump.Encode(v)}
			if replace {
				cmd = append(cmd, []byte("REPLACE"))
			}
			restores = appendCommand(restores, cmd...)
			sent = append(sent, k)
		}
		return nil
	})
	return sent, restores, err
}

// appendCommand appends args to b as a RESP array of bulk strings.
func appendCommand(b []byte, args ...[]byte) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, '\r', '\n')
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	return b
}
