// Command backoffsim runs the sim package's canonical workloads against the
// backoff library's policies and two hand-written baselines, and prints one
// table per workload.
//
// Usage:
//
//	go run ./cmd/backoffsim [flags]
//
// With no flags it runs every workload (herd, outage, contention,
// amplification, periodic) for every policy with the defaults of the sim
// package's Default* functions. Flags select workloads and policies, change
// the seed, runs and parameters, and -svg DIR writes one chart per workload.
// Run with -h for the full list.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/sim"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// workloads lists the workload names in run order.
var workloads = []string{"herd", "outage", "contention", "amplification", "periodic"}

// options are the parsed command-line flags.
type options struct {
	workloads []string
	policies  []sim.Contender
	seed      uint64
	runs      int
	clients   int
	sweep     []int
	base, cap time.Duration
	attempts  int
	set       map[string]bool // flags given explicitly
	window    time.Duration
	outage    time.Duration
	netMean   time.Duration
	netSD     time.Duration
	layers    int
	interval  time.Duration
	horizon   time.Duration
	svgDir    string
}

const usageHead = `usage: backoffsim [flags]

Simulates a fleet of clients retrying with each backoff policy of
github.com/backoffgo/backoff, plus two hand-written baselines (no-backoff:
retry at once; timid-jitter: exponential plus a uniform 0-200ms), on five
workloads, and prints a table per workload. Virtual time: a run takes
milliseconds, not the simulated seconds. Same seed, same numbers.

Workloads (defaults in sim's Default* functions):
  herd           1,000 clients fail at t=0 against a dependency that stays down;
                 peak share = most retries in one 10ms window / all retries
  outage         10,000 clients arrive uniformly during a 30s outage; success
                 rate = share that call at or after its end within their attempts
  contention     Brooker 2015 optimistic concurrency: N clients read then write
                 one row; calls = writes processed, time = last success reply
  amplification  5 layers x 3 attempts over a failing dependency (243x) vs
                 retries at the top layer only (3x)
  periodic       1,000 jobs on a 5-minute schedule, each offset by the policy's
                 first delay with base = cap = interval; peak calls per second

Flags:
`

// parse parses args into options, or returns an error that explains the
// bad value. flag.ErrHelp is returned for -h.
func parse(args []string, stderr io.Writer) (*options, error) {
	fs := flag.NewFlagSet("backoffsim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageHead)
		fs.PrintDefaults()
	}
	var (
		wl, pol, sweep string
		seed           uint64
		o              options
	)
	fs.StringVar(&wl, "workload", "all", "comma-separated workloads to run: all, "+strings.Join(workloads, ", "))
	fs.StringVar(&pol, "policies", "all", "comma-separated policies: all, builtins, baselines, or names: "+policyNames())
	fs.Uint64Var(&seed, "seed", 1, "random seed; the same seed gives the same numbers")
	fs.IntVar(&o.runs, "runs", 0, "independent runs averaged per result (defaults: 10; contention 100 per fleet size; amplification is deterministic in its counts)")
	fs.IntVar(&o.clients, "clients", 0, "fleet size for herd (1000) and outage (10000), jobs for periodic (1000), and the single fleet size for contention unless -sweep is given")
	fs.StringVar(&sweep, "sweep", "", "contention fleet sizes as FROM:TO:STEP (default 10:200:10)")
	fs.DurationVar(&o.base, "base", 0, "override the policies' Base, the first retry's ceiling (defaults: 100ms; contention 10ms, where decorrelated starts at half of it, 5ms; periodic uses its interval)")
	fs.DurationVar(&o.cap, "cap", 0, "override the policies' Cap (defaults: 10s; contention 2s)")
	fs.IntVar(&o.attempts, "attempts", 0, "override MaxAttempts, calls including the first (defaults: herd/outage 8, amplification 3 per layer; contention unlimited, -1)")
	fs.DurationVar(&o.window, "window", 0, "herd: width of a window of simultaneous retries (default 10ms)")
	fs.DurationVar(&o.outage, "outage", 0, "outage: how long the dependency is down (default 30s)")
	fs.DurationVar(&o.netMean, "net-mean", 0, "contention: mean one-way network delay (default 10ms)")
	fs.DurationVar(&o.netSD, "net-sd", 0, "contention: standard deviation of the network delay (default 2ms)")
	fs.IntVar(&o.layers, "layers", 0, "amplification: depth of the call stack (default 5)")
	fs.DurationVar(&o.interval, "interval", 0, "periodic: schedule interval (default 5m)")
	fs.DurationVar(&o.horizon, "horizon", 0, "periodic: simulated time (default 1h)")
	fs.StringVar(&o.svgDir, "svg", "", "also write one chart per workload, DIR/WORKLOAD.svg (the committed charts are docs/)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (all options are flags; see -h)", fs.Arg(0))
	}
	o.seed = seed
	o.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })

	var err error
	if o.workloads, err = parseWorkloads(wl); err != nil {
		return nil, err
	}
	if o.policies, err = parsePolicies(pol); err != nil {
		return nil, err
	}
	if sweep != "" {
		if o.sweep, err = parseSweep(sweep); err != nil {
			return nil, err
		}
	}
	positive := []struct {
		name string
		v    int64
	}{
		{"runs", int64(o.runs)}, {"clients", int64(o.clients)}, {"base", int64(o.base)}, {"cap", int64(o.cap)},
		{"window", int64(o.window)}, {"outage", int64(o.outage)}, {"net-mean", int64(o.netMean)},
		{"layers", int64(o.layers)}, {"interval", int64(o.interval)}, {"horizon", int64(o.horizon)},
	}
	for _, p := range positive {
		if o.set[p.name] && p.v <= 0 {
			return nil, fmt.Errorf("-%s must be positive", p.name)
		}
	}
	if o.set["net-sd"] && o.netSD < 0 {
		return nil, errors.New("-net-sd must not be negative")
	}
	if o.set["attempts"] && o.attempts < 1 && o.attempts != backoff.Unlimited {
		return nil, fmt.Errorf("-attempts must be at least 1, or -1 for unlimited (got %d)", o.attempts)
	}
	if o.set["base"] && o.set["cap"] && o.cap < o.base {
		return nil, fmt.Errorf("-cap %v is below -base %v", o.cap, o.base)
	}
	if o.set["base"] && !o.set["cap"] {
		for _, w := range o.workloads {
			if c, ok := defaultCaps[w]; ok && o.base > c {
				return nil, fmt.Errorf("-base %v is above the %s workload's default cap %v: give -cap too", o.base, w, c)
			}
		}
	}
	if o.set["clients"] && o.sweep == nil && o.clients > maxContentionClients && slices.Contains(o.workloads, "contention") {
		return nil, fmt.Errorf("-clients %d is too many for contention, whose work grows with the square of the fleet (at most %d); use -workload to leave contention out", o.clients, maxContentionClients)
	}
	return &o, nil
}

