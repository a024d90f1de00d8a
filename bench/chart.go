package main

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// colors of the servers in the chart.
var colors = map[string]string{"tenure": "#1f6fb4", "redis-aof": "#c0392b", "redis": "#e8938a", "etcd": "#419eda", "tenure-dashboard": "#7fb3e0"}

// chart draws the medians as an SVG: one row per scenario, its throughput
// (or bytes per lease) on the left on a linear scale, its latency
// percentiles on the right on a log scale.
func (r *report) chart() []byte {
	const (
		width  = 1000
		rowH   = 160
		pad    = 16
		top    = 64
		panelW = (width - 3*pad) / 2
	)
	height := top + rowH*len(r.scenarios) + pad
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	text(&b, pad, 22, 15, "bold", "start", fmt.Sprintf("tenure vs Redis and etcd — medians of %d round(s), %v per run", r.Env.Rounds, r.settings.duration))
	text(&b, pad, 40, 11, "normal", "start", r.Env.CPUModel+" · "+r.Env.Pinning)
	x := pad
	for _, t := range r.targets {
		fmt.Fprintf(&b, `<rect x="%d" y="48" width="12" height="10" fill="%s"/>`, x, colors[t.Name])
		text(&b, x+16, 57, 11, "normal", "start", t.Name)
		x += 24 + 7*len(t.Name) + 16
	}
	b.WriteString("\n")
	for i, sc := range r.scenarios {
		y := top + i*rowH
		text(&b, pad, y+14, 12, "bold", "start", sc.Group+" "+sc.Title)
		if sc.Rate.Key != "" {
			r.rates(&b, pad, y+22, panelW, rowH-30, sc)
		}
		if len(sc.Latency) > 0 {
			r.latencies(&b, 2*pad+panelW, y+22, panelW, rowH-30, sc)
		}
	}
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

const labelW = 86 // room for a label left of the bars

// rates draws one bar per server, linear from zero.
func (r *report) rates(b *strings.Builder, x, y, w, h int, sc *scenario) {
	rw := sc.Rate
	most := 0.0
	for _, t := range r.targets {
		if v := r.med(sc.Name, t.Name, rw.Key); !math.IsNaN(v) {
			most = math.Max(most, v)
		}
	}
	text(b, x, y+10, 11, "normal", "start", rw.Label+unitSuffix(rw.Unit))
	if most <= 0 {
		return
	}
	plotW := float64(w - labelW - 70)
	barH := min(18, (h-20)/len(r.targets)-4)
	for j, t := range r.targets {
		v := r.med(sc.Name, t.Name, rw.Key)
		by := y + 18 + j*(barH+4)
		text(b, x+labelW-6, by+barH-4, 11, "normal", "end", t.Name)
		if math.IsNaN(v) {
			continue
		}
		bw := plotW * v / most
		fmt.Fprintf(b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>`, x+labelW, by, bw, barH, colors[t.Name])
		text(b, x+labelW+int(bw)+4, by+barH-4, 11, "normal", "start", format(v, rw.Unit))
		b.WriteString("\n")
	}
}

// latencies draws a group of bars (one per server) for each percentile,
// on a log scale of whole decades.
func (r *report) latencies(b *strings.Builder, x, y, w, h int, sc *scenario) {
	least, most := math.Inf(1), 0.0
	for _, rw := range sc.Latency {
		for _, t := range r.targets {
			if v := r.med(sc.Name, t.Name, rw.Key); !math.IsNaN(v) && v > 0 {
				least, most = math.Min(least, v), math.Max(most, v)
			}
		}
	}
	text(b, x, y+10, 11, "normal", "start", "latency, ms (log scale)")
	if most <= 0 {
		return
	}
	lo, hi := math.Floor(math.Log10(least)), math.Ceil(math.Log10(most))
	if math.Log10(least)-lo < 0.2 {
		lo-- // room for the shortest bar to show
	}
	if hi <= lo {
		hi = lo + 1
	}
	plotW := float64(w - labelW - 50)
	pos := func(v float64) float64 { return plotW * (math.Log10(v) - lo) / (hi - lo) }
	nt := len(r.targets)
	barH := max(3, min(9, (h-34)/(len(sc.Latency)*nt)-2))
	groupH := nt*(barH+1) + 4
	baseY := y + 16
	for d := lo; d <= hi; d++ {
		gx := float64(x+labelW) + pos(math.Pow(10, d))
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>`, gx, baseY, gx, baseY+len(sc.Latency)*groupH)
		text(b, int(gx), baseY+len(sc.Latency)*groupH+11, 10, "normal", "middle", trimFloat(math.Pow(10, d)))
	}
	for k, rw := range sc.Latency {
		gy := baseY + k*groupH
		text(b, x+labelW-6, gy+groupH/2+3, 11, "normal", "end", rw.Label)
		for j, t := range r.targets {
			v := r.med(sc.Name, t.Name, rw.Key)
			if math.IsNaN(v) || v <= 0 {
				continue
			}
			by := gy + j*(barH+1)
			bw := math.Max(pos(v), 1)
			fmt.Fprintf(b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"><title>%s %s: %s ms</title></rect>`,
				x+labelW, by, bw, barH, colors[t.Name], html.EscapeString(t.Name), html.EscapeString(rw.Label), format(v, "ms"))
			if j == nt-1 || barH >= 8 {
				text(b, x+labelW+int(bw)+3, by+barH, 9, "normal", "start", format(v, "ms"))
			}
		}
		b.WriteString("\n")
	}
}

func unitSuffix(unit string) string {
	switch unit {
	case "ops", "n", "pct":
		return ""
	case "B":
		return "" // the label says bytes
	}
	return " (" + unit + ")"
}

// trimFloat prints a power of ten without trailing zeros: 0.01, 1, 1000.
func trimFloat(v float64) string {
	s := fmt.Sprintf("%.6f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}

func text(b *strings.Builder, x, y, size int, weight, anchor, s string) {
	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="%d" font-weight="%s" text-anchor="%s">%s</text>`, x, y, size, weight, anchor, html.EscapeString(s))
}
