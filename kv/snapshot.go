package kv

// Snapshots of the whole store, for a replicated log's compaction: a copy
// far behind the leader is sent one and replaces its keyspace with it. A
// snapshot holds every record, the epoch and the applied index included,
// as one Pebble snapshot saw them.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/cockroachdb/pebble/v2"
)

// snapshotMagic opens every snapshot stream; the format is the magic, then
// records of uvarint key length, key, uvarint value length, value.
const snapshotMagic = "tenure-kv-snapshot-1\n"

// Snapshot is a frozen view of the store, written out by WriteTo.
type Snapshot struct {
	snap *pebble.Snapshot
}

// Snapshot freezes the store as it is now. Close it when written.
func (s *Store) Snapshot() (*Snapshot, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	return &Snapshot{snap: s.db.NewSnapshot()}, nil
}

// WriteTo writes every record of the snapshot to w.
func (sn *Snapshot) WriteTo(w io.Writer) (int64, error) {
	bw := bufio.NewWriterSize(w, 64<<10)
	cw := &countingWriter{w: bw}
	if _, err := io.WriteString(cw, snapshotMagic); err != nil {
		return cw.n, err
	}
	iter, err := sn.snap.NewIter(&pebble.IterOptions{LowerBound: []byte{nsMeta}, UpperBound: []byte{nsEnd}})
	if err != nil {
		return cw.n, err
	}
	var hdr [binary.MaxVarintLen64]byte
	for valid := iter.First(); valid; valid = iter.Next() {
		v, err := iter.ValueAndErr()
		if err != nil {
			return cw.n, closeIter(iter, err)
		}
		for _, b := range [][]byte{iter.Key(), v} {
			n := binary.PutUvarint(hdr[:], uint64(len(b)))
			if _, err := cw.Write(hdr[:n]); err != nil {
				return cw.n, closeIter(iter, err)
			}
			if _, err := cw.Write(b); err != nil {
				return cw.n, closeIter(iter, err)
			}
		}
	}
	if err := closeIter(iter, iter.Error()); err != nil {
		return cw.n, err
	}
	return cw.n, bw.Flush()
}

// Close lets the snapshot go.
func (sn *Snapshot) Close() error { return sn.snap.Close() }

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// restoreBatchBytes is how much of a snapshot one batch of Restore holds.
const restoreBatchBytes = 4 << 20

// Restore replaces everything in the store with the snapshot read from r,
// made durable (fsync) before it returns. No other call may run meanwhile
// but reads, which see the old keyspace, then a part of the new one, then
// all of it; a Restore that fails leaves the store in between, and the
// caller must not serve it.
func (s *Store) Restore(r io.Reader) error {
	if s.closed.Load() {
		return ErrClosed
	}
	br := bufio.NewReaderSize(r, 64<<10)
	magic := make([]byte, len(snapshotMagic))
	if _, err := io.ReadFull(br, magic); err != nil || string(magic) != snapshotMagic {
		return fmt.Errorf("restore: not a tenure snapshot")
	}
	for i := range s.stripes {
		s.stripes[i].Lock()
		s.stripes[i].meta.reset()
	}
	defer func() {
		for i := range s.stripes {
			s.stripes[i].Unlock()
		}
	}()
	b := s.db.NewBatch()
	_ = b.DeleteRange([]byte{nsMeta}, []byte{nsEnd}, nil)
	for {
		key, err := readChunk(br)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			b.Close()
			return fmt.Errorf("restore: %w", err)
		}
		value, err := readChunk(br)
		if err != nil {
			b.Close()
			return fmt.Errorf("restore: %w", io.ErrUnexpectedEOF)
		}
		_ = b.Set(key, value, nil)
		if b.Len() >= restoreBatchBytes {
			if err := s.commit(b, pebble.NoSync); err != nil {
				b.Close()
				return fmt.Errorf("restore: %w", err)
			}
			b.Close()
			b = s.db.NewBatch()
		}
	}
	err := s.commit(b, pebble.Sync)
	b.Close()
	if err == nil {
		err = s.fsyncWAL()
	}
	if err == nil {
		// A snapshot of an older format is upgraded as Open would
		// upgrade it; one of a newer format is refused.
		err = checkFormat(s.db)
	}
	if err == nil {
		var epoch uint64
		if epoch, err = s.readUint64(metaEpoch); err == nil {
			s.epoch.Store(epoch)
			err = s.recover()
		}
	}
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	return nil
}

func readChunk(br *bufio.Reader) ([]byte, error) {
	n, err := binary.ReadUvarint(br)
	if err != nil {
		return nil, err
	}
	if n > 1<<31 {
		return nil, fmt.Errorf("record of %d bytes", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(br, b); err != nil {
		return nil, io.ErrUnexpectedEOF
	}
	return b, nil
}
