package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/backoffgo/backoff/internal/sim"
	"github.com/backoffgo/backoff/retryshare"
)

// The workloads of the fleet features: the herd's recovery, the stack and
// the outage with a retry budget. The table of workloads lists them after
// the first five.

var recoveryWorkload = spec[sim.RecoveryConfig, sim.RecoveryResult]{
	title: "recovery",
	help:  recoveryHelp,
	config: func(o *options) sim.RecoveryConfig {
		cfg := sim.DefaultRecovery()
		o.herdFleet(&cfg.Policy, &cfg.Runs, &cfg.Clients, &cfg.Window)
		return cfg
	},
	validate: sim.RecoveryConfig.Validate,
	progress: func(c *sim.RecoveryConfig, p func(sim.Progress)) { c.Progress = p },
	simulate: sim.Recovery,
	table:    recoveryTable,
	chart:    recoveryChart,
}

var budgetWorkload = spec[sim.BudgetAmplificationConfig, sim.BudgetAmplificationResult]{
	title: "budget",
	help:  budgetHelp,
	config: func(o *options) sim.BudgetAmplificationConfig {
		cfg := sim.DefaultBudgetAmplification()
		cfg.Policy = o.policy(cfg.Policy)
		if o.set["layers"] {
			cfg.Layers = o.layers
		}
		if o.rates != nil {
			cfg.Rates = o.rates
		}
		return cfg
	},
	contenders: budgetContenders,
	validate:   sim.BudgetAmplificationConfig.Validate,
	progress:   func(c *sim.BudgetAmplificationConfig, p func(sim.Progress)) { c.Progress = p },
	simulate:   sim.BudgetAmplification,
	table:      budgetTable,
	chart:      budgetChart,
}

var outageBudgetWorkload = spec[sim.OutageBudgetConfig, sim.OutageBudgetResult]{
	title: "outage-budget",
	help:  "the outage with one default retry budget shared by the fleet: calls\nper client while down and success after, against no budget",
	config: func(o *options) sim.OutageBudgetConfig {
		cfg := sim.DefaultOutageBudget()
		cfg.OutageConfig = outageConfig(o)
		return cfg
	},
	validate: sim.OutageBudgetConfig.Validate,
	progress: func(c *sim.OutageBudgetConfig, p func(sim.Progress)) { c.Progress = p },
	simulate: sim.OutageBudget,
	table:    outageBudgetTable,
	chart:    outageBudgetChart,
}

// budgetContenders keeps the first selected policy: the budgeted stack
// does not simulate delays, so every policy that stops at MaxAttempts
// makes the same calls.
func budgetContenders(_ sim.BudgetAmplificationConfig, cs []sim.Contender) []sim.Contender {
	return cs[:min(len(cs), 1)]
}

// parseRates reads the -rates flag: comma-separated requests per second.
func parseRates(s string) ([]float64, error) {
	var out []float64
	for _, p := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("-rates %q: %q is not a positive number", s, p)
		}
		out = append(out, v)
	}
	return out, nil
}

// sreBound is the SRE book's arithmetic: a ratio r at each of n layers
// multiplies the load by at most (1+r)^n.
func sreBound(ratio float64, layers int) float64 { return math.Pow(1+ratio, float64(layers)) }

func recoveryTable(w io.Writer, o *options, cfg sim.RecoveryConfig, res []sim.RecoveryResult) {
	var ts []string
	for _, t := range cfg.Recover {
		ts = append(ts, t.String())
	}
	header(w, fmt.Sprintf("recovery: %d clients fail at t=0, the dependency returns at %s; base %v, cap %v, %d attempts; %v windows; %d runs",
		cfg.Clients, strings.Join(ts, " or "), cfg.Policy.Base, cfg.Policy.Cap, cfg.Policy.MaxAttempts, cfg.Window, cfg.Runs))
	tw := table(w)
	head := "policy\t"
	for _, t := range cfg.Recover {
		head += fmt.Sprintf("T=%v: 1st second\tfirst cap\t", t)
	}
	head += fmt.Sprintf("steady [%v, %v): peak\tmean\tpeak/mean\tgave up\tfirst delay >= cap by\t", cfg.SteadyFrom, cfg.SteadyFrom+cfg.SteadySpan)
	fmt.Fprintln(tw, head)
	for _, r := range res {
		fmt.Fprintf(tw, "%s\t", label(o, r.Policy))
		for _, v := range r.Recover {
			fmt.Fprintf(tw, "%.1f\t%.1f\t", v.FirstSecond, v.FirstCap)
		}
		ratio, by := "-", "never"
		if r.SteadyMean > 0 {
			ratio = fmt.Sprintf("%.1fx", r.SteadyPeak/r.SteadyMean)
		}
		if r.CapBy >= 0 {
			by = r.CapBy.Round(time.Millisecond).String()
		}
		fmt.Fprintf(tw, "%.1f\t%.2f\t%s\t%.0f\t%s\t\n", r.SteadyPeak, r.SteadyMean, ratio, r.GaveUp, by)
	}
	tw.Flush()
	fmt.Fprintln(w, "calls per window, mean over runs; 1st second: most in one window of [T, T+1s); first cap: of [T, T+cap], where every client still")
	fmt.Fprintln(w, "retrying calls once (and succeeds); steady: the dependency still down; gave up: clients per run out of attempts before the end;")
	fmt.Fprintln(w, "first delay >= cap by: when the last client's first delay of at least the cap ended (never: some client never drew one)")
}

