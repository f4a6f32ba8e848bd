// Package sim runs your own [backoff.Policy] through the canonical fleet
// workloads of docs/simulations.md and reports its figures next to the
// library's policies and two hand-written baselines, from the same seeded
// random streams.
//
//	mine := sim.Contender{Name: "constant-1s", New: func(backoff.Config, backoff.Rng) (backoff.Policy, error) {
//		return backoff.PolicyFunc(func(int, error) (time.Duration, error) { return time.Second, nil }), nil
//	}}
//	res, err := sim.Run(sim.Herd, sim.Options{Seed: 1}, mine)
//	if err == nil {
//		sim.Format(os.Stdout, res)
//	}
//
// The simulation is deterministic and runs in virtual time: the same seed
// gives the same figures on any machine and any number of cores, and the
// built-in policies' figures are those of docs/simulations.md
// (go run ./cmd/backoffsim) for the same seed and runs.
package sim

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/backoffgo/backoff"
	isim "github.com/backoffgo/backoff/internal/sim"
)

// A Workload names one of the canonical workloads. Each runs with the
// parameters of docs/simulations.md; only the seed and the number of runs
// can be changed (see [Options]).
type Workload string

// The workloads [Run] accepts, and the figures each reports for every
// policy, in this order. Times are in seconds; every figure is a mean over
// the runs.
const (
	// Herd: 1,000 clients fail at t = 0 against a dependency that stays
	// down, 8 attempts each (base 100 ms, cap 10 s). Figures: "peak share",
	// the most retries in one 10 ms window over all retries (lower is
	// better; NaN if no client retried), and "retries/client".
	Herd Workload = "herd"
	// Outage: 10,000 clients arrive uniformly during a 30 s outage, 8
	// attempts each (base 100 ms, cap 10 s). Figures: "success", the share
	// of clients that call at or after its end (higher is better), and
	// "calls/client".
	Outage Workload = "outage"
	// Contention: Brooker's optimistic-concurrency workload with 200
	// clients, network delay |Normal(10 ms, 2 ms)|, base 10 ms, cap 2 s, no
	// attempt limit. Figures: "writes" the server processed, "time (s)"
	// until the last client succeeded, and "gave up", the clients whose
	// policy stopped before their write succeeded.
	Contention Workload = "contention"
	// Amplification: five layers of 3 attempts each over a dependency that
	// always fails within 10 ms (base 100 ms, cap 10 s). Figures: "load",
	// calls reaching the dependency per request with every layer retrying
	// (at most 3^5 = 243), "time to fail (s)" for that stack, and "top-only
	// time (s)" with the top layer alone retrying.
	Amplification Workload = "amplification"
	// Periodic: 1,000 jobs due every 5 minutes for an hour, each delaying
	// its call by the first delay of a fresh sequence of the policy, built
	// with Base = Cap = 5 min and MaxAttempts 2. Figures: "peak/s", the
	// most calls in one second, and "mean/s". The comparison adds
	// "no-offset" and "ticker", the offset of backoff.Ticker.
	Periodic Workload = "periodic"
	// Recovery: the herd with 1,000 attempts per client and the dependency
	// back at T = 30 s or 300 s. Figures: "peak at 30s" and "peak at 300s",
	// the most calls in one 10 ms window between T and T + cap, and
	// "dispersion" of the calls per window over [300 s, 600 s) with the
	// dependency still down (about 1 when calls are independent, far above
	// 1 when they bunch; NaN without calls there).
	Recovery Workload = "recovery"
)

