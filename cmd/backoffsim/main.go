// Command backoffsim runs the simulator's (internal/sim) canonical workloads against the
// backoff library's policies and two hand-written baselines, and prints one
// table per workload.
//
// Usage:
//
//	go run ./cmd/backoffsim [flags]
//
// With no flags it runs every workload (-h lists them) for every policy
// with the defaults of the sim package's Default* functions. Flags select workloads and policies, change
// the seed, runs and parameters; -svg DIR writes one chart per workload and
// -doc prints docs/simulations.md instead of the tables. Every configuration
// is checked against the sim package's limits before anything runs. Run
// with -h for the full list.
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
	"github.com/backoffgo/backoff/internal/sim"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// options are the parsed command-line flags.
type options struct {
	workloads []workload
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
	doc       bool
	readme    bool
	rates     []float64     // budget: request rates, nil for the default
	fixed     bool          // share-fleet: fixed arrivals and zero delays
	memory    time.Duration // share-fleet: the clients' memory of "don't retry"
	forget    bool          // share-fleet: the memory ends at a success
	slots     int           // overload: the server's slots
}

var usageHead = `usage: backoffsim [flags]

Simulates a fleet of clients retrying with each backoff policy of
github.com/backoffgo/backoff, plus two hand-written baselines (no-backoff:
retry at once; timid-jitter: exponential plus a uniform 0-` + dur(sim.TimidSpread) + `), on each
workload below, and prints a table per workload. Virtual time: a run takes
milliseconds, not the simulated seconds. Same seed, same numbers. Every
configuration is checked against the sim package's work and memory limits
before anything runs; on a terminal, a run longer than about two seconds
shows its progress on stderr.

Workloads (defaults in sim's Default* functions):
`