func budgetTable(w io.Writer, o *options, cfg sim.BudgetAmplificationConfig, res []sim.BudgetAmplificationResult) {
	b := sim.BudgetDefaults(cfg.Budget)
	header(w, fmt.Sprintf("budget: %d layers x %d attempts over a failing dependency; budget ratio %g, reserve %g/s, burst %d; measured %v after %v; policy %s",
		cfg.Layers, cfg.Policy.MaxAttempts, b.Ratio, b.Reserve, b.Burst, cfg.Span, cfg.Warmup, res[0].Policy))
	tw := table(w)
	fmt.Fprintln(tw, "requests/s\tper-layer budgets: load\tratio+reserve arithmetic\tshared budget: load\tshared: retries at the bottom layer\tper-layer, top only retries\tinnermost only\t")
	for _, p := range res[0].Points {
		fmt.Fprintf(tw, "%g\t%s\t%.3fx\t%s\t%s\t%s\t%s\t\n", p.Rate, defined(p.PerLayer, "%.3fx"),
			sim.FluidLoad(b.Ratio, b.Reserve, cfg.Policy.MaxAttempts, cfg.Layers, p.Rate), defined(p.Shared, "%.3fx"),
			defined(p.SharedRetries[len(p.SharedRetries)-1], "%.3f"), defined(p.Outermost, "%.3fx"), defined(p.Innermost, "%.3fx"))
	}
	tw.Flush()
	fmt.Fprintf(w, "load: calls reaching the dependency per request (no budget: %d^%d = %.0fx); the SRE arithmetic, ratio only: %.3fx;\n",
		cfg.Policy.MaxAttempts, cfg.Layers, math.Pow(float64(cfg.Policy.MaxAttempts), float64(cfg.Layers)), sreBound(b.Ratio, cfg.Layers))
	fmt.Fprintln(w, "delays are not simulated: every policy that stops at its attempts gives these counts")
	for _, p := range res[0].Points {
		if math.IsNaN(p.PerLayer) {
			fmt.Fprintln(w, "-: undefined, no request arrived in the measured span at that rate")
			break
		}
	}
}

// defined formats v, or "-" if it is undefined (NaN).
func defined(v float64, format string) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf(format, v)
}

func outageBudgetTable(w io.Writer, o *options, cfg sim.OutageBudgetConfig, res []sim.OutageBudgetResult) {
	b := sim.BudgetDefaults(cfg.Budget)
	header(w, fmt.Sprintf("outage-budget: %v outage, %d clients arriving uniformly during it, one budget for the fleet (ratio %g, reserve %g/s, burst %d); base %v, cap %v, %d attempts; %d runs",
		cfg.Outage, cfg.Clients, b.Ratio, b.Reserve, b.Burst, cfg.Policy.Base, cfg.Policy.Cap, cfg.Policy.MaxAttempts, cfg.Runs))
	tw := table(w)
	fmt.Fprintln(tw, "policy\tsuccess rate\tmin\tmax\tcalls/client while down\tall calls/client\trefused\t")
	for _, r := range res {
		lo, hi := minMax(r.SuccessRates)
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%.3f\t%.2f\t%.2f\t%.3f\t\n", label(o, r.Policy), r.SuccessRate, lo, hi, r.DuringCalls, r.CallsPerClient, r.Refused)
	}
	tw.Flush()
	fmt.Fprintln(w, "the same arrivals as the outage table; refused: share of clients stopped by the budget (Do returns ErrBudget)")
}

