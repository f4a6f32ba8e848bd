package main

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/backoffgo/backoff/internal/sim"
)

// The charts are plain SVG written with the standard library. Every number
// is formatted with a fixed precision, so the same results give the same
// bytes.

const (
	chartWidth = 860
	marginL    = 140
	marginR    = 30
	plotW      = chartWidth - marginL - marginR
)

var palette = map[string]string{
	"exponential":  "#d62728",
	"full-jitter":  "#1f77b4",
	"equal-jitter": "#2ca02c",
	"decorrelated": "#9467bd",
	"no-backoff":   "#7f7f7f",
	"timid-jitter": "#ff7f0e",
}

func color(name string) string {
	if c, ok := palette[name]; ok {
		return c
	}
	return "#17becf"
}

// f formats a coordinate with one decimal.
func f(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

type svg struct{ bytes.Buffer }

func newSVG(w, h int, title, sub string) *svg {
	s := &svg{}
	fmt.Fprintf(s, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(s, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	fmt.Fprintf(s, `<text x="%d" y="20" font-size="14" font-weight="bold">%s</text>`+"\n", 10, esc(title))
	fmt.Fprintf(s, `<text x="%d" y="38" fill="#555">%s</text>`+"\n", 10, esc(sub))
	return s
}

func (s *svg) text(x, y float64, anchor, txt string) {
	fmt.Fprintf(s, `<text x="%s" y="%s" text-anchor="%s">%s</text>`+"\n", f(x), f(y), anchor, esc(txt))
}

func (s *svg) line(x1, y1, x2, y2 float64, stroke string) {
	fmt.Fprintf(s, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s"/>`+"\n", f(x1), f(y1), f(x2), f(y2), stroke)
}

func (s *svg) done() []byte {
	s.WriteString("</svg>\n")
	return s.Bytes()
}

func esc(t string) string {
	var b bytes.Buffer
	for _, r := range t {
		switch r {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// niceStep returns a round tick step giving about n ticks over span.
func niceStep(span float64, n int) float64 {
	raw := span / float64(n)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

func tickLabel(v float64) string {
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// herdChart draws retries per window over time, one panel per policy, on a
// shared scale clipped at the library policies' highest peak.
func herdChart(cfg sim.HerdConfig, res []sim.HerdResult, o *options) []byte {
	const panelH, gap, top = 70, 18, 56
	h := top + len(res)*(panelH+gap) + 40
	s := newSVG(chartWidth, h, fmt.Sprintf("Herd: retries per %v window, %d clients failing at t = 0", cfg.Window, cfg.Clients),
		fmt.Sprintf("base %v, cap %v, %d attempts; seed %d, first run", cfg.Policy.Base, cfg.Policy.Cap, cfg.Policy.MaxAttempts, o.seed))
	maxLen, yMax := 1, int64(1)
	for _, r := range res {
		maxLen = max(maxLen, len(r.Series))
		peak := int64(0)
		for _, c := range r.Series {
			peak = max(peak, c)
		}
		if !sim.IsBaseline(r.Policy) || yMax == 1 {
			yMax = max(yMax, peak)
		}
	}
	span := float64(maxLen) * cfg.Window.Seconds()
	xs := func(sec float64) float64 { return marginL + sec/span*plotW }
	for i, r := range res {
		y0 := float64(top + i*(panelH+gap) + panelH)
		s.line(marginL, y0, marginL+plotW, y0, "#999")
		s.text(marginL-8, y0-panelH/2, "end", label(o, r.Policy))
		peak := int64(0)
		for _, c := range r.Series {
			peak = max(peak, c)
		}
		s.text(marginL-8, y0-panelH/2+14, "end", fmt.Sprintf("peak %d (%.1f%%)", peak, 100*r.PeakShare))
		// One vertical bar per pixel column: the busiest window in it.
		cols := make([]int64, plotW+1)
		for w, c := range r.Series {
			x := int(float64(w) * cfg.Window.Seconds() / span * plotW)
			cols[x] = max(cols[x], c)
		}
		var path bytes.Buffer
		clipped := false
		for x, c := range cols {
			if c == 0 {
				continue
			}
			hgt := float64(min(c, yMax)) / float64(yMax) * panelH
			clipped = clipped || c > yMax
			fmt.Fprintf(&path, "M%s %sv-%s", f(marginL+float64(x)+0.5), f(y0), f(hgt))
		}
		fmt.Fprintf(s, `<path d="%s" stroke="%s" stroke-width="1.5" fill="none"/>`+"\n", path.String(), color(r.Policy))
		if clipped {
			s.text(marginL+plotW, y0-panelH+10, "end", fmt.Sprintf("bars clipped at %d", yMax))
		}
	}
	yAxis := float64(top + len(res)*(panelH+gap))
	step := niceStep(span, 10)
	for t := 0.0; t <= span+1e-9; t += step {
		s.line(xs(t), yAxis-gap, xs(t), yAxis-gap+4, "#333")
		s.text(xs(t), yAxis, "middle", tickLabel(t)+"s")
	}
	s.text(marginL+plotW/2, yAxis+22, "middle", fmt.Sprintf("time since the failure; bar height: retries in a %v window (shared scale, full height = %d)", cfg.Window, yMax))
	return s.done()
}

// bar is one horizontal bar of a bar chart.
type bar struct {
	label, text, color string
	value              float64
}

// barChart draws horizontal bars on an axis from zero to the largest of 1
// and the bars' values.
func barChart(title, sub, axis string, bars []bar) []byte {
	xMax := 1.0
	for _, b := range bars {
		xMax = max(xMax, b.value)
	}
	const barH, gap, top = 20, 8, 52
	h := top + len(bars)*(barH+gap) + 50
	s := newSVG(chartWidth, h, title, sub)
	const left = 200
	x := func(v float64) float64 { return left + v/xMax*(chartWidth-left-230) }
	for i, b := range bars {
		y := float64(top + i*(barH+gap))
		s.text(left-8, y+barH-6, "end", b.label)
		fmt.Fprintf(s, `<rect x="%s" y="%s" width="%s" height="%d" fill="%s"/>`+"\n", f(left), f(y), f(x(b.value)-left), barH, b.color)
		s.text(x(b.value)+4, y+barH-6, "start", b.text)
	}
	yAxis := float64(top + len(bars)*(barH+gap))
	s.line(left, yAxis, x(xMax), yAxis, "#333")
	step := niceStep(xMax, 8)
	for v := 0.0; v <= xMax+1e-9; v += step {
		s.line(x(v), yAxis, x(v), yAxis+4, "#333")
		s.text(x(v), yAxis+16, "middle", tickLabel(v))
	}
	s.text(x(xMax/2), yAxis+36, "middle", axis)
	return s.done()
}

func outageChart(cfg sim.OutageConfig, res []sim.OutageResult, o *options) []byte {
	var bars []bar
	for _, r := range res {
		bars = append(bars, bar{label(o, r.Policy), fmt.Sprintf("%.3f", r.SuccessRate), color(r.Policy), r.SuccessRate})
	}
	return barChart(fmt.Sprintf("Outage: success rate, %d clients arriving during a %v outage", cfg.Clients, cfg.Outage),
		fmt.Sprintf("base %v, cap %v, %d attempts; seed %d, %d runs", cfg.Policy.Base, cfg.Policy.Cap, cfg.Policy.MaxAttempts, o.seed, cfg.Runs),
		"share of clients that got through before running out of attempts (mean over runs)", bars)
}

func amplificationChart(cfg sim.AmplificationConfig, res []sim.AmplificationResult, o *options) []byte {
	var bars []bar
	for _, r := range res {
		bars = append(bars,
			bar{label(o, r.Policy) + ": every layer", fmt.Sprintf("%.0fx, fails after %v", r.EveryLayer.BottomCalls, r.EveryLayer.TimeToFail.Round(time.Millisecond)), color(r.Policy), r.EveryLayer.BottomCalls},
			bar{"top layer only", fmt.Sprintf("%.0fx, fails after %v", r.OneLayer.BottomCalls, r.OneLayer.TimeToFail.Round(time.Millisecond)), color(r.Policy), r.OneLayer.BottomCalls})
	}
	return barChart("Amplification: calls reaching a failing dependency per request",
		fmt.Sprintf("%d layers, %d attempts at each retrying layer, base %v, cap %v; the dependency fails after %v; seed %d",
			cfg.Layers, cfg.Policy.MaxAttempts, cfg.Policy.Base, cfg.Policy.Cap, cfg.CallLatency, o.seed), "load multiplier at the dependency", bars)
}

func periodicChart(cfg sim.PeriodicConfig, res []sim.PeriodicResult, o *options) []byte {
	var bars []bar
	for _, r := range res {
		bars = append(bars, bar{label(o, r.Policy), fmt.Sprintf("%.1f calls/s (mean %.2f)", r.Peak, r.Mean), color(r.Policy), r.Peak})
	}
	return barChart(fmt.Sprintf("Periodic jobs: peak calls per second, %d jobs every %v", cfg.Jobs, cfg.Interval),
		fmt.Sprintf("each execution starts after the policy's first delay with base = cap = %v; %v simulated; seed %d, %d runs", cfg.Interval, cfg.Horizon, o.seed, cfg.Runs), "peak calls in one second (mean over runs)", bars)
}

// contentionChart draws calls and time against clients, one line per policy;
// time on a log scale because un-jittered exponential is an order of
// magnitude slower.
func contentionChart(cfg sim.ContentionConfig, res []sim.ContentionResult, o *options) []byte {
	const panelW, panelH, top, left = 330, 300, 72, 70
	h := top + panelH + 60 + 20*((len(res)+2)/3)
	s := newSVG(chartWidth, h, "Contention (Brooker 2015 optimistic concurrency): work and completion time",
		fmt.Sprintf("network |N(%v, %v)|, base %v (decorrelated %v), cap %v; mean of %d runs per fleet size; seed %d",
			cfg.NetMean, cfg.NetSD, cfg.Policy.Base, cfg.DecorrelatedBase(), cfg.Policy.Cap, cfg.Runs, o.seed))
	nMin, nMax := float64(cfg.Clients[0]), float64(cfg.Clients[len(cfg.Clients)-1])
	if nMax == nMin {
		nMax = nMin + 1
	}
	var callsMax, tMin, tMax float64
	tMin = math.Inf(1)
	for _, r := range res {
		for _, p := range r.Points {
			callsMax = max(callsMax, p.Calls)
			if p.Time > 0 {
				tMin = min(tMin, p.Time.Seconds())
				tMax = max(tMax, p.Time.Seconds())
			}
		}
	}
	if math.IsInf(tMin, 1) {
		tMin, tMax = 0.01, 1
	}
	lo, hi := math.Floor(math.Log10(tMin)), math.Ceil(math.Log10(tMax))
	if hi <= lo {
		hi = lo + 1
	}
	panels := []struct {
		title string
		y     func(p sim.ContentionPoint) float64
		ticks []float64
		tick  func(v float64) string
	}{
		{"calls (writes processed)", func(p sim.ContentionPoint) float64 { return p.Calls / callsMax }, nil, nil},
		{"time until the last client succeeds (s, log scale)", func(p sim.ContentionPoint) float64 {
			if p.Time <= 0 {
				return 0
			}
			return (math.Log10(p.Time.Seconds()) - lo) / (hi - lo)
		}, nil, nil},
	}
	for pi, pn := range panels {
		x0 := float64(left + pi*(panelW+left+30))
		y0 := float64(top + panelH)
		xs := func(n float64) float64 { return x0 + (n-nMin)/(nMax-nMin)*panelW }
		ys := func(v float64) float64 { return y0 - v*panelH }
		s.text(x0+panelW/2, top-8, "middle", pn.title)
		s.line(x0, y0, x0+panelW, y0, "#333")
		s.line(x0, y0, x0, y0-panelH, "#333")
		if pi == 0 {
			step := niceStep(callsMax, 6)
			for v := 0.0; v <= callsMax+1e-9; v += step {
				s.line(x0-4, ys(v/callsMax), x0, ys(v/callsMax), "#333")
				s.text(x0-6, ys(v/callsMax)+4, "end", tickLabel(v))
			}
		} else {
			for e := lo; e <= hi; e++ {
				v := (e - lo) / (hi - lo)
				s.line(x0-4, ys(v), x0+panelW, ys(v), "#ddd")
				s.text(x0-6, ys(v)+4, "end", tickLabel(math.Pow(10, e)))
			}
		}
		step := niceStep(nMax-nMin, 6)
		for n := math.Ceil(nMin/step) * step; n <= nMax+1e-9; n += step {
			s.line(xs(n), y0, xs(n), y0+4, "#333")
			s.text(xs(n), y0+16, "middle", tickLabel(n))
		}
		s.text(x0+panelW/2, y0+34, "middle", "clients")
		for _, r := range res {
			var pts bytes.Buffer
			for i, p := range r.Points {
				if i > 0 {
					pts.WriteByte(' ')
				}
				pts.WriteString(f(xs(float64(p.Clients))) + "," + f(ys(pn.y(p))))
			}
			dash := ""
			if sim.IsBaseline(r.Policy) {
				dash = ` stroke-dasharray="5 3"`
			}
			fmt.Fprintf(s, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", pts.String(), color(r.Policy), dash)
		}
	}
	for i, r := range res {
		x := float64(left + (i%3)*240)
		y := float64(top+panelH+58) + float64(i/3)*20
		fmt.Fprintf(s, `<rect x="%s" y="%s" width="24" height="3" fill="%s"/>`+"\n", f(x), f(y-5.5), color(r.Policy))
		s.text(x+30, y, "start", label(o, r.Policy))
	}
	return s.done()
}
