// fixgen writes a small data directory in kv's format 1, for kv's test
// of opening an older directory. Run against commit c1e98d3.
package main

import (
	"bytes"
	"fmt"
	"os"
	"time"

	"github.com/tenure-db/tenure/kv"
)

func main() {
	dir := os.Args[1]
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s, err := kv.Open(dir, kv.Options{Now: func() time.Time { return now }, Fsync: kv.FsyncAlways})
	must(err)
	for range 2 {
		_, err = s.BumpEpoch()
		must(err)
	}
	later := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	soon := now.Add(time.Hour).UnixMilli()
	set := func(k, v string, o kv.SetOptions) {
		_, err := s.Set([]byte(k), []byte(v), o)
		must(err)
	}
	set("plain", "hello", kv.SetOptions{})
	set("ttl:later", "stays", kv.SetOptions{Expiry: kv.Expiry{Mode: kv.ExpiryAt, At: later}})
	set("ttl:soon", "goes", kv.SetOptions{Expiry: kv.Expiry{Mode: kv.ExpiryAt, At: soon}})
	set("fenced", "f7", kv.SetOptions{Fence: 7})
	set("fenced:ttl", "f9", kv.SetOptions{Fence: 9, Expiry: kv.Expiry{Mode: kv.ExpiryAt, At: later}})
	set("big", string(bytes.Repeat([]byte("x"), 1000)), kv.SetOptions{})
	_, err = s.IncrBy([]byte("counter"), 41)
	must(err)
	_, err = s.Append([]byte("appended"), []byte("ab"))
	must(err)
	_, err = s.Append([]byte("appended"), []byte("cd"))
	must(err)
	_, err = s.SetBit([]byte("bits"), 9, true)
	must(err)
	must(s.Close())
	fmt.Println("wrote", dir)
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}
