package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Scenario 10, pub/sub fan-out (issue 36): publishers PUBLISH to one
// channel with subs subscribers, one round trip at a time; each message
// carries the instant it was sent, and each subscriber, a raw connection
// read as fast as it can be, takes the delivery latency of every message
// it gets. Messages delivered per second count every copy.

// pubsubPublishers publish concurrently, so that the server, not one
// client's round trip, sets the pace.
const pubsubPublishers = 4

func pubsubFanout(subs int) scenarioFunc {
	return func(ctx context.Context, r *run) (map[string]float64, error) {
		conns := make([]net.Conn, subs)
		defer func() {
			for _, nc := range conns {
				if nc != nil {
					nc.Close()
				}
			}
		}()
		for i := range conns {
			nc, err := net.DialTimeout("tcp", r.p.addr, 10*time.Second)
			if err != nil {
				return nil, fmt.Errorf("subscriber %d: %w", i, err)
			}
			conns[i] = nc
			if _, err := io.WriteString(nc, "SUBSCRIBE fanout\r\n"); err != nil {
				return nil, err
			}
		}
		// Every subscriber has its confirmation before the first publish.
		readers := make([]*bufio.Reader, subs)
		for i, nc := range conns {
			readers[i] = bufio.NewReaderSize(nc, 64<<10)
			nc.SetReadDeadline(time.Now().Add(10 * time.Second))
			for range 6 { // *3, $9, subscribe, $7, fanout, :1
				if _, err := readers[i].ReadSlice('\n'); err != nil {
					return nil, fmt.Errorf("subscriber %d's confirmation: %w", i, err)
				}
			}
			nc.SetReadDeadline(time.Time{})
		}
		c := newClient(r.p.addr, pubsubPublishers+1, 16<<10)
		defer c.Close()
		if err := r.warm(ctx, c, pubsubPublishers); err != nil {
			return nil, err
		}

		w := newWindow(r.cfg.warmup, r.cfg.duration)
		cpu := r.meter(w)
		var delivered atomic.Int64
		samples := make([][]int64, subs)
		var fail failures
		var subsDone sync.WaitGroup
		for i := range subs {
			subsDone.Go(func() {
				br := readers[i]
				for {
					// *3, $7, message, $n, fanout, $n, payload
					var payload []byte
					for line := range 7 {
						l, err := br.ReadSlice('\n')
						if err != nil {
							return // closed at the end
						}
						if line == 6 {
							payload = l[:len(l)-2]
						}
					}
					at := now()
					sent, err := strconv.ParseInt(string(payload), 10, 64)
					if err != nil {
						fail.add(fmt.Errorf("subscriber %d: a message %q", i, payload))
						continue
					}
					if w.holds(sent, at) {
						delivered.Add(1)
						samples[i] = append(samples[i], at-sent)
					}
				}
			})
		}
		var published atomic.Int64
		var pubs sync.WaitGroup
		for range pubsubPublishers {
			pubs.Go(func() {
				for ctx.Err() == nil {
					start := now()
					if start >= w.to {
						return
					}
					n, err := c.Publish(ctx, "fanout", strconv.FormatInt(start, 10)).Result()
					switch {
					case err != nil:
						fail.add(err)
					case n != int64(subs):
						fail.add(fmt.Errorf("PUBLISH reached %d of %d subscribers", n, subs))
					case w.holds(start, now()):
						published.Add(1)
					}
				}
			})
		}
		pubs.Wait()
		// What is still on its way arrives within a second, or is late.
		time.Sleep(time.Second)
		for _, nc := range conns {
			nc.Close()
		}
		subsDone.Wait()
		conns = nil
		lat := summarize(samples)
		m := map[string]float64{
			"delivered_per_sec": float64(delivered.Load()) / w.seconds(),
			"published_per_sec": float64(published.Load()) / w.seconds(),
		}
		lat.put(m, "")
		if err := cpu(m, int(delivered.Load())); err != nil {
			return nil, err
		}
		return m, fail.verdict(m, lat.N)
	}
}
