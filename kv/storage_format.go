package kv

// What Open checks before it changes anything in a data directory: that it
// can write there, and that the directory's format is one it knows.
//
// The format: the layout of keys and records (see the package doc) has a
// version, kept in the internal namespace. A store opens only a format it
// knows, and refuses a directory that a newer tenure wrote before it
// changes anything in it (no sweep, no epoch).
//
// The formats:
//
//	1  one record kind: a string, its record beginning with the byte 0x01
//	   (a directory written before the format record existed is format 1)
//	2  typed records: a record's first byte is its type's code, a
//	   string's being 0x01; collections' members in nsMember under a
//	   generation, stale generations in nsReclaim (see the package doc)
//
// Format 1 opens as it stands: its records are format 2's string records,
// byte for byte, and it has nothing in the namespaces format 2 added. Open
// only rewrites the format record to 2, so that an older tenure, which
// would read a hash's record as corrupt, refuses the directory from then on.

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// writeProbe begins the name of the file checkWritable creates and
// removes; a random end keeps two opens at once apart.
const writeProbe = "tenure-write-probe-"

// checkWritable makes dir if it is missing and insists that a file can be
// made in it. Pebble must not be the first to find out: an open that
// replays a WAL flushes it, and Pebble retries a flush that fails for ever,
// so Open would hang on a directory it cannot write.
func checkWritable(fs vfs.FS, dir string) error {
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var end [8]byte
	rand.Read(end[:]) // never fails (crypto/rand)
	probe := fs.PathJoin(dir, writeProbe+hex.EncodeToString(end[:]))
	f, err := fs.Create(probe, vfs.WriteCategoryUnspecified)
	if err != nil {
		return fmt.Errorf("the data directory is not writable: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("the data directory is not writable: %w", err)
	}
	return fs.Remove(probe)
}

// formatVersion is the layout this package reads and writes. Raise it when
// a change would make older code misread the directory, and say above how
// the formats before it open.
const formatVersion = 2

var metaFormat = []byte{nsMeta, 'f', 'o', 'r', 'm', 'a', 't'}

// ErrNewerFormat: Open found a data directory written in a format newer
// than this build knows. Nothing in the directory was changed.
var ErrNewerFormat = errors.New("data directory is in a newer format than this tenure knows")

// checkFormat refuses a newer format, and gives a directory of an older
// one (or without the record: new, or format 1 from before the record
// existed) the record of formatVersion, made durable by the epoch's fsync
// that follows every open. No format before it needs more than that (see
// the formats above).
func checkFormat(db *pebble.DB) error {
	raw, closer, err := db.Get(metaFormat)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		return writeFormat(db)
	case err != nil:
		return fmt.Errorf("read format: %w", err)
	}
	n := len(raw)
	var v uint64
	if n == 8 {
		v = binary.BigEndian.Uint64(raw)
	}
	_ = closer.Close()
	switch {
	case n != 8:
		return fmt.Errorf("corrupt format record of %d bytes", n)
	case v > formatVersion:
		return fmt.Errorf("%w: format %d, this build knows up to %d; open it with a newer tenure", ErrNewerFormat, v, formatVersion)
	case v < formatVersion:
		return writeFormat(db)
	}
	return nil
}

func writeFormat(db *pebble.DB) error {
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], formatVersion)
	if err := db.Set(metaFormat, buf[:], pebble.NoSync); err != nil {
		return fmt.Errorf("write format: %w", err)
	}
	return nil
}
