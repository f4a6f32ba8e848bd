package main

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"math"

	"github.com/backoffgo/backoff/internal/sim"
)

// The overload workload (issue 30 §1): a server of limited capacity, a
// trigger that ends, and whether each client policy lets it recover.

var overloadWorkload = spec[sim.OverloadConfig, sim.OverloadResult]{
	title: "overload",
	help: fmt.Sprintf("issue 30: an open-loop server of %d slots and a queue of %d, %s clients\nwith a %v timeout, a load spike or capacity drop for %v; does goodput come\nback when it ends (%d policies, %d rows)",
		def.overload.Slots, def.overload.Queue, commas(int64(def.overload.Clients)), def.overload.Timeout, def.overload.Trigger, len(def.overload.Policies), len(def.overload.Rows)),
	config: func(o *options) sim.OverloadConfig {
		cfg := sim.DefaultOverload()
		if o.set["clients"] {
			cfg.Clients = o.clients
		}
		if o.set["slots"] {
			cfg.Slots = o.slots
		}
		return cfg
	},
	contenders: func(sim.OverloadConfig, []sim.Contender) []sim.Contender { return nil },
	validate:   sim.OverloadConfig.Validate,
	progress:   func(c *sim.OverloadConfig, p func(sim.Progress)) { c.Progress = p },
	simulate:   sim.Overload,
	table:      overloadTable,
	chart:      overloadChart,
}

// overloadScenario describes a row.
func overloadScenario(cfg sim.OverloadConfig, r sim.OverloadRow) string {
	load := fmt.Sprintf("%.0f%% load", 100*r.Load)
	var s string
	switch r.Trigger {
	case sim.Spike:
		s = fmt.Sprintf("spike to %gx capacity at %s", r.Peak, load)
	case sim.CapacityDrop:
		s = fmt.Sprintf("capacity drop to %d slots at %s", max(cfg.Slots/2, 1), load)
	default:
		s = fmt.Sprintf("no trigger, %s", load)
	}
	if r.Fail > 0 {
		s += fmt.Sprintf(", %.0f%% random failures", 100*r.Fail)
	}
	if r.Clients != 0 {
		s += fmt.Sprintf(", %s clients", commas(int64(r.Clients)))
	}
	if r.DropExpired {
		s += ", the server drops expired attempts"
	}
	return s
}

// overloadWithin says whether run recovered within twice the time that
// none (the no-retry policy's run of the same row) took: "yes", "NO", or
// "-" without a trigger or a recovery to compare with.
func overloadWithin(run, none sim.OverloadRun, r sim.OverloadRow) string {
	switch {
	case r.Trigger == sim.NoTrigger || !none.Recovered:
		return "-"
	case run.Recovered && run.Recovery <= 2*none.Recovery:
		return "yes"
	}
	return "NO"
}

// recovery formats a run's recovery time.
func recovery(r sim.OverloadRun) string {
	if !r.Recovered {
		return "never"
	}
	return secs(r.Recovery)
}

func overloadTable(w io.Writer, o *options, cfg sim.OverloadConfig, res []sim.OverloadResult) {
	header(w, fmt.Sprintf("overload: %d slots, service time exponential with mean %v (capacity %.0f requests/s), queue %d, client timeout %v, %s clients; %v warm-up, a %v trigger, %v after",
		cfg.Slots, cfg.Service, cfg.Capacity(), cfg.Queue, cfg.Timeout, commas(int64(cfg.Clients)), cfg.Warmup, cfg.Trigger, cfg.After))
	for ri, row := range cfg.Rows {
		fmt.Fprintf(w, "%s: %s\n", row.Group, overloadScenario(cfg, row))
		tw := table(w)
		fmt.Fprintln(tw, "policy\trecovered after\twithin 2x no retries\tgoodput during\tafter\tsuccess\tpeak load\twasted\trefused\t")
		none := res[0].Runs[ri]
		for i, r := range res {
			run := r.Runs[ri]
			within := "-"
			if i > 0 {
				within = overloadWithin(run, none, row)
			}
			rec := recovery(run)
			if row.Trigger == sim.NoTrigger {
				rec = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%.2fx\t%s\t%s\t\n", r.Policy.Name, rec, within,
				pctOf(run.During, 1), pctOf(run.After, 1), pctOf(run.Success, 2), run.PeakLoad, pctOf(run.Wasted, 1), commas(run.Refused))
		}
		tw.Flush()
	}
	fmt.Fprintf(w, "recovered after: the first second after the trigger from which the requests that succeeded over %v are at least %g%% of those\n", cfg.Window, 100*(1-cfg.Tolerance))
	fmt.Fprintln(w, "that arrived (never: not within the span after it); within 2x no retries: against the first policy's recovery of the same row;")
	fmt.Fprintln(w, "goodput: requests that succeeded over requests that arrived, during the trigger and after it; success: the requests after the")
	fmt.Fprintln(w, "warm-up that succeeded; peak load: the most attempts reaching the server in one second over the requests arriving in it;")
	fmt.Fprintln(w, "wasted: the server's busy time spent on attempts whose client had given up; refused: requests a guard stopped")
}

