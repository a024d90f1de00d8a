package kv

// A key's type, and the one place that decides WRONGTYPE (as Kvrocks's
// Database::ParseMetadata does): every command that cares what a key
// holds asks Type.check (or record.is, slot.is), never compares types
// itself.

import "strings"

// Type is what a key holds, as TYPE names it.
type Type uint8

// The types. Only strings are stored yet; the others' codes and their
// record layout (a header of generation and size, members in nsMember)
// are reserved for the issues that add their commands.
const (
	TypeString Type = iota // the zero value: a record{} is a string
	TypeHash
	TypeSet
	TypeZSet
	TypeList
	numTypes

	typeAny Type = 0xff // for a read that takes any type (view)
)

// typeCodes are the types' codes, the first byte of a metadata record.
// A string's is 0x01, the byte that began every record of format 1, so
// that a format 1 record is a string record of format 2 as it stands.
var typeCodes = [numTypes]byte{
	TypeString: 0x01,
	TypeHash:   0x02,
	TypeSet:    0x03,
	TypeZSet:   0x04,
	TypeList:   0x05,
}

var typeNames = [numTypes]string{
	TypeString: "string",
	TypeHash:   "hash",
	TypeSet:    "set",
	TypeZSet:   "zset",
	TypeList:   "list",
}

func (t Type) code() byte { return typeCodes[t] }

// String is the name TYPE answers.
func (t Type) String() string {
	if t < numTypes {
		return typeNames[t]
	}
	return "unknown"
}

// typeOfCode is the type whose code is c.
func typeOfCode(c byte) (Type, bool) {
	for t, tc := range typeCodes {
		if tc == c {
			return Type(t), true
		}
	}
	return 0, false
}

// ParseType reads a type's name as TYPE writes it (any case), for SCAN …
// TYPE; ok is false for a name that is no type.
func ParseType(name string) (t Type, ok bool) {
	for i, n := range typeNames {
		if strings.EqualFold(n, name) {
			return Type(i), true
		}
	}
	return 0, false
}

// check is WRONGTYPE, decided: a command for type want, met with a live
// key holding type has, fails with ErrWrongType. A missing or expired key
// is of every type (the command creates it, or finds nothing).
func (want Type) check(live bool, has Type) error {
	if live && has != want {
		return ErrWrongType
	}
	return nil
}

// is is Type.check of a record that was read live.
func (r *record) is(want Type) error { return want.check(true, r.typ) }

// is is Type.check of a key's state as a command read it.
func (sl *slot) is(want Type) error { return want.check(sl.live, sl.rec.typ) }
