package main

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/backoffgo/backoff/internal/sim"
)

// workload is one row of the table of workloads.
type workload interface {
	name() string
	usage() string
	// prepare builds the workload's configuration from the defaults and
	// the flags and checks it against the sim package's limits.
	prepare(o *options) (job, error)
}

// job is a checked workload, ready to run.
type job struct {
	name string
	// run simulates.
	run func(progress func(sim.Progress)) (jobResult, error)
}

// jobResult is what a job's run returns: the table text and the chart,
// and for the document the configuration and results (a C and an []R of
// its spec).
type jobResult struct {
	table, chart []byte
	cfg, res     any
}

// spec describes a workload with configuration type C and result type R.
type spec[C, R any] struct {
	title, help string
	// config returns the defaults with the flags applied.
	config func(o *options) C
	// contenders adjusts the selected policies for the workload; nil keeps
	// them.
	contenders func(cfg C, cs []sim.Contender) []sim.Contender
	validate   func(cfg C, cs []sim.Contender) error
	progress   func(cfg *C, p func(sim.Progress))
	simulate   func(cfg C, cs []sim.Contender, seed uint64) ([]R, error)
	table      func(w io.Writer, o *options, cfg C, res []R)
	chart      func(cfg C, res []R, o *options) []byte
}

func (s spec[C, R]) name() string  { return s.title }
func (s spec[C, R]) usage() string { return s.help }

func (s spec[C, R]) prepare(o *options) (job, error) {
	cfg := s.config(o)
	cs := s.selected(cfg, o)
	if err := s.validate(cfg, cs); err != nil {
		return job{}, err
	}
	return job{name: s.title, run: func(p func(sim.Progress)) (jobResult, error) {
		c := cfg
		s.progress(&c, p)
		var b bytes.Buffer
		res, chart, err := s.output(c, cs, o, &b)
		if err != nil {
			return jobResult{}, err
		}
		return jobResult{table: b.Bytes(), chart: chart, cfg: cfg, res: res}, nil
	}}, nil
}

// selected returns the policies the workload runs for cfg.
func (s spec[C, R]) selected(cfg C, o *options) []sim.Contender {
	if s.contenders != nil {
		return s.contenders(cfg, o.policies)
	}
	return o.policies
}

// output simulates cfg for cs, writes the table to w and returns the
// results and the chart.
func (s spec[C, R]) output(cfg C, cs []sim.Contender, o *options, w io.Writer) ([]R, []byte, error) {
	res, err := s.simulate(cfg, cs, o.seed)
	if err != nil {
		return nil, nil, err
	}
	s.table(w, o, cfg, res)
	return res, s.chart(cfg, res, o), nil
}

// of returns the configuration and results of the workload's job among
// results, by workload name.
func (s spec[C, R]) of(results map[string]jobResult) (C, []R) {
	r := results[s.title]
	return r.cfg.(C), r.res.([]R)
}

// runJobs runs jobs in order, writing to w the line that opens the tables
// and each job's table, as the command prints them by default, and calls
// done after each job. progress, when not nil, returns the progress
// report function of a job about to run.
func runJobs(o *options, jobs []job, w io.Writer, progress func(job) func(sim.Progress), done func(job, jobResult) error) error {
	tablesHead(w, o)
	for _, j := range jobs {
		var p func(sim.Progress)
		if progress != nil {
			p = progress(j)
		}
		r, err := j.run(p)
		if err != nil {
			return fmt.Errorf("%s: %w", j.name, err)
		}
		w.Write(r.table)
		if err := done(j, r); err != nil {
			return err
		}
	}
	return nil
}

// prepare checks every workload before any runs.
func prepare(o *options, ws []workload) ([]job, error) {
	var jobs []job
	for _, w := range ws {
		j, err := w.prepare(o)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, j)
	}
	return jobs, nil
}

var herdWorkload = spec[sim.HerdConfig, sim.HerdResult]{
	title: "herd",
	help:  herdHelp,
	config: func(o *options) sim.HerdConfig {
		cfg := sim.DefaultHerd()
		o.herdFleet(&cfg.Policy, &cfg.Runs, &cfg.Clients, &cfg.Window)
		return cfg
	},
	validate: sim.HerdConfig.Validate,
	progress: func(c *sim.HerdConfig, p func(sim.Progress)) { c.Progress = p },
	simulate: sim.Herd,
	table:    herdTable,
	chart:    herdChart,
}