// overloadColors are the policies' line colors, in order.
var overloadColors = []string{"#7f7f7f", "#d62728", "#ff7f0e", "#bcbd22", "#2ca02c", "#98df8a", "#8c564b", "#9467bd", "#1f77b4", "#aec7e8", "#17becf", "#e377c2"}

// overloadChart draws goodput per second over time, a line per policy, a
// panel for each row of the first group, the offered load dashed.
func overloadChart(cfg sim.OverloadConfig, res []sim.OverloadResult, o *options) []byte {
	var rows []int
	for i, r := range cfg.Rows {
		if r.Group == cfg.Rows[0].Group {
			rows = append(rows, i)
		}
	}
	const panelH, gap, top, legendRow = 190, 60, 60, 18
	legend := (len(res) + 2) / 3
	h := top + len(rows)*(panelH+gap) + legend*legendRow + 20
	s := newSVG(chartWidth, h, "Overload: goodput per second, the trigger shaded",
		fmt.Sprintf("%d slots, capacity %.0f/s, queue %d, timeout %v, %s clients; seed %d", cfg.Slots, cfg.Capacity(), cfg.Queue, cfg.Timeout, commas(int64(cfg.Clients)), o.seed))
	yMax := cfg.Capacity() // or the most in one second, rounded up to a tick
	for _, ri := range rows {
		for _, r := range res {
			for _, v := range [][]int32{r.Runs[ri].Goodput, r.Runs[ri].Offered} {
				for _, n := range v {
					yMax = max(yMax, float64(n))
				}
			}
		}
	}
	yMax = math.Ceil(yMax/niceStep(yMax, 4)) * niceStep(yMax, 4)
	for pi, ri := range rows {
		row := cfg.Rows[ri]
		y0 := float64(top + pi*(panelH+gap) + panelH)
		span := float64(len(res[0].Runs[ri].Goodput))
		xs := func(t float64) float64 { return marginL + t/span*plotW }
		ys := func(v float64) float64 { return y0 - v/yMax*panelH }
		from, to := cfg.Warmup.Seconds(), (cfg.Warmup + cfg.Trigger).Seconds()
		fmt.Fprintf(s, `<rect x="%s" y="%s" width="%s" height="%d" fill="#eee"/>`+"\n", f(xs(from)), f(y0-panelH), f(xs(to)-xs(from)), panelH)
		s.text(marginL+plotW/2, y0-panelH-8, "middle", overloadScenario(cfg, row))
		s.line(marginL, y0, marginL+plotW, y0, "#333")
		s.line(marginL, y0, marginL, y0-panelH, "#333")
		step := niceStep(yMax, 4)
		for v := 0.0; v <= yMax+1e-9; v += step {
			s.line(marginL-4, ys(v), marginL, ys(v), "#333")
			s.text(marginL-8, ys(v)+4, "end", tickLabel(v))
		}
		tstep := niceStep(span, 10)
		for t := 0.0; t <= span+1e-9; t += tstep {
			s.line(xs(t), y0, xs(t), y0+4, "#333")
			s.text(xs(t), y0+16, "middle", tickLabel(t)+"s")
		}
		series := func(v []int32, color, extra string) {
			var pts bytes.Buffer
			for t, n := range v {
				if t > 0 {
					pts.WriteByte(' ')
				}
				pts.WriteString(f(xs(float64(t)+0.5)) + "," + f(ys(float64(n))))
			}
			fmt.Fprintf(s, `<polyline points="%s" fill="none" stroke="%s" stroke-width="1.5"%s/>`+"\n", pts.String(), color, extra)
		}
		series(res[0].Runs[ri].Offered, "#000", ` stroke-dasharray="4 3"`)
		for i, r := range res {
			series(r.Runs[ri].Goodput, overloadColors[i%len(overloadColors)], "")
		}
		s.text(marginL-45, y0-panelH/2, "end", "requests/s")
	}
	ly := float64(top + len(rows)*(panelH+gap))
	for i, r := range res {
		x := float64(marginL + (i%3)*230)
		y := ly + float64(i/3)*legendRow
		fmt.Fprintf(s, `<rect x="%s" y="%s" width="24" height="3" fill="%s"/>`+"\n", f(x), f(y-5.5), overloadColors[i%len(overloadColors)])
		s.text(x+30, y, "start", r.Policy.Name)
	}
	s.text(marginL+plotW, ly+float64(legend)*legendRow, "end", "dashed: requests arriving per second")
	return s.done()
}

