package kv

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// The point reads and writes of hashes, sets, sorted sets and lists run
// on a pipeline's view as the keyspace's do (SPEC §13 collections, resp's
// effBatch rows): each sees what the commands before it wrote, the store
// outside sees none of it until Commit, and the whole run is one WAL
// write(2) and, with FsyncAlways, one fsync.

// pipeColl runs one of every collection point write and read on p's view
// and checks what the reads see.
func pipeColl(t *testing.T, v *Store) {
	t.Helper()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s in a pipeline: %v", what, err)
		}
	}
	_, err := v.HSet([]byte("h"), bs("f", "1", "g", "x"))
	must("HSET", err)
	n, err := v.HIncrBy([]byte("h"), []byte("f"), 4)
	must("HINCRBY", err)
	if n != 5 {
		t.Fatalf("HINCRBY after HSET f 1 in the pipeline = %d; want 5", n)
	}
	if got, ok, err := v.HGet([]byte("h"), []byte("g")); err != nil || !ok || string(got) != "x" {
		t.Fatalf("HGET h g in the pipeline = %q, %v, %v; want x", got, ok, err)
	}
	_, err = v.HDel([]byte("h"), bs("g"))
	must("HDEL", err)
	_, err = v.SAdd([]byte("s"), bs("a", "b"))
	must("SADD", err)
	_, err = v.SRem([]byte("s"), bs("a"))
	must("SREM", err)
	if in, err := v.SIsMember([]byte("s"), []byte("b")); err != nil || !in {
		t.Fatalf("SISMEMBER s b in the pipeline = %v, %v", in, err)
	}
	_, err = v.ZAdd([]byte("z"), ZAddFlags{}, []float64{1, 2}, bs("a", "b"))
	must("ZADD", err)
	r, err := v.ZAdd([]byte("z"), ZAddFlags{Incr: true}, []float64{10}, bs("a"))
	must("ZINCRBY", err)
	if r.Score != 11 {
		t.Fatalf("ZINCRBY z 10 a after ZADD z 1 a = %v; want 11", r.Score)
	}
	_, err = v.ZRem([]byte("z"), bs("b"))
	must("ZREM", err)
	if sc, ok, err := v.ZMScore([]byte("z"), bs("a", "b")); err != nil || !ok[0] || ok[1] || sc[0] != 11 {
		t.Fatalf("ZMSCORE z a b in the pipeline = %v %v, %v; want [11 -]", sc, ok, err)
	}
	_, err = v.Push([]byte("l"), false, false, bs("x", "y", "z"))
	must("RPUSH", err)
	_, err = v.Push([]byte("l"), true, false, bs("w"))
	must("LPUSH", err)
	popped, err := v.Pop([]byte("l"), false, 1)
	must("RPOP", err)
	if len(popped) != 1 || string(popped[0]) != "z" {
		t.Fatalf("RPOP l after RPUSH x y z = %q; want z", popped)
	}
	must("LSET", v.LSet([]byte("l"), 1, []byte("X")))
	if e, ok, err := v.LIndex([]byte("l"), 1); err != nil || !ok || string(e) != "X" {
		t.Fatalf("LINDEX l 1 after LSET in the pipeline = %q, %v, %v; want X", e, ok, err)
	}
	if n, err := v.LLen([]byte("l")); err != nil || n != 3 {
		t.Fatalf("LLEN l in the pipeline = %d, %v; want 3", n, err)
	}
}

// checkColl checks, on the store outside, what pipeColl left.
func checkColl(t *testing.T, s *Store) {
	t.Helper()
	if h, err := s.HGetAll([]byte("h"), true, true); err != nil || !slices.Equal(strs(h), []string{"f", "5"}) {
		t.Errorf("HGETALL h = %q, %v; want [f 5]", h, err)
	}
	if in, err := s.SIsMember([]byte("s"), []byte("b")); err != nil || !in {
		t.Errorf("SISMEMBER s b = %v, %v", in, err)
	}
	if in, err := s.SIsMember([]byte("s"), []byte("a")); err != nil || in {
		t.Errorf("SISMEMBER s a (removed) = %v, %v", in, err)
	}
	if n, err := s.ZCard([]byte("z")); err != nil || n != 1 {
		t.Errorf("ZCARD z = %d, %v; want 1", n, err)
	}
	if l, err := s.LRange([]byte("l"), 0, -1); err != nil || !slices.Equal(strs(l), []string{"w", "X", "y"}) {
		t.Errorf("LRANGE l = %q, %v; want [w X y]", l, err)
	}
}