// defaultCaps are the policies' default caps per workload; periodic sets
// base = cap = its interval instead.
var defaultCaps = map[string]time.Duration{
	"herd":          sim.DefaultHerd().Params.Cap,
	"outage":        sim.DefaultOutage().Params.Cap,
	"contention":    sim.DefaultContention().Params.Cap,
	"amplification": sim.DefaultAmplification().Params.Cap,
}

// maxContentionClients bounds -clients when it sets the contention fleet:
// no-backoff's work grows with the square of the fleet.
const maxContentionClients = 5000

func policyNames() string {
	var names []string
	for _, c := range sim.All() {
		names = append(names, c.Name)
	}
	return strings.Join(names, ", ")
}

func parseWorkloads(s string) ([]string, error) {
	if s == "all" {
		return workloads, nil
	}
	var out []string
	for _, w := range strings.Split(s, ",") {
		w = strings.TrimSpace(w)
		found := false
		for _, k := range workloads {
			if w == k {
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("-workload: unknown workload %q (want all or some of %s)", w, strings.Join(workloads, ", "))
		}
		out = append(out, w)
	}
	return out, nil
}

func parsePolicies(s string) ([]sim.Contender, error) {
	switch s {
	case "all":
		return sim.All(), nil
	case "builtins":
		return sim.Builtins(), nil
	case "baselines":
		return sim.Baselines(), nil
	}
	var out []sim.Contender
	for _, name := range strings.Split(s, ",") {
		c, err := sim.Lookup(strings.TrimSpace(name))
		if err != nil {
			return nil, fmt.Errorf("-policies: unknown policy %q (want all, builtins, baselines or some of %s)", name, policyNames())
		}
		out = append(out, c)
	}
	return out, nil
}

func parseSweep(s string) ([]int, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return nil, fmt.Errorf("-sweep %q: want FROM:TO:STEP, e.g. 10:200:10", s)
	}
	var v [3]int
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-sweep %q: %q is not a positive integer", s, p)
		}
		v[i] = n
	}
	if v[1] < v[0] {
		return nil, fmt.Errorf("-sweep %q: TO is below FROM", s)
	}
	return sim.Sweep(v[0], v[1], v[2]), nil
}

// override applies the -base, -cap and -attempts flags to p.
func (o *options) override(p sim.Params) sim.Params {
	if o.set["base"] {
		p.Base = o.base
		if p.DecorrelatedBase > 0 {
			p.DecorrelatedBase = o.base / 2
		}
	}
	if o.set["cap"] {
		p.Cap = o.cap
	}
	if o.set["attempts"] {
		p.MaxAttempts = o.attempts
	}
	return p
}

func (o *options) runsOr(def int) int {
	if o.set["runs"] {
		return o.runs
	}
	return def
}

func run(args []string, stdout, stderr io.Writer) int {
	o, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "backoffsim: %v\n", err)
		return 2
	}
	if err := simulate(o, stdout); err != nil {
		fmt.Fprintf(stderr, "backoffsim: %v\n", err)
		return 1
	}
	return 0
}

// simulate runs the selected workloads, printing tables to w and writing
// charts when asked.
func simulate(o *options, w io.Writer) error {
	if o.svgDir != "" {
		if err := os.MkdirAll(o.svgDir, 0o755); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "backoffsim: seed %d; policies marked * are hand-written baselines, not part of the library\n", o.seed)
	for _, wl := range o.workloads {
		start := time.Now()
		var chart []byte
		var err error
		switch wl {
		case "herd":
			chart, err = runHerd(o, w)
		case "outage":
			chart, err = runOutage(o, w)
		case "contention":
			chart, err = runContention(o, w)
		case "amplification":
			chart, err = runAmplification(o, w)
		case "periodic":
			chart, err = runPeriodic(o, w)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", wl, err)
		}
		fmt.Fprintf(w, "(%s: %v)\n", wl, time.Since(start).Round(time.Millisecond))
		if o.svgDir != "" {
			if err := os.WriteFile(filepath.Join(o.svgDir, wl+".svg"), chart, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}