// A Contender is a policy under test.
type Contender struct {
	// Name labels the policy's results. It must not be empty, nor repeat
	// another contender's name or a comparison policy's ("exponential",
	// "full-jitter", "equal-jitter", "decorrelated", "no-backoff",
	// "timid-jitter", "no-offset", "ticker").
	Name string
	// New builds the policy for one simulated run, must not be nil, and
	// may be called from several goroutines at once. cfg holds the
	// workload's Base, Cap and MaxAttempts, the values the library's
	// policies are built with; New may use them or ignore them. rng is the
	// run's seeded random source, used by one goroutine only: a policy
	// that draws from it needs no lock and gives the same figures for the
	// same seed. The policy's sequence is started as backoff.Do starts it
	// (NewSequence, for a backoff.Sequencer) once per client or call, and
	// is stopped after cfg.MaxAttempts calls (unless that is
	// backoff.Unlimited) whatever it returns; a negative delay counts as 0.
	// An error or a nil policy from New, and a panic in New or in the
	// policy, make Run return an error naming the contender.
	New func(cfg backoff.Config, rng backoff.Rng) (backoff.Policy, error)
}

// Options are the parameters of [Run] that can change. The zero value is
// seed 0 with each workload's own number of runs.
type Options struct {
	// Seed selects the random streams.
	Seed uint64
	// Runs is the number of independent runs each figure is averaged over,
	// from 0 to 100; 0 means the workload's own: 100 for Contention,
	// 10 for the others. Amplification, which has no runs, simulates
	// 10 × Runs requests (100 by default). The work grows linearly with it.
	Runs int
}

// Limits on Run's arguments, which bound its work: with both at their
// maximum, a call runs for some seconds of CPU time.
const (
	maxRuns       = 100 // Options.Runs
	maxContenders = 16  // contenders given to Run
)

// A Result holds one policy's figures in one workload.
type Result struct {
	Workload Workload
	// Policy is the contender's name.
	Policy string
	// Builtin is true for the policies Run adds for comparison: the
	// library's, and the hand-written baselines (no-backoff, timid-jitter,
	// no-offset).
	Builtin bool
	// Figures holds the workload's figures, in the order its constant
	// documents. A figure that is undefined for this policy is NaN.
	Figures []Figure
}

// A Figure is one named measurement.
type Figure struct {
	Name  string
	Value float64
}

// A ParamError reports an argument of [Run] refused before anything runs.
type ParamError struct {
	// Param names the argument: "workload", "Options.Runs",
	// "contenders", or a contender's field such as "contenders[1].Name".
	Param string
	// Value is the value refused.
	Value any
	// Reason says what the argument must be.
	Reason string
}

func (e *ParamError) Error() string {
	return fmt.Sprintf("sim: invalid %s %#v: %s", e.Param, e.Value, e.Reason)
}

// Run simulates workload w for the comparison policies and then for each
// of mine, in order, and returns one Result per policy, comparisons first.
// mine may be empty, and holds at most 16 contenders. Arguments out of range are refused with a
// *[ParamError] before anything runs; a contender whose New fails or
// panics, or whose policy panics or drives virtual time past the largest
// time.Duration, makes Run return an error naming it, and no results.
//
// Run uses up to GOMAXPROCS goroutines and returns when they are done; it
// may be called from several goroutines at once.
func Run(w Workload, opt Options, mine ...Contender) ([]Result, error) {
	row, err := lookup(w)
	if err != nil {
		return nil, err
	}
	cmp := row.comparisons()
	if opt.Runs < 0 || opt.Runs > maxRuns {
		return nil, &ParamError{Param: "Options.Runs", Value: opt.Runs, Reason: "want 0 (the workload's own) to " + strconv.Itoa(maxRuns)}
	}
	if err := check(mine); err != nil {
		return nil, err
	}
	cs := append([]isim.Contender(nil), cmp...)
	for _, c := range mine {
		cs = append(cs, isim.Contender{Name: c.Name, New: limit(c.New)})
	}
	runs := func(own int) int {
		if opt.Runs == 0 {
			return own
		}
		return opt.Runs
	}
	rows, err := row.simulate(cs, runs, opt.Seed)
	if err != nil {
		return nil, err
	}
	res := make([]Result, len(rows))
	for i, r := range rows {
		res[i] = Result{Workload: w, Policy: cs[i].Name, Builtin: i < len(cmp), Figures: r}
	}
	return res, nil
}

