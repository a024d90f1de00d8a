package kv

// Sorted sets' pops and draws (SPEC §13): ZPOPMIN, ZPOPMAX, ZMPOP,
// ZRANDMEMBER and ZSCAN.

// zpop takes up to count members from the low end (or the high, max).
func (co *coll) zpop(max bool, count int64) ([]ZMember, error) {
	out := []ZMember{}
	if count <= 0 || !co.exists() {
		return out, nil
	}
	take := func(sub, v []byte) (bool, error) {
		score, m := entry(sub, v)
		out = append(out, ZMember{clone(m), score})
		return int64(len(out)) < count, nil
	}
	var err error
	if max {
		err = co.eachReverse([]byte{spaceScores}, []byte{spaceScores + 1}, take)
	} else {
		err = co.each([]byte{spaceScores}, []byte{spaceScores + 1}, take)
	}
	for _, z := range out {
		co.del(memberSub(spaceMembers, z.Member))
		co.del(indexSub(z.Score, z.Member))
	}
	co.size -= int64(len(out))
	return out, err
}

// ZPop is ZPOPMIN and ZPOPMAX (max): up to count members, in order.
func (s *Store) ZPop(key []byte, max bool, count int64) ([]ZMember, error) {
	var out []ZMember
	err := s.zsetUpdate("zpop", key, func(co *coll) error {
		var err error
		out, err = co.zpop(max, count)
		return err
	})
	return out, err
}

// ZMPop is ZMPOP and BZPOPMIN/BZPOPMAX's attempt: up to count members
// from the first of keys that holds a zset; key is nil when none does.
// WRONGTYPE for a key of another type met before one that holds a zset.
func (s *Store) ZMPop(keys [][]byte, max bool, count int64) (key []byte, out []ZMember, err error) {
	err = s.updateMany(keys, false, func(c *change, items []item, idx []int) error {
		for i, k := range keys {
			co, err := s.openColl(c, &items[idx[i]], TypeZSet)
			if err != nil {
				return err
			}
			if !co.exists() {
				continue
			}
			if out, err = co.zpop(max, count); err != nil {
				return err
			}
			key = k
			co.finish()
			return nil
		}
		return nil
	})
	return key, out, wrap("zmpop", err)
}

// ZRandMember is ZRANDMEMBER key count: as HRANDFIELD chooses
// (collRead.randomMembers), each member followed by its score's bytes
// when withScores… decoded here into ZMembers.
func (s *Store) ZRandMember(key []byte, count int64) ([]ZMember, error) {
	out := []ZMember{}
	_, err := s.readColl(key, TypeZSet, func(cr *collRead) error {
		picks, err := cr.randomMembers(count, true)
		for i := 0; i+1 < len(picks); i += 2 {
			out = append(out, ZMember{picks[i], decodeScore(picks[i+1])})
		}
		return err
	})
	return out, wrap("zrandmember", err)
}

// ZScan is ZSCAN: members and their scores, by the member's hash.
func (s *Store) ZScan(key []byte, cursor uint64, match []byte, count int) (uint64, []ZMember, error) {
	next, raw, err := s.memberScan(key, TypeZSet, cursor, match, count, true)
	out := make([]ZMember, 0, len(raw)/2)
	for i := 0; i+1 < len(raw); i += 2 {
		out = append(out, ZMember{raw[i], decodeScore(raw[i+1])})
	}
	return next, out, wrap("zscan", err)
}
