package main

import (
	"bytes"
	_ "embed"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"text/template"
	"time"

	"github.com/backoffgo/backoff/internal/sim"
)

// writeDoc runs every workload at its defaults and writes
// docs/simulations.md to w (with -readme, README.md's block of figures
// instead, from the same results), and with -svg the charts.
func writeDoc(w io.Writer, o *options) error {
	r, err := runDoc(o)
	if err != nil {
		return err
	}
	return r.write(w, o.readme, o.svgDir)
}

// docRun is one run of every workload at its defaults, and what the
// document says of it.
type docRun struct {
	tables []byte // as the command prints them by default
	data   docData
	charts map[string][]byte // by workload
}

// runDoc runs every workload at its defaults, as the command does without
// flags, and the document's extra runs. Every figure in the document comes
// from this run or from the sim package's constants; the prose is the
// template below.
func runDoc(o *options) (*docRun, error) {
	jobs, err := prepare(o, workloads)
	if err != nil {
		return nil, err
	}
	var tables bytes.Buffer
	results := map[string]jobResult{}
	charts := map[string][]byte{}
	if err := runJobs(o, jobs, &tables, nil, func(j job, r jobResult) error {
		results[j.name], charts[j.name] = r, r.chart
		return nil
	}); err != nil {
		return nil, err
	}
	d := docData{Seed: o.seed, Tables: tables.String(), Hedge: string(results[hedgeWorkload.title].table)}
	if d.Overload, err = docOverload(results, o); err != nil {
		return nil, err
	}

	hc, herd := herdWorkload.of(results)
	big := hc
	big.Clients, big.Runs = 1_000_000, 1
	bigHerd, err := sim.Herd(big, []sim.Contender{sim.FullJitter()}, o.seed)
	if err != nil {
		return nil, err
	}
	oc, outage := outageWorkload.of(results)
	cc, cont := contentionWorkload.of(results)
	ac, amp := amplificationWorkload.of(results)
	pc, per := periodicWorkload.of(results)
	if d.Extra, err = docExtra(results, o, outage); err != nil {
		return nil, err
	}
	if d.Fleet, err = docFleet(results, o); err != nil {
		return nil, err
	}

	d.Herd = byPolicy(herd, func(r sim.HerdResult) string { return r.Policy })
	d.HerdCfg = hc
	d.BigHerd, d.BigClients = bigHerd[0], big.Clients
	if e, ok := d.Herd["exponential"]; ok {
		lockstep := 1 / float64(hc.Policy.MaxAttempts-1)
		d.ExpLockstep = true
		for _, s := range e.PeakShares {
			d.ExpLockstep = d.ExpLockstep && s == lockstep
		}
	}
	d.Outage = byPolicy(outage, func(r sim.OutageResult) string { return r.Policy })
	d.OutageCfg = oc
	d.ExpRetrying = retrying(oc)
	d.Contention = map[string]map[int]sim.ContentionPoint{}
	for _, r := range cont {
		m := map[int]sim.ContentionPoint{}
		for _, p := range r.Points {
			m[p.Clients] = p
		}
		d.Contention[r.Policy] = m
	}
	d.Sizes = cc.Clients
	d.Amp = byPolicy(amp, func(r sim.AmplificationResult) string { return r.Policy })
	d.AmpCfg = ac
	d.Periodic = byPolicy(per, func(r sim.PeriodicResult) string { return r.Policy })
	d.PeriodicCfg = pc
	for _, c := range sim.All() {
		if _, ok := d.Herd[c.Name]; !ok {
			return nil, fmt.Errorf("-doc needs every policy; %s is missing", c.Name)
		}
	}
	return &docRun{tables: tables.Bytes(), data: d, charts: charts}, nil
}