// overloadData holds the overload results for the document.
type overloadData struct {
	Cfg   sim.OverloadConfig
	Res   []sim.OverloadResult
	Table string
	// Loads and Line are the document's sweep: the first row's spike at
	// each load, every policy.
	Loads []float64
	Line  []sim.OverloadResult
}

// overloadLoads are the loads of the document's sweep.
var overloadLoads = []float64{0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6, 0.7}

// docOverload reads the overload results of a run of every workload at
// the defaults and runs the document's sweep of loads.
func docOverload(results map[string]jobResult, o *options) (d overloadData, err error) {
	d.Cfg, d.Res = overloadWorkload.of(results)
	d.Table = string(results[overloadWorkload.title].table)
	c := d.Cfg
	c.Rows = nil
	for _, l := range overloadLoads {
		r := d.Cfg.Rows[0]
		r.Load = l
		c.Rows = append(c.Rows, r)
	}
	d.Loads = overloadLoads
	d.Line, err = sim.Overload(c, nil, o.seed)
	return d, err
}

// Idx is the index of the i-th row of a group.
func (d overloadData) Idx(group string, i int) int {
	for j, r := range d.Cfg.Rows {
		if r.Group == group {
			if i == 0 {
				return j
			}
			i--
		}
	}
	panic(fmt.Sprintf("overload has no row %d in group %q", i, group))
}

// Row is the i-th row of a group.
func (d overloadData) Row(group string, i int) sim.OverloadRow { return d.Cfg.Rows[d.Idx(group, i)] }

// PerClient is the requests per second each client of row r sends.
func (d overloadData) PerClient(r sim.OverloadRow) float64 {
	return r.Load * d.Cfg.Capacity() / float64(cmp.Or(r.Clients, d.Cfg.Clients))
}

// QueueWait is how long the full queue takes to serve, in seconds.
func (d overloadData) QueueWait() float64 { return float64(d.Cfg.Queue) / d.Cfg.Capacity() }

// Run is the run of the named policy on the i-th row of a group.
func (d overloadData) Run(policy, group string, i int) sim.OverloadRun {
	for _, r := range d.Res {
		if r.Policy.Name == policy {
			return r.Runs[d.Idx(group, i)]
		}
	}
	panic(fmt.Sprintf("overload has no policy %q", policy))
}

// Within says whether the named policy recovered within twice the no-retry
// recovery on the i-th row of a group: yes, NO or -.
func (d overloadData) Within(policy, group string, i int) string {
	return overloadWithin(d.Run(policy, group, i), d.Res[0].Runs[d.Idx(group, i)], d.Row(group, i))
}

// LineOf says where the named policy stops recovering in the sweep:
// "between A and B % load" around its first load without a recovery, "at
// no load of the sweep", or "already at A % load".
func (d overloadData) LineOf(name string) string {
	for _, r := range d.Line {
		if r.Policy.Name != name {
			continue
		}
		for j, run := range r.Runs {
			switch {
			case run.Recovered:
				continue
			case j == 0:
				return fmt.Sprintf("already at %.0f %% load", 100*d.Loads[0])
			}
			return fmt.Sprintf("between %.0f and %.0f %% load", 100*d.Loads[j-1], 100*d.Loads[j])
		}
		return "at no load of the sweep"
	}
	panic(fmt.Sprintf("overload has no policy %q", name))
}

// Same says whether two policies' runs of the i-th row of a group are
// the same.
func (d overloadData) Same(a, b, group string, i int) bool {
	return fmt.Sprintf("%+v", d.Run(a, group, i)) == fmt.Sprintf("%+v", d.Run(b, group, i))
}

// Reserve is the retries per second that the Budgets of row r's clients
// allow whatever the traffic, over the capacity.
func (d overloadData) Reserve(r sim.OverloadRow) float64 {
	return sim.BudgetDefaults(d.Cfg.Budget).Reserve * float64(cmp.Or(r.Clients, d.Cfg.Clients)) / d.Cfg.Capacity()
}

// LineCell is the sweep's cell of a policy at the i-th load: its recovery.
func (d overloadData) LineCell(policy int, i int) string { return recovery(d.Line[policy].Runs[i]) }

// Recovery formats a run's recovery time, "never" if it did not recover.
func (overloadData) Recovery(r sim.OverloadRun) string { return recovery(r) }

// Scenario describes the i-th row of a group.
func (d overloadData) Scenario(group string, i int) string {
	return overloadScenario(d.Cfg, d.Row(group, i))
}
