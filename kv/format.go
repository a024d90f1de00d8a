package kv

// The data directory's format: the layout of keys and records (see the
// package doc) has a version, kept in the internal namespace. A store opens
// only a format it knows, and refuses a directory that a newer tenure wrote
// before it changes anything in it (no sweep, no epoch).

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

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