var outageWorkload = spec[sim.OutageConfig, sim.OutageResult]{
	title:    "outage",
	help:     outageHelp,
	config:   outageConfig,
	validate: sim.OutageConfig.Validate,
	progress: func(c *sim.OutageConfig, p func(sim.Progress)) { c.Progress = p },
	simulate: sim.Outage,
	table:    outageTable,
	chart:    outageChart,
}

var contentionWorkload = spec[sim.ContentionConfig, sim.ContentionResult]{
	title: "contention",
	help:  "Brooker 2015 optimistic concurrency: N clients read then write\none row; calls = writes processed, time = last success reply",
	config: func(o *options) sim.ContentionConfig {
		cfg := sim.DefaultContention()
		cfg.Policy = o.policy(cfg.Policy)
		cfg.Runs = o.runsOr(cfg.Runs)
		switch {
		case o.sweep != nil:
			cfg.Clients = o.sweep
		case o.set["clients"]:
			cfg.Clients = []int{o.clients}
		}
		if o.set["net-mean"] {
			cfg.NetMean = o.netMean
		}
		if o.set["net-sd"] {
			cfg.NetSD = o.netSD
		}
		return cfg
	},
	contenders: sim.ContentionConfig.Contenders,
	validate:   sim.ContentionConfig.Validate,
	progress:   func(c *sim.ContentionConfig, p func(sim.Progress)) { c.Progress = p },
	simulate:   sim.Contention,
	table:      contentionTable,
	chart:      contentionChart,
}

var amplificationWorkload = spec[sim.AmplificationConfig, sim.AmplificationResult]{
	title: "amplification",
	help:  amplificationHelp,
	config: func(o *options) sim.AmplificationConfig {
		cfg := sim.DefaultAmplification()
		cfg.Policy = o.policy(cfg.Policy)
		if o.set["layers"] {
			cfg.Layers = o.layers
		}
		return cfg
	},
	validate: sim.AmplificationConfig.Validate,
	progress: func(c *sim.AmplificationConfig, p func(sim.Progress)) { c.Progress = p },
	simulate: sim.Amplification,
	table:    amplificationTable,
	chart:    amplificationChart,
}

var periodicWorkload = spec[sim.PeriodicConfig, sim.PeriodicResult]{
	title: "periodic",
	help:  periodicHelp,
	config: func(o *options) sim.PeriodicConfig {
		cfg := sim.DefaultPeriodic()
		cfg.Runs = o.runsOr(cfg.Runs)
		if o.set["clients"] {
			cfg.Jobs = o.clients
		}
		if o.set["interval"] {
			cfg.Interval = o.interval
		}
		if o.set["horizon"] {
			cfg.Horizon = o.horizon
		}
		return cfg
	},
	contenders: sim.PeriodicConfig.Contenders,
	validate:   sim.PeriodicConfig.Validate,
	progress:   func(c *sim.PeriodicConfig, p func(sim.Progress)) { c.Progress = p },
	simulate:   sim.Periodic,
	table:      periodicTable,
	chart:      periodicChart,
}

// workloads is the table of workloads, in run order.
var workloads = []workload{
	herdWorkload,
	outageWorkload,
	contentionWorkload,
	amplificationWorkload,
	periodicWorkload,
	// The fleet features' workloads (fleet.go): after the first five.
	recoveryWorkload,
	budgetWorkload,
	outageBudgetWorkload,
	serverShareWorkload,
	shareFleetWorkload,
	hedgeWorkload,
	overloadWorkload,
}

// outageConfig returns the outage's defaults with the flags applied; the
// outage-budget workload starts from it too.
func outageConfig(o *options) sim.OutageConfig {
	cfg := sim.DefaultOutage()
	cfg.Policy = o.policy(cfg.Policy)
	cfg.Runs = o.runsOr(cfg.Runs)
	if o.set["clients"] {
		cfg.Clients = o.clients
	}
	if o.set["outage"] {
		cfg.Outage = o.outage
	}
	return cfg
}

func workloadNames() []string {
	var names []string
	for _, w := range workloads {
		names = append(names, w.name())
	}
	return names
}

func lookupWorkload(name string) workload {
	for _, w := range workloads {
		if w.name() == name {
			return w
		}
	}
	return nil
}

