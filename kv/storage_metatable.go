package kv

import "encoding/binary"

// metaTable is a stripe's metadata cache: a hash table with open addressing
// and linear probing, whose slots hold each key's hash, metadata and key
// inline (and its value, when the store keeps it: see remember). A write looks its key up in it on every command, and it is what
// a write's own work is mostly waiting on: a Go map costs a cache miss for
// its control word, another for the slot and one for the key's bytes;
// here the slot is the first, found by the hash the key's data key
// already carries (no hashing), and only a slot whose hash matches has its
// key compared.
//
// It grows from a few slots, doubling while it is less than half full,
// up to twice its limit; at its limit, a put of a new key first forgets
// one it holds (the first at or after the new key's slot). The caller
// holds the stripe.
type metaTable struct {
	slots []metaSlot // a power of two of them, or none
	n     int        // full slots
	// gone is the last key of the stripe known to be absent from disk
	// (goneH its hash, when goneOK): deleted by a committed write, or not
	// found by a load under the stripe. A load of it skips Pebble, whose
	// Get of a key deleted and rewritten many times (a work queue's list,
	// emptied by every pop) steps over every version of it still in the
	// memtable. Any put or del of the key, and a reset, forget it.
	gone   []byte
	goneH  uint64
	goneOK bool
}

// markGone notes that key is absent from disk, forgetting what the table
// held of it.
func (t *metaTable) markGone(h uint64, key []byte) {
	t.del(h, key)
	t.gone, t.goneH, t.goneOK = append(t.gone[:0], key...), h, true
}

// isGone reports whether key is known absent from disk (see gone).
func (t *metaTable) isGone(h uint64, key []byte) bool {
	return t.goneOK && t.goneH == h && string(t.gone) == string(key)
}

// forgetGone forgets that key is absent, if it was the one noted.
func (t *metaTable) forgetGone(h uint64, key []byte) {
	if t.goneOK && t.goneH == h && string(t.gone) == string(key) {
		t.goneOK = false
	}
}

type metaSlot struct {
	h uint64
	m keyMeta
	// kv is the key and, when m.valued, the value after it: one buffer,
	// so that a key's value is overwritten in place when it fits.
	kv   []byte
	klen uint32
	full bool
}

func (sl *metaSlot) key() []byte   { return sl.kv[:sl.klen] }
func (sl *metaSlot) value() []byte { return sl.kv[sl.klen:] }

// dataKeyHash is the hash a data key carries (see appendDataKey).
func dataKeyHash(dk []byte) uint64 { return binary.BigEndian.Uint64(dk[1:prefixLen]) }

// home is the slot where h's probe starts; the low bits of h pick the
// stripe, so they are the same for all of a table's keys.
func (t *metaTable) home(h uint64) int { return int(h/numStripes) & (len(t.slots) - 1) }

// find returns the index of key's slot, or -1.
func (t *metaTable) find(h uint64, key []byte) int {
	if t.n == 0 {
		return -1
	}
	mask := len(t.slots) - 1
	for i := t.home(h); ; i = (i + 1) & mask {
		sl := &t.slots[i]
		if !sl.full {
			return -1
		}
		if sl.h == h && string(sl.key()) == string(key) {
			return i
		}
	}
}

func (t *metaTable) get(h uint64, key []byte) (keyMeta, bool) {
	if i := t.find(h, key); i >= 0 {
		return t.slots[i].m, true
	}
	return keyMeta{}, false
}

// getValue is get with the value, when m.valued: it is the table's memory,
// valid while the stripe is held and until the key's next put.
func (t *metaTable) getValue(h uint64, key []byte) (m keyMeta, value []byte, ok bool) {
	if i := t.find(h, key); i >= 0 {
		sl := &t.slots[i]
		if sl.m.valued {
			value = sl.value()
		}
		return sl.m, value, true
	}
	return keyMeta{}, nil, false
}

// put remembers m for key, holding at most limit keys (limit > 0), and
// value with it when m.valued (it may be the value getValue gave).
func (t *metaTable) put(h uint64, key []byte, m keyMeta, value []byte, limit int) {
	t.forgetGone(h, key)
	if !m.valued {
		value = nil
	}
	if i := t.find(h, key); i >= 0 {
		sl := &t.slots[i]
		sl.m = m
		sl.kv = append(sl.kv[:sl.klen], value...)
		return
	}
	if t.n >= limit {
		t.evict(h)
	}
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
	}
	mask := len(t.slots) - 1
	i := t.home(h)
	for t.slots[i].full {
		i = (i + 1) & mask
	}
	kv := make([]byte, len(key)+len(value))
	copy(kv[copy(kv, key):], value)
	t.slots[i] = metaSlot{h: h, m: m, kv: kv, klen: uint32(len(key)), full: true}
	t.n++
}

func (t *metaTable) del(h uint64, key []byte) {
	t.forgetGone(h, key)
	if i := t.find(h, key); i >= 0 {
		t.removeAt(i)
	}
}

func (t *metaTable) reset() {
	clear(t.slots)
	t.n = 0
	t.goneOK = false
}

// evict forgets the first key at or after h's slot.
func (t *metaTable) evict(h uint64) {
	mask := len(t.slots) - 1
	i := t.home(h)
	for !t.slots[i].full {
		i = (i + 1) & mask
	}
	t.removeAt(i)
}

// removeAt empties slot i and moves back the slots after it that would
// otherwise no longer be found from their home.
func (t *metaTable) removeAt(i int) {
	mask := len(t.slots) - 1
	for j := (i + 1) & mask; t.slots[j].full; j = (j + 1) & mask {
		// Slot j may fill the hole at i unless its home lies cyclically in
		// (i, j].
		if k := t.home(t.slots[j].h); (j-k)&mask < (j-i)&mask {
			continue
		}
		t.slots[i] = t.slots[j]
		i = j
	}
	t.slots[i] = metaSlot{}
	t.n--
}

func (t *metaTable) grow() {
	old := t.slots
	t.slots = make([]metaSlot, max(8, 2*len(old)))
	t.n = 0
	mask := len(t.slots) - 1
	for _, sl := range old {
		if !sl.full {
			continue
		}
		i := t.home(sl.h)
		for t.slots[i].full {
			i = (i + 1) & mask
		}
		t.slots[i] = sl
		t.n++
	}
}