// write writes the document to w, or README.md's block of figures when
// readme is set, and the charts into svgDir unless it is "".
func (r *docRun) write(w io.Writer, readme bool, svgDir string) error {
	var out bytes.Buffer
	tmpl := docTemplate
	if readme {
		tmpl = readmeTemplate
	}
	if err := tmpl.Execute(&out, r.data); err != nil {
		return err
	}
	if _, err := w.Write(out.Bytes()); err != nil {
		return err
	}
	if svgDir != "" {
		if err := os.MkdirAll(svgDir, 0o755); err != nil {
			return err
		}
		for _, name := range workloadNames() {
			if err := os.WriteFile(filepath.Join(svgDir, name+".svg"), r.charts[name], 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

func byPolicy[R any](res []R, name func(R) string) map[string]R {
	m := map[string]R{}
	for _, r := range res {
		m[name(r)] = r
	}
	return m
}

// retrying is how long an un-jittered client of the outage keeps
// retrying: the sum of its MaxAttempts-1 delays min(Cap, Base·2^(i-1)).
func retrying(cfg sim.OutageConfig) time.Duration {
	var t time.Duration
	d := cfg.Policy.Base
	for range cfg.Policy.MaxAttempts - 1 {
		t += min(d, cfg.Policy.Cap)
		d *= 2
	}
	return t
}

// docData holds the run's results for the template.
type docData struct {
	Seed        uint64
	Tables      string
	Herd        map[string]sim.HerdResult
	HerdCfg     sim.HerdConfig
	BigHerd     sim.HerdResult
	BigClients  int
	ExpLockstep bool // exponential's peak share is 1/(MaxAttempts-1) in every run
	Outage      map[string]sim.OutageResult
	OutageCfg   sim.OutageConfig
	ExpRetrying time.Duration
	Contention  map[string]map[int]sim.ContentionPoint
	Sizes       []int
	Amp         map[string]sim.AmplificationResult
	AmpCfg      sim.AmplificationConfig
	Periodic    map[string]sim.PeriodicResult
	PeriodicCfg sim.PeriodicConfig
	Extra       extraData // the fleet workloads: recovery, budgets, ticker
	Fleet       fleetData // share-fleet
	Hedge       string    // the hedge workload's table
	Overload    overloadData
}

// C returns the contention point of a policy at n clients.
func (d docData) C(policy string, n int) sim.ContentionPoint { return d.Contention[policy][n] }

// Last is the largest fleet size of the sweep.
func (d docData) Last() int { return d.Sizes[len(d.Sizes)-1] }

// Until describes where less(a, b) holds over the sweep: "at every size",
// "up to N clients, and not from M on" (with mixed sizes between), or "at
// no size".
func (d docData) Until(kind, a, b string) string {
	holds := func(n int) bool {
		pa, pb := d.C(a, n), d.C(b, n)
		if kind == "calls" {
			return pa.Calls > pb.Calls
		}
		return pa.Time < pb.Time
	}
	upTo, from := 0, 0
	for _, n := range d.Sizes {
		if !holds(n) {
			break
		}
		upTo = n
	}
	for i := len(d.Sizes) - 1; i >= 0 && !holds(d.Sizes[i]); i-- {
		from = d.Sizes[i]
	}
	switch {
	case upTo == d.Last():
		return "at every size of the sweep"
	case upTo == 0:
		return "at no size up to the first reversal"
	case from == 0:
		return fmt.Sprintf("up to %d clients, and at some sizes above", upTo)
	}
	s := fmt.Sprintf("up to %d clients and reverses from %d on", upTo, from)
	if next := nextSize(d.Sizes, upTo); next != from {
		s += fmt.Sprintf(" (sizes %d to %d go either way)", next, prevSize(d.Sizes, from))
	}
	return s
}

func nextSize(s []int, n int) int {
	for i, v := range s {
		if v == n && i+1 < len(s) {
			return s[i+1]
		}
	}
	return n
}

func prevSize(s []int, n int) int {
	for i, v := range s {
		if v == n && i > 0 {
			return s[i-1]
		}
	}
	return n
}

var docFuncs = template.FuncMap{
	"pct":   func(v float64) string { return fmt.Sprintf("%.2f %%", 100*v) },
	"pct1":  func(v float64) string { return fmt.Sprintf("%.1f %%", 100*v) },
	"f0":    func(v float64) string { return fmt.Sprintf("%.0f", v) },
	"f1":    func(v float64) string { return fmt.Sprintf("%.1f", v) },
	"f2":    func(v float64) string { return fmt.Sprintf("%.2f", v) },
	"f3":    func(v float64) string { return fmt.Sprintf("%.3f", v) },
	"ratio": func(a, b float64) string { return fmt.Sprintf("%.1f×", a/b) },
	"ratio2": func(a, b float64) string {
		return fmt.Sprintf("%.2f×", a/b)
	},
	"n":    func(v float64) string { return commas(int64(v + 0.5)) },
	"int":  func(v int) string { return commas(int64(v)) },
	"i64":  func(v int64) string { return commas(v) },
	"secs": func(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) },
	"sec1": func(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) },
	"sec0": func(d time.Duration) string { return fmt.Sprintf("%.0f s", d.Seconds()) },
	"half": func(d time.Duration) time.Duration { return d / 2 },
	"over": func(a, b time.Duration) string { return fmt.Sprintf("%.3f", a.Seconds()/b.Seconds()) },
	"minmax": func(v []float64) string {
		lo, hi := minMax(v)
		return fmt.Sprintf("%.2f–%.2f %%", 100*lo, 100*hi)
	},
	"lim": func() map[string]int64 {
		return map[string]int64{"series": sim.MaxSeries, "layers": sim.MaxLayers, "attempts": sim.MaxClientAttempts, "sweep": sim.MaxSweep,
			"oslots": sim.MaxOverloadSlots, "oqueue": sim.MaxOverloadQueue, "omem": sim.MaxOverloadMemory >> 20}
	},
	"add":         func(a, b int) int { return a + b },
	"ms":          func(d time.Duration) string { return d.Round(time.Millisecond).String() },
	"maxwork":     func() time.Duration { return sim.MaxWork },
	"cost":        func(w string) string { return fmt.Sprintf("%.0f ns", sim.EventCost[w]) },
	"perlayer":    func(a, b float64) string { return fmt.Sprintf("%.0f", a-b) },
	"mb":          func(entries int64) string { return fmt.Sprintf("%d MiB", entries*8>>20) },
	"fleetClaims": func() []fleetClaim { return fleetClaims },
	"fleetFigure": fleetFigure,
	"mulf":        func(a, b float64) float64 { return a * b },
	"sub1":        func(v float64) float64 { return 1 - v },
	"div":         func(a, b float64) float64 { return a / b },
	"lost": func(v float64) string {
		if math.Abs(v) < 5e-5 {
			v = 0 // no "-0.00 %"
		}
		return fmt.Sprintf("%.2f %%", 100*v)
	},
	"fleetRateFail":     func() float64 { return fleetRateFail },
	"fleetRateRequests": func() int { return fleetRateRequests },
	"fleetRateTotal":    func() int { return fleetRateTotal },
	"fleetBurstRows":    fleetBurstRows,
}

// commas formats n with thousands separators.
func commas(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + commas(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

//go:embed simulations.md.tmpl
var docText string

var docTemplate = template.Must(template.New("doc").Funcs(docFuncs).Parse(docText))

// readmeText is README.md's block of figures (-readme), from the same
// results as the document.
//
//go:embed readme.md.tmpl
var readmeText string

var readmeTemplate = template.Must(template.New("readme").Funcs(docFuncs).Parse(readmeText))