func TestPipelineOfCollectionsIsOneCommit(t *testing.T) {
	for _, mode := range []FsyncMode{FsyncEverysec, FsyncAlways} {
		t.Run(mode.String(), func(t *testing.T) {
			s, writes, syncs := openCounted(t, mode)
			// What Open wrote may still be in Pebble's WAL buffer, which
			// its WAL goroutine writes when it gets to it: write it now.
			if err := s.Sync(); err != nil {
				t.Fatal(err)
			}
			p := s.NewPipeline()
			before, beforeSyncs := writes.Load(), syncs.Load()
			pipeColl(t, p.View())
			for _, k := range []string{"h", "s", "z", "l"} {
				if n, err := s.Exists(bs(k)); err != nil || n != 0 {
					t.Fatalf("the store sees %s before Commit: %d, %v", k, n, err)
				}
			}
			if err := p.Commit(); err != nil {
				t.Fatal(err)
			}
			if n := writes.Load() - before; n != 1 {
				t.Errorf("a pipeline of 16 collection writes made %d WAL writes; want 1", n)
			}
			if n := syncs.Load() - beforeSyncs; mode == FsyncAlways && n != 1 {
				t.Errorf("a pipeline of 16 collection writes made %d fsyncs with FsyncAlways; want 1", n)
			}
			checkColl(t, s)
			if n, _ := s.DBSize(); n != 4 {
				t.Errorf("DBSIZE = %d; want 4", n)
			}
		})
	}
}

// A collection command that fails in a pipeline (WRONGTYPE, HINCRBY of a
// word, LSET past the end) writes nothing and leaves the writes before
// and after it in (LOCK-12's rule for every pipelined command).
func TestPipelineCollectionCommandsFailAlone_LOCK12(t *testing.T) {
	ts := openTest(t)
	p := ts.NewPipeline()
	v := p.View()
	if _, err := v.HSet([]byte("h"), bs("f", "word")); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Push([]byte("h"), false, false, bs("x")); !errors.Is(err, ErrWrongType) {
		t.Fatalf("RPUSH onto a hash in a pipeline: %v; want ErrWrongType", err)
	}
	if _, err := v.ZAdd([]byte("h"), ZAddFlags{}, []float64{1}, bs("m")); !errors.Is(err, ErrWrongType) {
		t.Fatalf("ZADD onto a hash in a pipeline: %v; want ErrWrongType", err)
	}
	if _, err := v.HIncrBy([]byte("h"), []byte("f"), 1); !errors.Is(err, ErrHashNotInteger) {
		t.Fatalf("HINCRBY of a word in a pipeline: %v; want ErrHashNotInteger", err)
	}
	if _, err := v.Push([]byte("l"), false, false, bs("a")); err != nil {
		t.Fatal(err)
	}
	if err := v.LSet([]byte("l"), 5, []byte("b")); !errors.Is(err, ErrIndexOutOfRange) {
		t.Fatalf("LSET past the end in a pipeline: %v; want ErrIndexOutOfRange", err)
	}
	if _, err := v.HSet([]byte("h"), bs("g", "2")); err != nil {
		t.Fatal(err)
	}
	if err := p.Commit(); err != nil {
		t.Fatal(err)
	}
	if h, err := ts.HMGet([]byte("h"), bs("f", "g")); err != nil || !slices.Equal(strs(h), []string{"word", "2"}) {
		t.Errorf("HMGET h f g = %q, %v; want [word 2]", h, err)
	}
	if l, err := ts.LRange([]byte("l"), 0, -1); err != nil || !slices.Equal(strs(l), []string{"a"}) {
		t.Errorf("LRANGE l = %q, %v; want [a]", l, err)
	}
	ts.checkCounters()
}