func recoveryChart(cfg sim.RecoveryConfig, res []sim.RecoveryResult, o *options) []byte {
	var bars []bar
	var wall []string // policies with the whole fleet in one window: off the scale
	for _, r := range res {
		v := r.Recover[0]
		if v.FirstCap == float64(cfg.Clients) {
			wall = append(wall, r.Policy)
			continue
		}
		bars = append(bars, bar{label(o, r.Policy), fmt.Sprintf("%.1f calls (steady at the cap: %.1f)", v.FirstCap, r.SteadyPeak), color(r.Policy), v.FirstCap})
	}
	sub := fmt.Sprintf("%d clients failed at t=0; base %v, cap %v; seed %d, %d runs", cfg.Clients, cfg.Policy.Base, cfg.Policy.Cap, o.seed, cfg.Runs)
	if len(wall) > 0 {
		sub += fmt.Sprintf("; not drawn: %s, all %d clients in one window", strings.Join(wall, ", "), cfg.Clients)
	}
	return barChart(fmt.Sprintf("Recovery: peak calls per %v window after the dependency returns at %v", cfg.Window, cfg.Recover[0]),
		sub,
		fmt.Sprintf("most calls in one window of [T, T+%v] (mean over runs)", cfg.Policy.Cap), bars)
}

func budgetChart(cfg sim.BudgetAmplificationConfig, res []sim.BudgetAmplificationResult, o *options) []byte {
	var bars []bar
	// An undefined load (no request measured) is drawn as an empty bar
	// labelled "-".
	value := func(v float64) float64 {
		if math.IsNaN(v) {
			return 0
		}
		return v
	}
	for _, p := range res[0].Points {
		bars = append(bars,
			bar{fmt.Sprintf("%g/s per layer", p.Rate), defined(p.PerLayer, "%.2fx"), color("full-jitter"), value(p.PerLayer)},
			bar{fmt.Sprintf("%g/s shared", p.Rate), defined(p.Shared, "%.2fx"), color("equal-jitter"), value(p.Shared)})
	}
	return barChart(fmt.Sprintf("Budgeted amplification: load at the dependency, %d layers x %d attempts", cfg.Layers, cfg.Policy.MaxAttempts),
		fmt.Sprintf("default budget per layer or shared, by request rate; no budget: %.0fx; seed %d", math.Pow(float64(cfg.Policy.MaxAttempts), float64(cfg.Layers)), o.seed),
		"calls reaching the dependency per request", bars)
}

func outageBudgetChart(cfg sim.OutageBudgetConfig, res []sim.OutageBudgetResult, o *options) []byte {
	var bars []bar
	for _, r := range res {
		bars = append(bars, bar{label(o, r.Policy), fmt.Sprintf("%.2f calls while down, success %.3f", r.DuringCalls, r.SuccessRate), color(r.Policy), r.DuringCalls})
	}
	return barChart(fmt.Sprintf("Outage with a fleet budget: calls per client during a %v outage", cfg.Outage),
		fmt.Sprintf("%d clients, one default budget; base %v, cap %v, %d attempts; seed %d, %d runs", cfg.Clients, cfg.Policy.Base, cfg.Policy.Cap, cfg.Policy.MaxAttempts, o.seed, cfg.Runs),
		"calls per client before the end of the outage (mean over runs)", bars)
}

// extraData holds the results of the fleet workloads for the template.
type extraData struct {
	Rec       map[string]sim.RecoveryResult
	RecCfg    sim.RecoveryConfig
	Budget    []sim.BudgetPoint
	BudgetCfg sim.BudgetAmplificationConfig
	SRE       float64 // (1+ratio)^layers
	Fluid     map[float64]float64
	OB        map[string]sim.OutageBudgetResult
	OBCfg     sim.OutageBudgetConfig
	// Down is the calls per client during the outage without a budget:
	// every call after the end succeeds and is the client's last.
	Down    map[string]float64
	SS      []sim.SharePoint
	SSCfg   sim.ServerShareConfig
	SSShare retryshare.Config // SSCfg.Share, defaults filled in
	// BurstSweep is one client at 1/s with other RetryShare bursts; Slow
	// one client at 0.5 and 0.1 requests/s.
	BurstSweep map[int]sim.SharePoint
	Slow       []sim.SharePoint
}