// workload is a row of the table of workloads: how Run runs one.
type workload struct {
	name Workload
	// comparisons returns the policies run for comparison.
	comparisons func() []isim.Contender
	// simulate runs the canonical configuration for cs with runs(own)
	// runs, own being the workload's default, and returns each
	// contender's figures.
	simulate func(cs []isim.Contender, runs func(own int) int, seed uint64) ([][]Figure, error)
}

// workloads is the table of the workloads Run accepts, in documentation
// order.
var workloads = []workload{
	{Herd, isim.All, func(cs []isim.Contender, runs func(int) int, seed uint64) ([][]Figure, error) {
		cfg := isim.DefaultHerd()
		cfg.Runs = runs(cfg.Runs)
		rs, err := isim.Herd(cfg, cs, seed)
		return figures(rs, err, func(r isim.HerdResult) []Figure {
			share := r.PeakShare
			if r.Retries == 0 {
				share = math.NaN() // no retries: no share
			}
			return []Figure{{"peak share", share}, {"retries/client", r.Retries / float64(cfg.Clients)}}
		})
	}},
	{Outage, isim.All, func(cs []isim.Contender, runs func(int) int, seed uint64) ([][]Figure, error) {
		cfg := isim.DefaultOutage()
		cfg.Runs = runs(cfg.Runs)
		rs, err := isim.Outage(cfg, cs, seed)
		return figures(rs, err, func(r isim.OutageResult) []Figure {
			return []Figure{{"success", r.SuccessRate}, {"calls/client", r.CallsPerClient}}
		})
	}},
	{Contention, func() []isim.Contender { return isim.DefaultContention().Contenders(isim.All()) },
		func(cs []isim.Contender, runs func(int) int, seed uint64) ([][]Figure, error) {
			cfg := isim.DefaultContention()
			cfg.Runs = runs(cfg.Runs)
			cfg.Clients = []int{200}
			rs, err := isim.Contention(cfg, cs, seed)
			return figures(rs, err, func(r isim.ContentionResult) []Figure {
				p := r.Points[0]
				return []Figure{{"writes", p.Calls}, {"time (s)", p.Time.Seconds()}, {"gave up", p.GaveUp}}
			})
		}},
	{Amplification, isim.All, func(cs []isim.Contender, runs func(int) int, seed uint64) ([][]Figure, error) {
		cfg := isim.DefaultAmplification()
		cfg.Requests = runs(10) * 10 // 100 requests by default
		rs, err := isim.Amplification(cfg, cs, seed)
		return figures(rs, err, func(r isim.AmplificationResult) []Figure {
			return []Figure{{"load", r.EveryLayer.BottomCalls}, {"time to fail (s)", r.EveryLayer.TimeToFail.Seconds()},
				{"top-only time (s)", r.OneLayer.TimeToFail.Seconds()}}
		})
	}},
	{Periodic, func() []isim.Contender { return isim.DefaultPeriodic().Contenders(isim.All()) },
		func(cs []isim.Contender, runs func(int) int, seed uint64) ([][]Figure, error) {
			cfg := isim.DefaultPeriodic()
			cfg.Runs = runs(cfg.Runs)
			rs, err := isim.Periodic(cfg, cs, seed)
			return figures(rs, err, func(r isim.PeriodicResult) []Figure {
				return []Figure{{"peak/s", r.Peak}, {"mean/s", r.Mean}}
			})
		}},
	{Recovery, isim.All, func(cs []isim.Contender, runs func(int) int, seed uint64) ([][]Figure, error) {
		cfg := isim.DefaultRecovery()
		cfg.Runs = runs(cfg.Runs)
		rs, err := isim.Recovery(cfg, cs, seed)
		return figures(rs, err, func(r isim.RecoveryResult) []Figure {
			dispersion := r.SteadyDispersion
			if r.SteadyMean == 0 {
				dispersion = math.NaN() // no calls in the steady span
			}
			return []Figure{{"peak at 30s", r.Recover[0].FirstCap}, {"peak at 300s", r.Recover[1].FirstCap}, {"dispersion", dispersion}}
		})
	}},
}