// label returns a policy's table label, marking baselines with a star.
func label(o *options, name string) string {
	if sim.IsBaseline(name) {
		return name + " *"
	}
	return name
}

func table(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
}

func header(w io.Writer, title string) {
	fmt.Fprintf(w, "\n== %s\n", title)
}

// span returns n windows of width w as a duration, or as "n × w" if that
// passes the largest time.Duration.
func span(n int, w time.Duration) string {
	if w > 0 && int64(n) > int64(^uint64(0)>>1)/int64(w) {
		return fmt.Sprintf("%d×%v", n, w)
	}
	return (time.Duration(n) * w).String()
}

func herdTable(w io.Writer, o *options, cfg sim.HerdConfig, res []sim.HerdResult) {
	header(w, fmt.Sprintf("herd: %d clients fail at t=0; base %v, cap %v, %d attempts; %v windows; %d runs",
		cfg.Clients, cfg.Policy.Base, cfg.Policy.Cap, cfg.Policy.MaxAttempts, cfg.Window, cfg.Runs))
	var expShare float64
	for _, r := range res {
		if r.Policy == "exponential" {
			expShare = r.PeakShare
		}
	}
	tw := table(w)
	fmt.Fprintln(tw, "policy\tretries\tpeak share\tmin\tmax\texponential/this\tlast retry\t")
	for _, r := range res {
		lo, hi := minMax(r.PeakShares)
		ratio := "-"
		if expShare > 0 && r.PeakShare > 0 {
			ratio = fmt.Sprintf("%.1fx", expShare/r.PeakShare)
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.2f%%\t%.2f%%\t%.2f%%\t%s\t%s\t\n",
			label(o, r.Policy), r.Retries, 100*r.PeakShare, 100*lo, 100*hi, ratio, span(len(r.Series), r.Window))
	}
	tw.Flush()
	fmt.Fprintln(w, "peak share: the most retries in one window / all retries (mean, min, max over runs); last retry: end of the last non-empty window, first run")
}

func outageTable(w io.Writer, o *options, cfg sim.OutageConfig, res []sim.OutageResult) {
	header(w, fmt.Sprintf("outage: %v outage, %d clients arriving uniformly during it; base %v, cap %v, %d attempts; %d runs",
		cfg.Outage, cfg.Clients, cfg.Policy.Base, cfg.Policy.Cap, cfg.Policy.MaxAttempts, cfg.Runs))
	tw := table(w)
	fmt.Fprintln(tw, "policy\tsuccess rate\tmin\tmax\tcalls/client\t")
	for _, r := range res {
		lo, hi := minMax(r.SuccessRates)
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%.3f\t%.2f\t\n", label(o, r.Policy), r.SuccessRate, lo, hi, r.CallsPerClient)
	}
	tw.Flush()
	fmt.Fprintln(w, "success rate: clients that called at or after the end of the outage before running out of attempts")
}

func contentionTable(w io.Writer, o *options, cfg sim.ContentionConfig, res []sim.ContentionResult) {
	attempts := "unlimited"
	if cfg.Policy.MaxAttempts > 0 {
		attempts = fmt.Sprint(cfg.Policy.MaxAttempts)
	}
	header(w, fmt.Sprintf("contention (Brooker 2015 OCC): network |N(%v, %v)|; base %v (decorrelated %v), cap %v, attempts %s; %d runs per size",
		cfg.NetMean, cfg.NetSD, cfg.Policy.Base, cfg.DecorrelatedBase(), cfg.Policy.Cap, attempts, cfg.Runs))
	metrics := []struct {
		title string
		cell  func(p sim.ContentionPoint) string
	}{
		{"calls (writes processed, mean)", func(p sim.ContentionPoint) string { return fmt.Sprintf("%.0f", p.Calls) }},
		{"time (last success reply, mean, seconds)", func(p sim.ContentionPoint) string { return fmt.Sprintf("%.3f", p.Time.Seconds()) }},
	}
	for _, m := range metrics {
		fmt.Fprintf(w, "%s\n", m.title)
		tw := table(w)
		var head strings.Builder
		head.WriteString("clients\t")
		for _, r := range res {
			head.WriteString(label(o, r.Policy) + "\t")
		}
		fmt.Fprintln(tw, head.String())
		for i, n := range cfg.Clients {
			fmt.Fprintf(tw, "%d\t", n)
			for _, r := range res {
				fmt.Fprintf(tw, "%s\t", m.cell(r.Points[i]))
			}
			fmt.Fprintln(tw)
		}
		tw.Flush()
	}
	for _, r := range res {
		for _, p := range r.Points {
			if p.GaveUp > 0 {
				fmt.Fprintf(w, "note: %s gave up on %.1f clients per run at %d clients\n", r.Policy, p.GaveUp, p.Clients)
			}
		}
	}
}