// S returns the server-share point of a scenario.
func (e extraData) S(clients int, rate float64) sim.SharePoint {
	for _, p := range e.SS {
		if p.Clients == clients && p.Rate == rate {
			return p
		}
	}
	return sim.SharePoint{}
}

// B returns the budget point at a rate.
func (e extraData) B(rate float64) sim.BudgetPoint {
	for _, p := range e.Budget {
		if p.Rate == rate {
			return p
		}
	}
	return sim.BudgetPoint{}
}

// docExtra reads the fleet workloads' results, of a run of every workload
// at the defaults, and runs the server-share's extra scenarios.
func docExtra(results map[string]jobResult, o *options, outage []sim.OutageResult) (e extraData, err error) {
	var rec []sim.RecoveryResult
	e.RecCfg, rec = recoveryWorkload.of(results)
	e.Rec = byPolicy(rec, func(r sim.RecoveryResult) string { return r.Policy })

	var bud []sim.BudgetAmplificationResult
	e.BudgetCfg, bud = budgetWorkload.of(results)
	e.Budget = bud[0].Points
	b := sim.BudgetDefaults(e.BudgetCfg.Budget)
	e.SRE = sreBound(b.Ratio, e.BudgetCfg.Layers)
	e.Fluid = map[float64]float64{}
	for _, r := range e.BudgetCfg.Rates {
		e.Fluid[r] = sim.FluidLoad(b.Ratio, b.Reserve, e.BudgetCfg.Policy.MaxAttempts, e.BudgetCfg.Layers, r)
	}

	var ob []sim.OutageBudgetResult
	e.OBCfg, ob = outageBudgetWorkload.of(results)
	e.OB = byPolicy(ob, func(r sim.OutageBudgetResult) string { return r.Policy })
	e.Down = map[string]float64{}
	for _, r := range outage {
		e.Down[r.Policy] = r.CallsPerClient - r.SuccessRate
	}

	var ss []sim.ServerShareResult
	e.SSCfg, ss = serverShareWorkload.of(results)
	e.SS = ss[0].Points
	e.SSShare = sim.ShareDefaults(e.SSCfg.Share)
	// Below 1 request/s per service: one client at 0.5 and 0.1/s.
	slow := e.SSCfg
	slow.Scenarios = []sim.ShareScenario{{Clients: 1, Rate: 0.5}, {Clients: 1, Rate: 0.1}}
	r, err := sim.ServerShare(slow, serverShareWorkload.selected(slow, o), o.seed)
	if err != nil {
		return e, err
	}
	e.Slow = r[0].Points
	// The burst's cost: one client at 1/s, other bursts.
	e.BurstSweep = map[int]sim.SharePoint{}
	for _, b := range []int{1, 2, 8} {
		c := e.SSCfg
		c.Scenarios = []sim.ShareScenario{{Clients: 1, Rate: 1}}
		c.Share.Burst = b
		r, err := sim.ServerShare(c, serverShareWorkload.selected(c, o), o.seed)
		if err != nil {
			return e, err
		}
		e.BurstSweep[b] = r[0].Points[0]
	}
	return e, nil
}

// Share is calls as a share of the recovery fleet.
func (e extraData) Share(calls float64) float64 { return calls / float64(e.RecCfg.Clients) }

// RecEnd is the end of the recovery workload's observation.
func (e extraData) RecEnd() time.Duration { return e.RecCfg.SteadyFrom + e.RecCfg.SteadySpan }

// Bottom is the shared budget's retries at the bottom layer per request.
func (e extraData) Bottom(p sim.BudgetPoint) float64 { return p.SharedRetries[len(p.SharedRetries)-1] }

// OBAllowed is what the outage's budget allows over the outage: Burst +
// Ratio·(first calls) + Reserve·Outage retries (the bound stated in
// backoff.Budget's documentation).
func (e extraData) OBAllowed() float64 {
	b := sim.BudgetDefaults(e.OBCfg.Budget)
	return float64(b.Burst) + b.Ratio*float64(e.OBCfg.Clients) + b.Reserve*e.OBCfg.Outage.Seconds()
}

// OBPerClient is OBAllowed per client.
func (e extraData) OBPerClient() float64 { return e.OBAllowed() / float64(e.OBCfg.Clients) }

// Lim holds the limits of the fleet workloads, for the template.
func (extraData) Lim() map[string]string {
	return map[string]string{"recover": commas(sim.MaxRecover), "rate": commas(int64(sim.MaxRate)), "clients": commas(sim.MaxBudgetClients), "services": commas(sim.MaxServices)}
}
