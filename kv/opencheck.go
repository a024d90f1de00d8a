package kv

// What Open checks before it changes anything in a data directory: that it
// can write there, and that the directory's format is one it knows.
//
// The format: the layout of keys and records (see the package doc) has a
// version, kept in the internal namespace. A store opens only a format it
// knows, and refuses a directory that a newer tenure wrote before it
// changes anything in it (no sweep, no epoch).

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
// a change would make older code misread the directory.
const formatVersion = 1

var metaFormat = []byte{nsMeta, 'f', 'o', 'r', 'm', 'a', 't'}

// ErrNewerFormat: Open found a data directory written in a format newer
// than this build knows. Nothing in the directory was changed.
var ErrNewerFormat = errors.New("data directory is in a newer format than this tenure knows")

// checkFormat refuses a newer format; a directory without the record (new,
// or written before the record existed: format 1) is given it, made durable
// by the epoch's fsync that follows every open.
func checkFormat(db *pebble.DB) error {
	raw, closer, err := db.Get(metaFormat)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		var buf [8]byte
		binary.BigEndian.PutUint64(buf[:], formatVersion)
		if err := db.Set(metaFormat, buf[:], pebble.NoSync); err != nil {
			return fmt.Errorf("write format: %w", err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("read format: %w", err)
	}
	defer closer.Close()
	if len(raw) != 8 {
		return fmt.Errorf("corrupt format record of %d bytes", len(raw))
	}
	if v := binary.BigEndian.Uint64(raw); v > formatVersion {
		return fmt.Errorf("%w: format %d, this build knows up to %d; open it with a newer tenure", ErrNewerFormat, v, formatVersion)
	}
	return nil
}