func amplificationTable(w io.Writer, o *options, cfg sim.AmplificationConfig, res []sim.AmplificationResult) {
	header(w, fmt.Sprintf("amplification: %d layers over a dependency that fails after %v; %d attempts per retrying layer; base %v, cap %v; %d requests",
		cfg.Layers, cfg.CallLatency, cfg.Policy.MaxAttempts, cfg.Policy.Base, cfg.Policy.Cap, cfg.Requests))
	one := "top layer only"
	if cfg.RetryLayer != 1 {
		one = fmt.Sprintf("layer %d only", cfg.RetryLayer)
	}
	tw := table(w)
	fmt.Fprintf(tw, "policy\tevery layer: load at dependency\tcalls, all layers\ttime to fail\t%s: load\tcalls\ttime to fail\tinnermost only: load\tcalls\ttime to fail\t\n", one)
	for _, r := range res {
		fmt.Fprintf(tw, "%s\t%.0fx\t%.0f\t%v\t%.0fx\t%.0f\t%v\t%.0fx\t%.0f\t%v\t\n", label(o, r.Policy),
			r.EveryLayer.BottomCalls, r.EveryLayer.TotalCalls, r.EveryLayer.TimeToFail.Round(time.Millisecond),
			r.OneLayer.BottomCalls, r.OneLayer.TotalCalls, r.OneLayer.TimeToFail.Round(time.Millisecond),
			r.Innermost.BottomCalls, r.Innermost.TotalCalls, r.Innermost.TimeToFail.Round(time.Millisecond))
	}
	tw.Flush()
	fmt.Fprintln(w, "load: calls reaching the failing dependency per top-level request; backoff changes how long, not how many")
	fmt.Fprintf(w, "the library itself, %d nested Retrier.Do over the policy with zero delays (counting only):\n", cfg.Layers)
	tw = table(w)
	fmt.Fprintln(tw, "policy\tdefault: load at dependency\tcalls, all layers\tRetryInner: load\tcalls\t")
	for _, r := range res {
		fmt.Fprintf(tw, "%s\t%.0fx\t%.0f\t%.0fx\t%.0f\t\n", label(o, r.Policy),
			r.Library.BottomCalls, r.Library.TotalCalls, r.LibraryRetryInner.BottomCalls, r.LibraryRetryInner.TotalCalls)
	}
	tw.Flush()
}

func periodicTable(w io.Writer, o *options, cfg sim.PeriodicConfig, res []sim.PeriodicResult) {
	header(w, fmt.Sprintf("periodic: %d jobs every %v for %v, each start offset by the source's first delay (base = cap = %v); %d runs",
		cfg.Jobs, cfg.Interval, cfg.Horizon, cfg.Interval, cfg.Runs))
	tw := table(w)
	fmt.Fprintln(tw, "offset source\tpeak calls/s\tmean calls/s\tpeak/mean\t")
	for _, r := range res {
		fmt.Fprintf(tw, "%s\t%.1f\t%.2f\t%.0fx\t\n", label(o, r.Policy), r.Peak, r.Mean, r.Peak/r.Mean)
	}
	tw.Flush()
	fmt.Fprintln(w, "no-offset: every job starts on time; ticker: a uniform offset in [0, interval) per job and period, the Ticker's offset;")
	fmt.Fprintln(w, "no-backoff and exponential give every job the same offset: that is the fleet without a random offset;")
	fmt.Fprintln(w, "decorrelated does too here, because with base = cap its draw min(cap, U[base, 3·base]) is always cap")
}

func minMax(v []float64) (lo, hi float64) {
	for i, x := range v {
		if i == 0 || x < lo {
			lo = x
		}
		if i == 0 || x > hi {
			hi = x
		}
	}
	return lo, hi
}
