package main

import (
	"math"
	"slices"
	"time"
)

// base is the instant the program's clock counts from: every time the
// scenarios record is nanoseconds since base, on the monotonic clock.
var base = time.Now()

// now is the time since base, in nanoseconds.
func now() int64 { return int64(time.Since(base)) }

// window is the measured part of a run: operations that start at or after
// from and end at or before to are counted; the rest is warm-up and drain.
type window struct{ from, to int64 }

// newWindow opens a window that starts after warmup and lasts d.
func newWindow(warmup, d time.Duration) window {
	t := now() + int64(warmup)
	return window{from: t, to: t + int64(d)}
}

func (w window) holds(start, end int64) bool { return start >= w.from && end <= w.to }
func (w window) seconds() float64            { return float64(w.to-w.from) / 1e9 }

// sleepUntil sleeps until the program's clock reads t.
func sleepUntil(t int64) {
	if d := t - now(); d > 0 {
		time.Sleep(time.Duration(d))
	}
}

// latency is the summary of a set of durations, in milliseconds.
type latency struct {
	N                   int
	P50, P99, P999, Max float64
}

// summarize sorts the samples (nanoseconds) of every worker together and
// reads the percentiles: the nearest-rank definition, so p99 of 100 samples
// is the 99th smallest.
func summarize(perWorker [][]int64) latency {
	var all []int64
	for _, s := range perWorker {
		all = append(all, s...)
	}
	if len(all) == 0 {
		return latency{}
	}
	slices.Sort(all)
	at := func(q float64) float64 {
		i := int(math.Ceil(q*float64(len(all)))) - 1
		return float64(all[max(i, 0)]) / 1e6
	}
	return latency{N: len(all), P50: at(0.50), P99: at(0.99), P999: at(0.999), Max: float64(all[len(all)-1]) / 1e6}
}

// put writes the summary into m as <prefix>p50_ms and so on; nothing if
// there were no samples.
func (l latency) put(m map[string]float64, prefix string) {
	if l.N == 0 {
		return
	}
	m[prefix+"p50_ms"] = l.P50
	m[prefix+"p99_ms"] = l.P99
	m[prefix+"p999_ms"] = l.P999
	m[prefix+"max_ms"] = l.Max
}

// median of xs; NaN for none. Rounds are few (3 or 5), so the middle value,
// or the mean of the two middle ones, is the honest summary.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
