package kv

// Generations and the reclaim of stale members (SPEC §13 Storage).
//
// A collection's members are records of their own, under its generation
// (memberKey): a number the store hands out once, never twice, when the
// collection is made. Its metadata record names the generation, so a read
// of a member looks under that one alone. Deleting the collection (DEL,
// UNLINK, expiry, an overwrite by SET, RENAME onto it) deletes only the
// metadata record and adds the generation to the reclaim index, in the
// same batch: O(1) in the foreground, whatever its size, and no member of
// that generation is ever read again, as no metadata record names it. The
// background goroutine (runSweeper) then deletes each stale generation's
// members with one range deletion, and its index entry with it. FLUSHALL
// deletes every namespace of user data, members and index included, with
// one range deletion.
//
// Generations are handed out from a counter in memory, which Open (and
// Restore) set to the largest generation on disk: the last member record's
// or the last reclaim entry's, both in generation order. A generation made
// and dropped before any member of it reached the disk may be handed out
// again after a restart; nothing of it is left to confuse. Each copy of a
// replicated keyspace hands out its own: generations are never visible, and
// a snapshot carries its records and generations together.

import (
	"encoding/binary"
	"math"

	"github.com/cockroachdb/pebble/v2"
)

// reclaimRound is how many stale generations one pass reclaims at most.
const reclaimRound = 64

// newGeneration hands out a generation for a collection about to be made.
func (s *Store) newGeneration() uint64 { return s.generation.Add(1) }

// initGeneration sets the generation counter from the disk.
func (s *Store) initGeneration() error {
	var top uint64
	for _, ns := range []byte{nsMember, nsReclaim} {
		iter, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{ns}, UpperBound: []byte{ns + 1}})
		if err != nil {
			return err
		}
		if iter.Last() {
			if k := iter.Key(); len(k) >= prefixLen {
				top = max(top, binary.BigEndian.Uint64(k[1:prefixLen]))
			}
		}
		if err := closeIter(iter, iter.Error()); err != nil {
			return err
		}
	}
	s.generation.Store(top)
	return nil
}

// stale adds old's generation to the reclaim index, old being a
// collection's record that is being deleted or replaced by a record that
// does not carry on its generation.
func (c *change) stale(old record, next *record) {
	g := old.generation()
	if next != nil && next.typ == old.typ && next.generation() == g {
		return
	}
	_ = c.batch().Set(reclaimKey(g), nil, nil)
}

// reclaim deletes the members of up to limit stale generations, and their
// entries in the reclaim index; it returns how many it reclaimed. No stripe
// is needed: no metadata record names a stale generation, and none will.
// A reclaim lost in a crash is done again, as its entry is still there.
func (s *Store) reclaim(limit int) (int, error) {
	iter, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{nsReclaim}, UpperBound: []byte{nsReclaim + 1}})
	if err != nil {
		return 0, err
	}
	var gens []uint64
	for valid := iter.First(); valid && len(gens) < limit; valid = iter.Next() {
		if k := iter.Key(); len(k) == prefixLen {
			gens = append(gens, binary.BigEndian.Uint64(k[1:]))
		}
	}
	if err := closeIter(iter, iter.Error()); err != nil || len(gens) == 0 {
		return 0, err
	}
	b := s.db.NewBatch()
	defer b.Close()
	for _, g := range gens {
		end := []byte{nsMember + 1}
		if g < math.MaxUint64 {
			end = memberPrefix(g + 1)
		}
		_ = b.DeleteRange(memberPrefix(g), end, nil)
		_ = b.Delete(reclaimKey(g), nil)
	}
	if err := s.commit(b, pebble.NoSync); err != nil {
		return 0, err
	}
	s.markDirty()
	return len(gens), nil
}

// reclaimAll reclaims until no stale generation is left, or the store stops.
func (s *Store) reclaimAll() error {
	for {
		select {
		case <-s.stop:
			return nil
		default:
		}
		n, err := s.reclaim(reclaimRound)
		if err != nil || n < reclaimRound {
			return err
		}
	}
}

// copyMembers writes a copy of the members of collection r under a new
// generation into c, for COPY, and returns r's record for that copy. It
// costs a write per member, as Redis's COPY costs a copy of each.
func (s *Store) copyMembers(c *change, r record) (record, error) {
	from, gen := r.generation(), s.newGeneration()
	iter, err := s.reader().NewIter(&pebble.IterOptions{LowerBound: memberPrefix(from), UpperBound: memberPrefix(from + 1)})
	if err != nil {
		return record{}, err
	}
	b := c.batch()
	for valid := iter.First(); valid; valid = iter.Next() {
		v, err := iter.ValueAndErr()
		if err != nil {
			return record{}, closeIter(iter, err)
		}
		_ = b.Set(memberKey(gen, iter.Key()[prefixLen:]), v, nil)
	}
	if err := closeIter(iter, iter.Error()); err != nil {
		return record{}, err
	}
	r.value = clone(r.value)
	binary.BigEndian.PutUint64(r.value, gen)
	return r, nil
}