// parse parses args into options, or returns an error that explains the
// bad value. flag.ErrHelp is returned for -h.
func parse(args []string, stderr io.Writer) (*options, error) {
	fs := flag.NewFlagSet("backoffsim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageHead)
		for _, w := range workloads {
			fmt.Fprintf(fs.Output(), "  %-14s %s\n", w.name(), strings.ReplaceAll(w.usage(), "\n", "\n                 "))
		}
		fmt.Fprint(fs.Output(), "\nFlags:\n")
		fs.PrintDefaults()
	}
	var (
		wl, pol, sweep, rates string
		o                     options
	)
	fs.StringVar(&wl, "workload", "all", "comma-separated workloads to run: all, "+strings.Join(workloadNames(), ", "))
	fs.StringVar(&pol, "policies", "all", "comma-separated policies and groups (all, builtins, baselines), e.g. builtins,no-backoff; policies: "+strings.Join(policyNames(), ", "))
	fs.Uint64Var(&o.seed, "seed", 1, "random seed; the same seed gives the same numbers")
	fs.IntVar(&o.runs, "runs", 0, fmt.Sprintf("independent runs averaged per result (defaults: %d; contention %d per fleet size; amplification is deterministic in its counts)", def.herd.Runs, def.contention.Runs))
	_, fleet := shareRates(def.serverShare)
	fs.IntVar(&o.clients, "clients", 0, fmt.Sprintf("fleet size for herd (%d) and outage (%d), jobs for periodic (%d), the single fleet size for contention unless -sweep is given, and server-share's fleet (%d)",
		def.herd.Clients, def.outage.Clients, def.periodic.Jobs, fleet.Clients))
	fs.StringVar(&sweep, "sweep", "", "contention fleet sizes as FROM:TO:STEP (default "+sweepOf(def.contention.Clients)+")")
	fs.DurationVar(&o.base, "base", 0, fmt.Sprintf("override the policies' Base, the first retry's ceiling (defaults: %s; contention %s, where decorrelated starts at half of it, %s; periodic uses its interval)",
		dur(def.herd.Policy.Base), dur(def.contention.Policy.Base), dur(def.contention.DecorrelatedBase())))
	fs.DurationVar(&o.cap, "cap", 0, fmt.Sprintf("override the policies' Cap (defaults: %s; contention %s)", dur(def.herd.Policy.Cap), dur(def.contention.Policy.Cap)))
	fs.IntVar(&o.attempts, "attempts", 0, fmt.Sprintf("override MaxAttempts, calls including the first (defaults: %s, amplification %d per layer; contention unlimited, %d)",
		both("herd", "outage", def.herd.Policy.MaxAttempts, def.outage.Policy.MaxAttempts), def.amplification.Policy.MaxAttempts, backoff.Unlimited))
	fs.DurationVar(&o.window, "window", 0, "herd: width of a window of simultaneous retries (default "+dur(def.herd.Window)+")")
	fs.DurationVar(&o.outage, "outage", 0, "outage, server-share, share-fleet: how long the dependency is down (defaults: "+dur(def.outage.Outage)+"; share-fleet "+dur(def.shareFleet.Outage)+")")
	fs.DurationVar(&o.netMean, "net-mean", 0, "contention: mean one-way network delay (default "+dur(def.contention.NetMean)+")")
	fs.DurationVar(&o.netSD, "net-sd", 0, "contention: standard deviation of the network delay (default "+dur(def.contention.NetSD)+")")
	fs.IntVar(&o.layers, "layers", 0, fmt.Sprintf("amplification: depth of the call stack (default %d)", def.amplification.Layers))
	fs.DurationVar(&o.interval, "interval", 0, "periodic: schedule interval (default "+dur(def.periodic.Interval)+")")
	fs.DurationVar(&o.horizon, "horizon", 0, "periodic: simulated time (default "+dur(def.periodic.Horizon)+")")
	one, _ := shareRates(def.serverShare)
	fs.StringVar(&rates, "rates", "", "budget: comma-separated request rates per second (default "+rateList(def.budget.Rates)+"); server-share: the one client's (default "+rateList(one)+")")
	fs.BoolVar(&o.fixed, "fixed", false, "share-fleet: requests at fixed intervals and zero network and service delays, instead of Poisson arrivals and real delays")
	fs.DurationVar(&o.memory, "memory", 0, "share-fleet: every client does not retry the service's failures for this long after it said \"don't retry\" (default 0: no memory)")
	fs.BoolVar(&o.forget, "forget", false, "share-fleet: with -memory, a client forgets the \"don't retry\" at its first success")
	fs.IntVar(&o.slots, "slots", 0, fmt.Sprintf("overload: the server's slots, requests served at once (default %d, a capacity of %.0f requests/s; the load is relative to it)", def.overload.Slots, def.overload.Capacity()))
	fs.StringVar(&o.svgDir, "svg", "", "also write one chart per workload, DIR/WORKLOAD.svg (the committed charts are docs/)")
	fs.BoolVar(&o.doc, "doc", false, "print docs/simulations.md (every workload at the defaults, the claims against the measurements) instead of the tables; no other flag but -svg")
	fs.BoolVar(&o.readme, "readme", false, "print README.md's block of figures (between its figures markers), from the same run as -doc; no other flag")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (all options are flags; see -h)", fs.Arg(0))
	}
	o.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	if o.readme {
		for name := range o.set {
			if name != "readme" {
				return nil, fmt.Errorf("-readme runs the defaults: -%s cannot be combined with it", name)
			}
		}
	}
	if o.doc {
		for name := range o.set {
			if name != "doc" && name != "svg" {
				return nil, fmt.Errorf("-doc runs the defaults: -%s cannot be combined with it", name)
			}
		}
	}

	var err error
	if o.workloads, err = parseWorkloads(wl); err != nil {
		return nil, err
	}
	if o.policies, err = parsePolicies(pol); err != nil {
		return nil, err
	}
	if rates != "" {
		if o.rates, err = parseRates(rates); err != nil {
			return nil, err
		}
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
		{"layers", int64(o.layers)}, {"interval", int64(o.interval)}, {"horizon", int64(o.horizon)}, {"slots", int64(o.slots)},
	}
	for _, p := range positive {
		if o.set[p.name] && p.v <= 0 {
			return nil, fmt.Errorf("-%s must be positive", p.name)
		}
	}
	if o.forget && !o.set["memory"] {
		return nil, errors.New("-forget needs -memory")
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
	return &o, nil
}

