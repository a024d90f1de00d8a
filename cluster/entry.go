package cluster

import (
	"encoding/binary"
	"errors"
)

// Entry is a keyspace write as the log carries it: the leader's clock
// when it was proposed (so that every node judges expiry alike), and the
// commands, one or a transaction's queue (Exec), each as its arguments.
// Proto is the protocol of the reply wanted (2 or 3); 0 asks for Go values
// (an in-process DB.Do). What the commands mean is the Applier's business.
type Entry struct {
	NowMs int64
	Proto int
	Exec  bool
	Cmds  [][][]byte
}

// The entries of the log. Each opens with its kind and the leader's clock
// (Unix ms) when it was proposed; every node applies it at that instant.
const (
	kindCommands byte = 1 // one command, or a transaction's queue: Entry
	kindEpoch    byte = 2 // the next epoch (LOCK-14)
	kindSweep    byte = 3 // delete up to n keys expired at the entry's instant
	kindGroup    byte = 4 // the Entries of several proposals, applied as one transaction
)

// entry is an entry decoded.
type entry struct {
	kind  byte
	nowMs int64
	cmd   Entry   // kindCommands
	group []Entry // kindGroup
	limit int     // kindSweep
}

var errBadEntry = errors.New("cluster: malformed log entry")

func encodeCommands(e Entry) []byte {
	b := []byte{kindCommands}
	b = binary.AppendVarint(b, e.NowMs)
	return appendCommands(b, e)
}

// encodeGroup is the entry of several proposals (group.go), each applied
// at nowMs, the instant the group was proposed.
func encodeGroup(nowMs int64, es []Entry) []byte {
	b := []byte{kindGroup}
	b = binary.AppendVarint(b, nowMs)
	b = binary.AppendUvarint(b, uint64(len(es)))
	for _, e := range es {
		b = appendCommands(b, e)
	}
	return b
}

// appendCommands appends what follows a commands entry's instant.
func appendCommands(b []byte, e Entry) []byte {
	flags := byte(e.Proto)
	if e.Exec {
		flags |= 0x80
	}
	b = append(b, flags)
	b = binary.AppendUvarint(b, uint64(len(e.Cmds)))
	for _, args := range e.Cmds {
		b = binary.AppendUvarint(b, uint64(len(args)))
		for _, a := range args {
			b = binary.AppendUvarint(b, uint64(len(a)))
			b = append(b, a...)
		}
	}
	return b
}

func encodeEpoch(nowMs int64) []byte {
	return binary.AppendVarint([]byte{kindEpoch}, nowMs)
}

func encodeSweep(nowMs int64, limit int) []byte {
	b := binary.AppendVarint([]byte{kindSweep}, nowMs)
	return binary.AppendUvarint(b, uint64(limit))
}

func decodeEntry(b []byte) (entry, error) {
	d := decoder{b: b}
	var e entry
	e.kind = d.byte()
	e.nowMs = d.varint()
	switch e.kind {
	case kindCommands:
		e.cmd = d.commands(e.nowMs)
	case kindGroup:
		n := d.uvarint()
		if n == 0 || n > uint64(len(d.b)) {
			return entry{}, errBadEntry
		}
		e.group = make([]Entry, 0, n)
		for i := uint64(0); i < n && d.ok(); i++ {
			e.group = append(e.group, d.commands(e.nowMs))
		}
	case kindEpoch:
	case kindSweep:
		e.limit = int(d.uvarint())
	default:
		return entry{}, errBadEntry
	}
	if !d.ok() || len(d.b) != 0 {
		return entry{}, errBadEntry
	}
	return e, nil
}

// commands decodes what appendCommands appended.
func (d *decoder) commands(nowMs int64) Entry {
	flags := d.byte()
	e := Entry{NowMs: nowMs, Proto: int(flags & 0x7f), Exec: flags&0x80 != 0}
	n := d.uvarint()
	for i := uint64(0); i < n && d.ok(); i++ {
		argc := d.uvarint()
		if argc == 0 || argc > uint64(len(d.b)) {
			d.bad = true
			return Entry{}
		}
		args := make([][]byte, argc)
		for j := range args {
			args[j] = d.bytes(d.uvarint())
		}
		e.Cmds = append(e.Cmds, args)
	}
	return e
}

type decoder struct {
	b   []byte
	bad bool
}

func (d *decoder) ok() bool { return !d.bad }

func (d *decoder) byte() byte {
	if len(d.b) == 0 {
		d.bad = true
		return 0
	}
	x := d.b[0]
	d.b = d.b[1:]
	return x
}

func (d *decoder) varint() int64 {
	x, n := binary.Varint(d.b)
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.b = d.b[n:]
	return x
}

func (d *decoder) uvarint() uint64 {
	x, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.b = d.b[n:]
	return x
}

func (d *decoder) bytes(n uint64) []byte {
	if d.bad || n > uint64(len(d.b)) {
		d.bad = true
		return nil
	}
	x := d.b[:n:n]
	d.b = d.b[n:]
	return x
}
