package kv

// Key events, for keyspace notifications (SPEC §13: Redis's "expired"
// and "new" events): the store tells a hook of each key that expires and
// each key that is made, once the write that does it commits.

// KeyEvent is what a key hook hears of.
type KeyEvent uint8

const (
	KeyExpired KeyEvent = iota + 1 // an expired key was deleted, lazily or by the sweep
	KeyNew                         // a write made a key that was missing
)

// KeyHook hears of key events. It is called with the key's stripe held,
// right after the commit, in the command's own call (so before the
// command returns): it must be quick and must not call the Store. key is
// valid only during the call.
type KeyHook func(ev KeyEvent, key []byte)

// SetKeyHook makes h hear every key event from now on; nil stops it.
// Without a hook nothing is recorded.
func (s *Store) SetKeyHook(h KeyHook) {
	if h == nil {
		s.keyHook.Store(nil)
		return
	}
	s.keyHook.Store(&h)
}

// keyEvent is one event a change recorded, told once it commits.
type keyEvent struct {
	ev  KeyEvent
	key []byte
}

// hooked says whether changes should record key events.
func (s *Store) hooked() bool { return s.keyHook.Load() != nil }

// note records ev for key if the change records events.
func (c *change) note(ev KeyEvent, key []byte) {
	if c.hooked {
		c.events = append(c.events, keyEvent{ev, clone(key)})
	}
}

// tell tells the hook of c's events, once c has committed.
func (s *Store) tell(c *change) {
	if len(c.events) == 0 {
		return
	}
	if h := s.keyHook.Load(); h != nil {
		for _, e := range c.events {
			(*h)(e.ev, e.key)
		}
	}
	c.events = nil
}