func policyNames() []string {
	var names []string
	for _, c := range sim.All() {
		names = append(names, c.Name)
	}
	return names
}

func parseWorkloads(s string) ([]workload, error) {
	if s == "all" {
		return workloads, nil
	}
	var out []workload
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		w := lookupWorkload(name)
		if w == nil {
			return nil, fmt.Errorf("-workload: unknown workload %q (want all or some of %s)", name, strings.Join(workloadNames(), ", "))
		}
		out = append(out, w)
	}
	return out, nil
}

// policyGroups are the group names -policies accepts besides policy names.
var policyGroups = map[string]func() []sim.Contender{"all": sim.All, "builtins": sim.Builtins, "baselines": sim.Baselines}

// parsePolicies reads a comma-separated mix of group and policy names; a
// policy named twice runs once, at its first place.
func parsePolicies(s string) ([]sim.Contender, error) {
	var out []sim.Contender
	seen := map[string]bool{}
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		cs := []sim.Contender(nil)
		if g, ok := policyGroups[name]; ok {
			cs = g()
		} else {
			c, err := sim.Lookup(name)
			if err != nil {
				return nil, fmt.Errorf("-policies: unknown policy %q (want all, builtins, baselines or some of %s)", name, strings.Join(policyNames(), ", "))
			}
			cs = []sim.Contender{c}
		}
		for _, c := range cs {
			if !seen[c.Name] {
				seen[c.Name] = true
				out = append(out, c)
			}
		}
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
	sizes, err := sim.Sweep(v[0], v[1], v[2])
	if err != nil {
		return nil, fmt.Errorf("-sweep %q: %w", s, err)
	}
	return sizes, nil
}

// policy applies the -base, -cap and -attempts flags to c.
func (o *options) policy(c backoff.Config) backoff.Config {
	if o.set["base"] {
		c.Base = o.base
	}
	if o.set["cap"] {
		c.Cap = o.cap
	}
	if o.set["attempts"] {
		c.MaxAttempts = o.attempts
	}
	return c
}

// herdFleet applies the flags of the herd's fleet (-base, -cap, -attempts,
// -runs, -clients, -window), which the recovery workload shares.
func (o *options) herdFleet(policy *backoff.Config, runs, clients *int, window *time.Duration) {
	*policy = o.policy(*policy)
	*runs = o.runsOr(*runs)
	if o.set["clients"] {
		*clients = o.clients
	}
	if o.set["window"] {
		*window = o.window
	}
}

func (o *options) runsOr(def int) int {
	if o.set["runs"] {
		return o.runs
	}
	return def
}

// flagOf names the flag that sets a configuration field, for errors.
var flagOf = map[string]string{
	"Clients": "-clients", "Jobs": "-clients", "Runs": "-runs", "Window": "-window", "Outage": "-outage",
	"NetMean": "-net-mean", "NetSD": "-net-sd", "Layers": "-layers", "Interval": "-interval", "Horizon": "-horizon",
	"Rates": "-rates", "Concurrency": "-clients", "Scenarios": "-rates or -clients", "Scenarios.Rate": "-rates", "Scenarios.Clients": "-clients", "Policy.Base": "-base", "Policy.Cap": "-cap", "Policy.MaxAttempts": "-attempts", "contenders": "-policies", "Slots": "-slots",
}