// lookup returns w's row of the table, or a *ParamError for an unknown
// workload.
func lookup(w Workload) (workload, error) {
	names := make([]string, len(workloads))
	for i, row := range workloads {
		if row.name == w {
			return row, nil
		}
		names[i] = string(row.name)
	}
	return workload{}, &ParamError{Param: "workload", Value: string(w), Reason: "want one of " + strings.Join(names, ", ")}
}

// check refuses too many contenders, and a contender without a name or
// constructor or whose name is taken.
func check(mine []Contender) error {
	if len(mine) > maxContenders {
		return &ParamError{Param: "contenders", Value: len(mine), Reason: "want at most " + strconv.Itoa(maxContenders)}
	}
	taken := map[string]bool{}
	for _, name := range isim.Names() { // the comparisons of every workload
		taken[name] = true
	}
	for i, c := range mine {
		field := fmt.Sprintf("contenders[%d].", i)
		switch {
		case c.Name == "":
			return &ParamError{Param: field + "Name", Value: c.Name, Reason: "want a name"}
		case taken[c.Name]:
			return &ParamError{Param: field + "Name", Value: c.Name, Reason: "taken by another policy"}
		case c.New == nil:
			return &ParamError{Param: field + "New", Value: nil, Reason: "want a constructor"}
		}
		taken[c.Name] = true
	}
	return nil
}

// limit wraps a contender's constructor so that its policy stops after
// cfg.MaxAttempts calls, as the library's policies do.
func limit(newPolicy func(backoff.Config, backoff.Rng) (backoff.Policy, error)) func(backoff.Config, backoff.Rng) (backoff.Policy, error) {
	return func(cfg backoff.Config, rng backoff.Rng) (backoff.Policy, error) {
		p, err := newPolicy(cfg, rng)
		if err != nil || p == nil {
			return p, err
		}
		return &limited{p: p, max: cfg.MaxAttempts}, nil
	}
}

// limited is a policy stopped after max calls, unless max is
// backoff.Unlimited.
type limited struct {
	p   backoff.Policy
	max int
}

func (l *limited) NextDelay(attempt int, err error) (time.Duration, error) {
	if l.max != backoff.Unlimited && attempt >= l.max {
		return 0, backoff.ErrExhausted
	}
	return l.p.NextDelay(attempt, err)
}

// NewSequence starts a sequence of the wrapped policy, with the same limit.
func (l *limited) NewSequence() backoff.Policy {
	if s, ok := l.p.(backoff.Sequencer); ok {
		return &limited{p: s.NewSequence(), max: l.max}
	}
	return l
}

// figures returns fig of each result, or err.
func figures[R any](rs []R, err error, fig func(R) []Figure) ([][]Figure, error) {
	if err != nil {
		return nil, err
	}
	out := make([][]Figure, len(rs))
	for i, r := range rs {
		out[i] = fig(r)
	}
	return out, nil
}

// Format writes results as one table per workload, in the order given,
// separated by a blank line: a row per policy, a column per figure, values
// rounded to 3 decimals and an undefined (NaN) figure as "-". The caller's
// policies are marked "(yours)". It returns w's error, if any.
func Format(w io.Writer, results []Result) error {
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for i, r := range results {
		if i == 0 || r.Workload != results[i-1].Workload {
			if i > 0 {
				fmt.Fprintln(tw)
			}
			cells := []string{string(r.Workload)}
			for _, f := range r.Figures {
				cells = append(cells, f.Name)
			}
			fmt.Fprintln(tw, strings.Join(cells, "\t"))
		}
		cells := []string{r.Policy}
		if !r.Builtin {
			cells[0] += " (yours)"
		}
		for _, f := range r.Figures {
			v := "-"
			if !math.IsNaN(f.Value) {
				v = strconv.FormatFloat(f.Value, 'f', 3, 64)
			}
			cells = append(cells, v)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	tw.Flush() // into b: no error
	_, err := w.Write(b.Bytes())
	return err
}