// A collection emptied and made again inside one pipeline gets a new
// generation: the old members are not seen again, and reclaim leaves only
// the new ones (SPEC §13 Storage).
func TestPipelineCollectionGenerations(t *testing.T) {
	ts := openTest(t)
	p := ts.NewPipeline()
	v := p.View()
	steps := []func() error{
		func() error { _, err := v.Push([]byte("q"), false, false, bs("a", "b")); return err },
		func() error { _, err := v.Pop([]byte("q"), true, 2); return err },
		func() error { _, err := v.Push([]byte("q"), false, false, bs("c")); return err },
		func() error { _, err := v.ZAdd([]byte("z"), ZAddFlags{}, []float64{1}, bs("old")); return err },
		func() error { _, err := v.Del(bs("z")); return err },
		func() error { _, err := v.ZAdd([]byte("z"), ZAddFlags{}, []float64{2}, bs("new")); return err },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	if l, err := v.LRange([]byte("q"), 0, -1); err != nil || !slices.Equal(strs(l), []string{"c"}) {
		t.Fatalf("LRANGE q in the pipeline = %q, %v; want [c]", l, err)
	}
	if err := p.Commit(); err != nil {
		t.Fatal(err)
	}
	if l, err := ts.LRange([]byte("q"), 0, -1); err != nil || !slices.Equal(strs(l), []string{"c"}) {
		t.Errorf("LRANGE q = %q, %v; want [c]", l, err)
	}
	if sc, ok, err := ts.ZMScore([]byte("z"), bs("old", "new")); err != nil || ok[0] || !ok[1] || sc[1] != 2 {
		t.Errorf("ZMSCORE z old new = %v %v, %v; want [- 2]", sc, ok, err)
	}
	if err := ts.reclaimAll(); err != nil {
		t.Fatal(err)
	}
	if n := ts.raw(nsMember); n != 3 { // q's c, z's new member and its index entry
		t.Errorf("after reclaim %d member records; want 3", n)
	}
	ts.checkCounters()
}

// Pipelines of pushes and pops race writers on their own and
// transactions on the same lists: every element pushed is popped or left,
// none twice, none lost (the stripes rule: a pipeline never waits for a
// stripe while holding one).
func TestPipelinesOfPushesConcurrentWithWriters(t *testing.T) {
	ts := openTest(t)
	const workers, rounds, keys = 6, 30, 5
	key := func(i int) []byte { return fmt.Appendf(nil, "q%d", i%keys) }
	var mu sync.Mutex
	popped := map[string]int{}
	concurrently(t, workers, func(w int) error {
		p := ts.NewPipeline()
		for r := range rounds {
			var err error
			for i := range keys {
				el := fmt.Appendf(nil, "%d:%d:%d", w, r, i)
				k := key(r + i*3)
				switch w % 3 {
				case 0:
					_, err = p.View().Push(k, false, false, [][]byte{el})
				case 1:
					_, err = ts.Push(k, true, false, [][]byte{el})
				case 2:
					var out [][]byte
					out, err = p.View().Pop(k, true, 1)
					mu.Lock()
					for _, o := range out {
						popped[string(o)]++
					}
					mu.Unlock()
				}
				if err != nil {
					break
				}
			}
			if err == nil {
				err = p.Commit()
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	for i := range keys {
		rest, err := ts.LRange(key(i), 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range rest {
			popped[string(o)]++
		}
	}
	want := 2 * (workers / 3) * rounds * keys
	if len(popped) != want {
		t.Errorf("%d distinct elements popped or left; want %d pushed", len(popped), want)
	}
	for el, n := range popped {
		if n != 1 {
			t.Errorf("element %s seen %d times", el, n)
		}
	}
	ts.checkCounters()
}

// With FsyncAlways, the collection writes a pipeline's Commit
// acknowledged survive a crash that keeps only what was fsynced.
func TestPipelineOfCollectionsSurvivesCrash(t *testing.T) {
	fs := vfs.NewCrashableMem()
	s := openOn(t, fs, FsyncAlways)
	p := s.NewPipeline()
	pipeColl(t, p.View())
	if err := p.Commit(); err != nil {
		t.Fatal(err)
	}
	c := openOn(t, fs.CrashClone(vfs.CrashCloneCfg{}), FsyncAlways)
	checkColl(t, c)
}
