package resp

import (
	"encoding/json"
	"strconv"

	"github.com/tenure-db/tenure/kv"
	"github.com/tenure-db/tenure/lockmod"
)

// Keyspace notifications and lock events (SPEC §13), published through
// pub/sub (pubsub.go) as notify-keyspace-events says.
//
// A handler that changes a key tells of it with one call, once its write
// has succeeded:
//
//	c.notify(notifyHash, "hset", key)
//
// naming its class (the letter of notify-keyspace-events) and Redis 7's
// event name for the command (src/t_hash.c's notifyKeyspaceEvent calls
// say which). With the class off, or nobody subscribed, it costs an
// atomic load or two. "expired" and "new" come from the keyspace itself
// (kv.Store.SetKeyHook), in the step that expires or creates the key.

// notifyClass is a set of notify-keyspace-events classes, as Redis's
// NOTIFY_* flags.
type notifyClass uint32

const (
	notifyKeyspace notifyClass = 1 << iota // K: __keyspace@0__:<key> <event>
	notifyKeyevent                         // E: __keyevent@0__:<event> <key>
	notifyGeneric                          // g: DEL, EXPIRE, RENAME, …
	notifyString                           // $
	notifyList                             // l
	notifySet                              // s
	notifyHash                             // h
	notifyZset                             // z
	notifyExpired                          // x
	notifyEvicted                          // e (tenure evicts nothing)
	notifyStream                           // t (tenure has no streams)
	notifyKeyMiss                          // m
	notifyModule                           // d
	notifyNew                              // n
	// notifyLock, L, is tenure's: lock events on __lock@0__:<lock>. A
	// leaves it out, as it leaves out m and n.
	notifyLock

	notifyAll = notifyGeneric | notifyString | notifyList | notifySet | notifyHash |
		notifyZset | notifyExpired | notifyEvicted | notifyStream | notifyModule
)

// parseNotify reads a notify-keyspace-events value; ok is false for a
// character that names no class.
func parseNotify(s string) (f notifyClass, ok bool) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case 'A':
			f |= notifyAll
		case 'g':
			f |= notifyGeneric
		case '$':
			f |= notifyString
		case 'l':
			f |= notifyList
		case 's':
			f |= notifySet
		case 'h':
			f |= notifyHash
		case 'z':
			f |= notifyZset
		case 'x':
			f |= notifyExpired
		case 'e':
			f |= notifyEvicted
		case 'K':
			f |= notifyKeyspace
		case 'E':
			f |= notifyKeyevent
		case 't':
			f |= notifyStream
		case 'm':
			f |= notifyKeyMiss
		case 'd':
			f |= notifyModule
		case 'n':
			f |= notifyNew
		case 'L':
			f |= notifyLock
		default:
			return 0, false
		}
	}
	return f, true
}

// String is CONFIG GET's canonical spelling, Redis's order, L last.
func (f notifyClass) String() string {
	var b []byte
	if f&notifyAll == notifyAll {
		b = append(b, 'A')
		if f&notifyNew != 0 {
			b = append(b, 'n') // Redis 7.0 drops it here, and a CONFIG GET read back loses it
		}
	} else {
		for _, c := range []struct {
			f notifyClass
			c byte
		}{{notifyGeneric, 'g'}, {notifyString, '$'}, {notifyList, 'l'}, {notifySet, 's'},
			{notifyHash, 'h'}, {notifyZset, 'z'}, {notifyExpired, 'x'}, {notifyEvicted, 'e'},
			{notifyStream, 't'}, {notifyModule, 'd'}, {notifyNew, 'n'}} {
			if f&c.f != 0 {
				b = append(b, c.c)
			}
		}
	}
	for _, c := range []struct {
		f notifyClass
		c byte
	}{{notifyKeyspace, 'K'}, {notifyKeyevent, 'E'}, {notifyKeyMiss, 'm'}, {notifyLock, 'L'}} {
		if f&c.f != 0 {
			b = append(b, c.c)
		}
	}
	return string(b)
}

// notify publishes a keyspace notification of class for key, as Redis's
// notifyKeyspaceEvent: on __keyspace@0__:<key> with the event as message
// (K), and on __keyevent@0__:<event> with the key (E). A request run on
// its read batch's pipeline tells of a write not yet committed: its
// notification waits for the commit (batch.go), so that a subscriber
// that reads the key on hearing of it finds the write.
func (c *conn) notify(class notifyClass, event string, key []byte) {
	if c.batch.pipe != nil && c.store == c.batch.pipe.View() {
		if c.srv.notifying(class) {
			c.batch.events = append(c.batch.events, batchEvent{class, event, string(key)})
		}
		return
	}
	c.srv.notify(class, event, key)
}