// flagHint names the flags behind a refused configuration: the one that
// sets the parameter out of range or, for an estimate above its limit,
// those that set the parameters it depends on, the ones given first. It
// returns "" if no flag sets them.
func flagHint(ce *sim.ConfigError, given map[string]bool) string {
	flags := func(param string) string {
		f := flagOf[param]
		if f != "" && ce.Workload == "contention" && param == "Clients" {
			f += " or -sweep"
		}
		return f
	}
	if len(ce.Also) == 0 {
		if f := flags(ce.Param); f != "" {
			return fmt.Sprintf("%s is set by %s", ce.Param, f)
		}
		return ""
	}
	var set, unset []string
	seen := map[string]bool{}
	for _, p := range append([]string{ce.Param}, ce.Also...) {
		f := flags(p)
		if f == "" || seen[f] {
			continue
		}
		seen[f] = true
		if slices.ContainsFunc(strings.Split(f, " or "), func(f string) bool { return given[f[1:]] }) {
			set = append(set, f)
		} else {
			unset = append(unset, f)
		}
	}
	switch {
	case len(set) == 0 && len(unset) == 0:
		return ""
	case len(set) == 0:
		return "the limit depends on " + strings.Join(unset, ", ")
	case len(unset) == 0:
		return "the limit depends on " + strings.Join(set, ", ") + " (given)"
	}
	return "the limit depends on " + strings.Join(set, ", ") + " (given) and on " + strings.Join(unset, ", ")
}

// isTerminal reports whether w is a terminal; tests replace it.
var isTerminal = func(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
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
	if o.doc || o.readme {
		err = writeDoc(stdout, o)
	} else {
		err = simulate(o, stdout, stderr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "backoffsim: %v\n", err)
		var ce *sim.ConfigError
		if errors.As(err, &ce) {
			if hint := flagHint(ce, o.set); hint != "" {
				fmt.Fprintf(stderr, "backoffsim: %s\n", hint)
			}
			return 2
		}
		return 1
	}
	return 0
}

// simulate checks every selected workload, then runs them in order,
// printing tables to w and writing charts when asked. Progress and timings
// go to stderr when it is a terminal.
func simulate(o *options, w, stderr io.Writer) error {
	jobs, err := prepare(o, o.workloads)
	if err != nil {
		return err
	}
	if o.svgDir != "" {
		if err := os.MkdirAll(o.svgDir, 0o755); err != nil {
			return err
		}
	}
	tty := isTerminal(stderr)
	var start time.Time
	return runJobs(o, jobs, w, func(job) func(sim.Progress) {
		start = time.Now()
		if !tty {
			return nil
		}
		return (&progressLine{w: stderr, start: start, now: time.Now}).report
	}, func(j job, r jobResult) error {
		if tty {
			fmt.Fprintf(stderr, "(%s: %v)\n", j.name, time.Since(start).Round(time.Millisecond))
		}
		if o.svgDir != "" {
			return os.WriteFile(filepath.Join(o.svgDir, j.name+".svg"), r.chart, 0o644)
		}
		return nil
	})
}

// tablesHead writes the line that opens the tables, in the output and in
// the document.
func tablesHead(w io.Writer, o *options) {
	fmt.Fprintf(w, "backoffsim: seed %d; policies marked * are hand-written baselines, not part of the library\n", o.seed)
}

// progressAfter is how long a workload runs before it shows progress.
const progressAfter = 2 * time.Second

// progressLine shows a workload's progress on one terminal line.
type progressLine struct {
	w     io.Writer
	start time.Time
	now   func() time.Time
	shown bool
}

func (p *progressLine) report(r sim.Progress) {
	if r.Done >= r.Total {
		if p.shown {
			fmt.Fprint(p.w, "\r\033[K")
			p.shown = false
		}
		return
	}
	if p.now().Sub(p.start) < progressAfter {
		return
	}
	fmt.Fprintf(p.w, "\r\033[K%s: %s %.0f%%", r.Workload, r.Policy, 100*float64(r.Done)/float64(r.Total))
	p.shown = true
}
