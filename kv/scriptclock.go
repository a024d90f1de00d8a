package kv

// NowMs is the store's time in unix ms as its commands judge expiry: in a
// transaction's view (EXEC, a script, an entry of a cluster's log) the one
// instant the whole transaction runs at. A script reads its clock and
// seeds its randomness from it, so that every node of a cluster, applying
// the same entry at the same instant, decides alike (SPEC §13).
func (s *Store) NowMs() int64 { return s.nowMs() }