func (s *Server) notify(class notifyClass, event string, key []byte) {
	f := notifyClass(s.pubsub.notify.Load())
	if f&class == 0 || f&(notifyKeyspace|notifyKeyevent) == 0 || s.pubsub.n.Load() == 0 {
		return
	}
	if f&notifyKeyspace != 0 {
		ch := make([]byte, 0, len("__keyspace@0__:")+len(key))
		ch = append(append(ch, "__keyspace@0__:"...), key...)
		s.publish(psChannel, ch, []byte(event))
	}
	if f&notifyKeyevent != 0 {
		s.publish(psChannel, []byte("__keyevent@0__:"+event), key)
	}
}

// notifying says a notification of class would be published now: a
// handler that must do more work to tell which keys changed asks first.
func (s *Server) notifying(class notifyClass) bool {
	f := notifyClass(s.pubsub.notify.Load())
	return f&class != 0 && f&(notifyKeyspace|notifyKeyevent) != 0 && s.pubsub.n.Load() != 0
}

// notifySet tells of a string written by SET and its kin: "set", and
// "expire" when it was given a deadline, as Redis's setGenericCommand.
func (c *conn) notifySet(key []byte, e kv.Expiry) {
	c.notify(notifyString, "set", key)
	if e.Mode == kv.ExpiryAt {
		c.notify(notifyGeneric, "expire", key)
	}
}

// notifyExpiry tells of a deadline set: "expire", or "del" when the
// deadline had passed and the key went at once.
func (c *conn) notifyExpiry(key []byte, at int64) {
	if at <= c.nowMs() {
		c.notify(notifyGeneric, "del", key)
		return
	}
	c.notify(notifyGeneric, "expire", key)
}

// notifyRename tells of RENAME and RENAMENX, as Redis: "rename_from" on
// the source, then "rename_to" on the destination.
func (c *conn) notifyRename(from, to []byte) {
	c.notify(notifyGeneric, "rename_from", from)
	c.notify(notifyGeneric, "rename_to", to)
}

// keyEvent is the keyspace's hook (kv.Store.SetKeyHook): a key expired
// or was made.
func (s *Server) keyEvent(ev kv.KeyEvent, key []byte) {
	switch ev {
	case kv.KeyExpired:
		s.notify(notifyExpired, "expired", key)
	case kv.KeyNew:
		s.notify(notifyNew, "new", key)
	}
}

// setNotify applies a new notify-keyspace-events: the keyspace's hook is
// set only while x or n can publish, and the lock module's event sink only
// while L is on, so that neither costs anything otherwise.
func (s *Server) setNotify(f notifyClass) {
	ps := &s.pubsub
	ps.sinkMu.Lock()
	defer ps.sinkMu.Unlock()
	ps.notify.Store(uint32(f))
	if f&(notifyExpired|notifyNew) != 0 && f&(notifyKeyspace|notifyKeyevent) != 0 {
		s.store.SetKeyHook(s.keyEvent)
	} else {
		s.store.SetKeyHook(nil)
	}
	switch on := f&notifyLock != 0; {
	case on && ps.lockSink == nil:
		ps.lockSink = s.locks.AddEventSink(lockEvents{s})
	case !on && ps.lockSink != nil:
		ps.lockSink()
		ps.lockSink = nil
	}
}

// lockEvents publishes the lock module's events (SPEC §13 "Lock events"):
// each on __lock@0__:<lock> as a JSON object, an epoch on __lock@0__:. It
// is told in the lock module's critical section, so in order per lock;
// publishing never waits (pubsub.go).
type lockEvents struct{ s *Server }

// lockEventJSON is the object of a grant, release, expiry, revocation or
// lost answer. The fence is a decimal string, so that no language loses
// its digits; a name that is not UTF-8 has its bad bytes replaced (JSON).
type lockEventJSON struct {
	Event  string `json:"event"`
	Key    string `json:"key"`
	Fence  string `json:"fence"`
	Owner  string `json:"owner"`
	Reason string `json:"reason"`
}

type epochEventJSON struct {
	Event string `json:"event"`
	Epoch string `json:"epoch"`
}

func (l lockEvents) LockEvent(e lockmod.Event) {
	s := l.s
	if s.pubsub.n.Load() == 0 {
		return
	}
	var msg []byte
	if e.Kind == lockmod.EventEpoch {
		msg, _ = json.Marshal(epochEventJSON{Event: "epoch", Epoch: strconv.FormatUint(e.Epoch, 10)})
	} else {
		msg, _ = json.Marshal(lockEventJSON{Event: e.Kind.String(), Key: e.Key,
			Fence: strconv.FormatUint(e.Fence, 10), Owner: e.Owner, Reason: e.Reason})
	}
	s.publish(psChannel, []byte("__lock@0__:"+e.Lock), msg)
}
