package sim

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/backoffgo/backoff/internal/race"

	"github.com/backoffgo/backoff"
)

// The measurements of the fleet features (recovery, retry budgets, the ticker), pinned
// with the tolerances stated in docs/simulations.md.

// fleetSeeds is claimSeeds; its first three under -short, and seed 1
// alone under the race detector (which checks the code, not the figures).
func fleetSeeds() []uint64 {
	switch {
	case race.Enabled:
		return claimSeeds[:1]
	case testing.Short():
		return claimSeeds[:3]
	}
	return claimSeeds
}

// TestRecoveryClaims pins the recovery view of the herd. Observed over the
// seven claim seeds (10 runs each): timid jitter's peak per window in
// [T, T+cap] at T = 30 s is 30.2 to 33.1, full jitter's 6.2 to 7.1. A peak
// of about 1,000 calls spread into ~1,000 windows is an extreme of
// near-Poisson counts; the bands are about 15 % wider than the observed
// range on each side. The dispersion of 30,000 windows has a relative
// standard error of about sqrt(2/30000) ≈ 0.8 %: [0.95, 1.05] is over six.
func TestRecoveryClaims(t *testing.T) {
	cfg := DefaultRecovery()
	cs := All()
	for _, seed := range fleetSeeds() {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			res, err := Recovery(cfg, cs, seed)
			if err != nil {
				t.Fatal(err)
			}
			m := byName(t, res, cs, func(r RecoveryResult) string { return r.Policy })
			n := float64(cfg.Clients)
			timid, full, exp := m["timid-jitter"], m["full-jitter"], m["exponential"]
			checks := []struct {
				what   string
				v      float64
				lo, hi float64
			}{
				{"timid jitter, peak after recovery at 30s", timid.Recover[0].FirstCap, 27, 36},
				{"full jitter, peak after recovery at 30s", full.Recover[0].FirstCap, 5, 8.5},
				{"timid / full jitter after recovery at 30s (the blog: still a wall)", timid.Recover[0].FirstCap / full.Recover[0].FirstCap, 3, 1e9},
				{"exponential after recovery at 30s: the whole fleet in one window", exp.Recover[0].FirstCap, n, n},
				{"exponential at the cap: the whole fleet in one window", exp.SteadyPeak, n, n},
				{"full jitter dispersion at the cap", full.SteadyDispersion, 0.95, 1.05},
				{"decorrelated dispersion at the cap (not re-synchronised)", m["decorrelated"].SteadyDispersion, 0.95, 1.05},
				{"decorrelated / full jitter steady peak", m["decorrelated"].SteadyPeak / full.SteadyPeak, 0.8, 1.2},
				{"timid jitter dispersion at the cap (bunched)", timid.SteadyDispersion, 4, 1e9},
				{"no backoff: every client gave up at t = 0", m["no-backoff"].GaveUp, n, n},
			}
			for _, c := range checks {
				if c.v < c.lo || c.v > c.hi {
					t.Errorf("%s = %.4f, want in [%g, %g]", c.what, c.v, c.lo, c.hi)
				}
			}
			for _, r := range res {
				if r.Policy == "no-backoff" {
					continue
				}
				if r.GaveUp != 0 || r.Recover[0].Clients != n || r.Recover[1].Clients != n {
					t.Errorf("%s: %v clients gave up, %v and %v still retrying at the recovery times; want the whole fleet", r.Policy, r.GaveUp, r.Recover[0].Clients, r.Recover[1].Clients)
				}
			}
		})
	}
}

// TestRecoveryBothViews asserts the orderings the documentation states
// for timid jitter against full jitter: smaller over the whole episode
// (the herd's peak share), larger at the cap (the recovery view).
func TestRecoveryBothViews(t *testing.T) {
	hc := DefaultHerd()
	hc.Runs = 2
	rc := DefaultRecovery()
	rc.Runs = 2
	cs := []Contender{FullJitter(), TimidJitter()}
	herd, err := Herd(hc, cs, 1)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := Recovery(rc, cs, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !(herd[1].PeakShare < herd[0].PeakShare) {
		t.Errorf("whole episode: timid peak share %v, want below full jitter's %v", herd[1].PeakShare, herd[0].PeakShare)
	}
	for i := range rc.Recover {
		if !(rec[1].Recover[i].FirstCap > 2*rec[0].Recover[i].FirstCap) {
			t.Errorf("recovery at %v: timid %v, want over twice full jitter's %v", rc.Recover[i], rec[1].Recover[i].FirstCap, rec[0].Recover[i].FirstCap)
		}
	}
	if !(rec[1].SteadyPeak > rec[0].SteadyPeak) {
		t.Errorf("steady: timid %v, want above full jitter's %v", rec[1].SteadyPeak, rec[0].SteadyPeak)
	}
}

// TestRecoveryByHand checks the views on a fleet small enough to follow:
// exponential with base 1s, cap 2s calls at 0, 1, 3, 5, 7, ... s.
func TestRecoveryByHand(t *testing.T) {
	cfg := RecoveryConfig{Clients: 3, Runs: 1, Window: time.Second, Recover: []time.Duration{2 * time.Second, 5 * time.Second},
		SteadyFrom: 4 * time.Second, SteadySpan: 4 * time.Second,
		Policy: backoff.Config{Base: time.Second, Cap: 2 * time.Second, MaxAttempts: 100}}
	res, err := Recovery(cfg, []Contender{Exponential()}, 1)
	if err != nil {
		t.Fatal(err)
	}
	r := res[0]
	// After T = 2s the next calls are at 3s: window 1 of [T, T+1s) is past
	// the first second ([2s, 3s) is window 0 only), in [T, T+cap].
	want := []RecoveryView{{At: 2 * time.Second, FirstSecond: 0, FirstCap: 3, Clients: 3}, {At: 5 * time.Second, FirstSecond: 3, FirstCap: 3, Clients: 3}}
	for i, v := range want {
		if r.Recover[i] != v {
			t.Errorf("view %d = %+v, want %+v", i, r.Recover[i], v)
		}
	}
	// Steady span [4s, 8s): calls at 5s and 7s, 3 each, in 4 windows.
	if r.SteadyPeak != 3 || r.SteadyMean != 1.5 || r.GaveUp != 0 || r.CapBy != 3*time.Second {
		t.Errorf("steady peak %v, mean %v, gave up %v, cap by %v; want 3, 1.5, 0, 3s", r.SteadyPeak, r.SteadyMean, r.GaveUp, r.CapBy)
	}
	// Variance of (0, 3, 0, 3) is 2.25, over the mean 1.5.
	if r.SteadyDispersion != 1.5 {
		t.Errorf("dispersion %v, want 1.5", r.SteadyDispersion)
	}
}

// TestBudgetAmplificationClaims pins the budgeted stack. Its counts are
// deterministic (no delay is simulated, and every policy gives up at its
// attempts), so another policy at another seed must agree exactly. Against the
// arithmetic, 1 %: a request's retries come in whole units and the budget
// starts each measured span with part of a retry in store.
func TestBudgetAmplificationClaims(t *testing.T) {
	cfg := DefaultBudgetAmplification()
	switch {
	case race.Enabled:
		cfg.Rates = []float64{1, 10, 100}
	case testing.Short():
		cfg.Rates = []float64{1, 10, 100, 1000}
	}
	res, err := BudgetAmplification(cfg, []Contender{FullJitter()}, 1)
	if err != nil {
		t.Fatal(err)
	}
	first := res[0].Points
	// Another policy and another seed, at the cheap rates: the same counts.
	other := cfg
	other.Rates = []float64{1, 10, 100}
	res, err = BudgetAmplification(other, []Contender{Exponential()}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(res[0].Points), fmt.Sprint(first[:3]); got != want {
		t.Errorf("exponential at seed 2: %v, want the same counts as full jitter at seed 1: %v", got, want)
	}
	for _, p := range first {
		// Issue 14's two models with a budget per layer: only the top layer
		// retrying, or only the innermost, load the dependency alike, as
		// one budgeted layer does.
		if one := FluidLoad(0.1, 10, 3, 1, p.Rate); p.Outermost != p.Innermost || math.Abs(p.Innermost/one-1) > 0.01 {
			t.Errorf("%g/s: only the outermost retrying %v, only the innermost %v; want equal, within 1%% of one budgeted layer's %v", p.Rate, p.Outermost, p.Innermost, one)
		}
		want := FluidLoad(0.1, 10, 3, 5, p.Rate)
		if math.Abs(p.PerLayer/want-1) > 0.01 {
			t.Errorf("%g/s: per-layer load %v, want within 1%% of the ratio-and-reserve arithmetic %v", p.Rate, p.PerLayer, want)
		}
		if p.Shared > p.PerLayer {
			t.Errorf("%g/s: shared budget load %v above the per-layer %v", p.Rate, p.Shared, p.PerLayer)
		}
		if p.Rate >= 1000 {
			if p.Shared < 1.49 || p.Shared > 1.52 {
				t.Errorf("%g/s: shared budget load %v, want in [1.49, 1.52]", p.Rate, p.Shared)
			}
			for l, r := range p.SharedRetries[:4] {
				if r != 0 {
					t.Errorf("%g/s: shared budget: layer %d retried %v per request, want every retry at the bottom", p.Rate, l+1, r)
				}
			}
		}
		if p.Rate == 10000 {
			if sre := math.Pow(1.1, 5); math.Abs(p.PerLayer/sre-1) > 0.01 {
				t.Errorf("per-layer load %v at 10,000/s, want within 1%% of 1.1^5 = %v", p.PerLayer, sre)
			}
		}
		if p.Rate == 1 && p.PerLayer < 20 {
			t.Errorf("per-layer load %v at 1/s: want the reserve's effect, over 20x", p.PerLayer)
		}
	}
}

// TestOutageBudgetClaims pins the outage with a fleet budget: the budget
// allows Burst + Ratio·calls + Reserve·T retries over the outage (the
// bound of backoff.Budget's documentation) and the fleet's demand exceeds
// it throughout, so calls per client while down are within 2 % below
// 1 + that / Clients, never above.
func TestOutageBudgetClaims(t *testing.T) {
	cfg := DefaultOutageBudget()
	cfg.Runs = 1
	cs := []Contender{Exponential(), FullJitter()}
	for _, seed := range fleetSeeds() {
		res, err := OutageBudget(cfg, cs, seed)
		if err != nil {
			t.Fatal(err)
		}
		free, err := Outage(cfg.OutageConfig, cs, seed)
		if err != nil {
			t.Fatal(err)
		}
		bound := 1 + (100+0.1*float64(cfg.Clients)+10*cfg.Outage.Seconds())/float64(cfg.Clients)
		for i, r := range res {
			if r.DuringCalls > bound+1e-9 || r.DuringCalls < 0.98*bound {
				t.Errorf("seed %d, %s: %v calls per client while down, want in [0.98, 1] × %v", seed, r.Policy, r.DuringCalls, bound)
			}
			if r.SuccessRate > 0.01 || r.SuccessRate >= free[i].SuccessRate {
				t.Errorf("seed %d, %s: success %v with the budget, %v without; want at most 0.01 and below", seed, r.Policy, r.SuccessRate, free[i].SuccessRate)
			}
			if down := free[i].CallsPerClient - free[i].SuccessRate; r.DuringCalls > down/5 {
				t.Errorf("seed %d, %s: %v calls while down with the budget, want under a fifth of %v without", seed, r.Policy, r.DuringCalls, down)
			}
		}
	}
}

// TestOutageBudgetByHand follows three clients through a budget of one
// retry: the first to ask gets it, the others are refused.
func TestOutageBudgetByHand(t *testing.T) {
	cfg := OutageBudgetConfig{
		OutageConfig: OutageConfig{Clients: 3, Runs: 1, Outage: time.Second, Policy: backoff.Config{Base: 2 * time.Second, Cap: 2 * time.Second, MaxAttempts: 2}},
		Budget:       backoff.BudgetConfig{Burst: 1, Reserve: 0.001, Ratio: 1e-6},
	}
	res, err := OutageBudget(cfg, []Contender{Exponential()}, 1)
	if err != nil {
		t.Fatal(err)
	}
	r := res[0]
	// Three first calls, one granted retry, which lands after the outage.
	if r.Events != 4 || r.SuccessRate != 1.0/3 || r.Refused != 2.0/3 || r.DuringCalls != 1 {
		t.Errorf("%+v: want 4 calls, success 1/3, refused 2/3, 1 call each while down", r)
	}
}

// TestPeriodicTicker pins the periodic workload with the Ticker's offsets:
// no offset puts the whole fleet in one second; the Ticker's offsets spread it to
// within 10× of the mean (the bound the policies' offsets are held to).
func TestPeriodicTicker(t *testing.T) {
	cfg := DefaultPeriodic()
	cfg.Runs = 2
	cs := []Contender{NoOffset(), Ticker()}
	for _, seed := range fleetSeeds() {
		res, err := Periodic(cfg, cs, seed)
		if err != nil {
			t.Fatal(err)
		}
		m := byName(t, res, cs, func(r PeriodicResult) string { return r.Policy })
		if p := m["no-offset"].Peak; p != float64(cfg.Jobs) {
			t.Errorf("seed %d: no offset peak %v, want the whole fleet %d", seed, p, cfg.Jobs)
		}
		if tk := m["ticker"]; tk.Peak > 10*tk.Mean || tk.Peak < tk.Mean {
			t.Errorf("seed %d: ticker peak %v, want within 10x of the mean %v", seed, tk.Peak, tk.Mean)
		}
	}
}

// TestFleetRefusals checks that every new configuration names the
// parameter at fault.
func TestFleetRefusals(t *testing.T) {
	rc := DefaultRecovery()
	rm := func(f func(*RecoveryConfig)) RecoveryConfig {
		c := rc
		c.Recover = append([]time.Duration(nil), rc.Recover...)
		f(&c)
		return c
	}
	bc := DefaultBudgetAmplification()
	bm := func(f func(*BudgetAmplificationConfig)) BudgetAmplificationConfig { c := bc; f(&c); return c }
	oc := DefaultOutageBudget()
	om := func(f func(*OutageBudgetConfig)) OutageBudgetConfig { c := oc; f(&c); return c }
	tests := []struct {
		name        string
		err         error
		param, want string
	}{
		{"recovery clients", rm(func(c *RecoveryConfig) { c.Clients = 0 }).Validate(All()), "Clients", "want at least 1"},
		{"recovery runs", rm(func(c *RecoveryConfig) { c.Runs = -1 }).Validate(All()), "Runs", "want at least 1"},
		{"recovery window", rm(func(c *RecoveryConfig) { c.Window = 0 }).Validate(All()), "Window", "want > 0"},
		{"recovery unlimited", rm(func(c *RecoveryConfig) { c.Policy.MaxAttempts = backoff.Unlimited }).Validate(All()), "Policy.MaxAttempts", "finite"},
		{"recovery no times", rm(func(c *RecoveryConfig) { c.Recover = nil }).Validate(All()), "Recover", "want 1 to MaxRecover"},
		{"recovery order", rm(func(c *RecoveryConfig) { c.Recover = []time.Duration{time.Minute, time.Second} }).Validate(All()), "Recover", "increasing"},
		{"recovery span", rm(func(c *RecoveryConfig) { c.SteadySpan = time.Millisecond }).Validate(All()), "SteadySpan", "at least Window"},
		{"recovery from", rm(func(c *RecoveryConfig) { c.SteadyFrom = -1 }).Validate(All()), "SteadyFrom", "want >= 0"},
		{"recovery overflow", rm(func(c *RecoveryConfig) { c.SteadyFrom = math.MaxInt64 - 1 }).Validate(All()), "SteadySpan", "largest time.Duration"},
		{"recovery late", rm(func(c *RecoveryConfig) { c.Policy.Cap, c.Window, c.SteadySpan = math.MaxInt64-1, 1<<62, 1<<62 }).Validate(All()), "Recover", "largest time.Duration"},
		{"recovery series", rm(func(c *RecoveryConfig) { c.Window = time.Microsecond }).Validate(All()), "Window", "above the limit MaxSeries"},
		{"recovery events", rm(func(c *RecoveryConfig) { c.Clients = 10_000_000 }).Validate(All()), "Clients", "above the limit MaxWork"},
		{"recovery contenders", rm(func(*RecoveryConfig) {}).Validate(nil), "contenders", "none given"},
		{"budget layers", bm(func(c *BudgetAmplificationConfig) { c.Layers = 0 }).Validate(All()), "Layers", "want 1 to MaxLayers"},
		{"budget rates", bm(func(c *BudgetAmplificationConfig) { c.Rates = nil }).Validate(All()), "Rates", "want 1 to MaxSweep"},
		{"budget rate", bm(func(c *BudgetAmplificationConfig) { c.Rates = []float64{1, math.NaN()} }).Validate(All()), "Rates", "NaN"},
		{"budget rate high", bm(func(c *BudgetAmplificationConfig) { c.Rates = []float64{2e6} }).Validate(All()), "Rates", "MaxRate"},
		{"budget ratio", bm(func(c *BudgetAmplificationConfig) { c.Budget.Ratio = 2 }).Validate(All()), "Budget", "Ratio"},
		{"budget clock", bm(func(c *BudgetAmplificationConfig) { c.Budget.Now = time.Now }).Validate(All()), "Budget.Now", "virtual clock"},
		{"budget warmup", bm(func(c *BudgetAmplificationConfig) { c.Warmup = -1 }).Validate(All()), "Warmup", "want >= 0"},
		{"budget span", bm(func(c *BudgetAmplificationConfig) { c.Span = 0 }).Validate(All()), "Span", "want > 0"},
		{"budget long", bm(func(c *BudgetAmplificationConfig) { c.Span = 1e7 * time.Second }).Validate(All()), "Span", "at most 1e6 s"},
		{"budget events", bm(func(c *BudgetAmplificationConfig) { c.Rates = []float64{1e6} }).Validate(All()), "Rates", "above the limit MaxWork"},
		{"budget attempts", bm(func(c *BudgetAmplificationConfig) { c.Policy.MaxAttempts = 0 }).Validate(All()), "Policy.MaxAttempts", "at least 1"},
		{"outage-budget clients", om(func(c *OutageBudgetConfig) { c.Clients = 0 }).Validate(All()), "Clients", "want at least 1"},
		{"outage-budget many", om(func(c *OutageBudgetConfig) { c.Clients = MaxBudgetClients + 1; c.Runs = 1 }).Validate(All()), "Clients", "MaxBudgetClients"},
		{"outage-budget reserve", om(func(c *OutageBudgetConfig) { c.Budget.Reserve = -1 }).Validate(All()), "Budget", "Reserve"},
		{"outage-budget clock", om(func(c *OutageBudgetConfig) { c.Budget.Now = time.Now }).Validate(All()), "Budget.Now", "virtual clock"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ce, ok := tt.err.(*ConfigError)
			if !ok {
				t.Fatalf("error %v, want a *ConfigError", tt.err)
			}
			if ce.Param != tt.param || !strings.Contains(ce.Error(), tt.want) {
				t.Errorf("error %q (param %q), want param %q and %q", ce.Error(), ce.Param, tt.param, tt.want)
			}
		})
	}
	// The workload functions refuse as Validate does.
	if _, err := Recovery(rm(func(c *RecoveryConfig) { c.Clients = 0 }), All(), 1); err == nil {
		t.Error("Recovery ran a refused configuration")
	}
	if _, err := BudgetAmplification(bm(func(c *BudgetAmplificationConfig) { c.Layers = 0 }), All(), 1); err == nil {
		t.Error("BudgetAmplification ran a refused configuration")
	}
	if _, err := OutageBudget(om(func(c *OutageBudgetConfig) { c.Clients = 0 }), All(), 1); err == nil {
		t.Error("OutageBudget ran a refused configuration")
	}
}

// FuzzFleetWorkloads runs the recovery, budget and outage-budget
// workloads on arbitrary small configurations: each either refuses it with
// a *ConfigError or returns results within their ranges.
func FuzzFleetWorkloads(f *testing.F) {
	f.Add(uint8(0), int64(3), int64(2), int64(time.Millisecond), int64(10*time.Millisecond), int64(20), int64(5))
	f.Add(uint8(1), int64(3), int64(50), int64(time.Millisecond), int64(time.Second), int64(3), int64(2))
	f.Add(uint8(2), int64(20), int64(2), int64(time.Millisecond), int64(time.Second), int64(-1), int64(3))
	f.Fuzz(func(t *testing.T, kind uint8, a, b, base, cap, attempts, extra int64) {
		small := func(v, hi int64) int { return int(v % hi) }
		pol := backoff.Config{Base: time.Duration(base), Cap: time.Duration(cap), MaxAttempts: small(attempts, 30)}
		budget := backoff.BudgetConfig{Ratio: float64(small(extra, 12)) / 10, Burst: small(b, 5)}
		refused := func(err error) bool {
			if _, ok := err.(*ConfigError); !ok {
				t.Errorf("error %v, want a *ConfigError", err)
			}
			return true
		}
		switch kind % 3 {
		case 0:
			cfg := RecoveryConfig{Clients: small(a, 20), Runs: small(b, 3), Policy: pol, Window: time.Duration(extra) * time.Millisecond,
				Recover: []time.Duration{time.Duration(cap), time.Duration(cap) * 3}, SteadyFrom: time.Duration(base), SteadySpan: time.Duration(cap)}
			res, err := Recovery(cfg, All(), 1)
			if err != nil && refused(err) {
				return
			}
			for _, r := range res {
				if r.GaveUp < 0 || r.GaveUp > float64(cfg.Clients) || r.SteadyPeak < 0 || r.SteadyPeak > float64(cfg.Clients*cfg.Policy.MaxAttempts) ||
					r.Recover[0].FirstCap > float64(cfg.Clients) || r.Recover[0].Clients > float64(cfg.Clients) {
					t.Errorf("recovery %+v: %s: %+v", cfg, r.Policy, r)
				}
			}
		case 1:
			cfg := BudgetAmplificationConfig{Layers: small(a, 6), Policy: pol, Budget: budget, Rates: []float64{float64(small(b, 100))}, Warmup: time.Duration(extra) * time.Millisecond, Span: time.Duration(cap) % (10 * time.Second)}
			res, err := BudgetAmplification(cfg, All()[:2], 1)
			if err != nil && refused(err) {
				return
			}
			full := math.Pow(float64(cfg.Policy.MaxAttempts), float64(cfg.Layers))
			for _, r := range res {
				for _, p := range r.Points {
					if p.PerLayer > full+1e-9 || p.Shared > full+1e-9 || (p.PerLayer != 0 && p.PerLayer < 1) || (p.Shared != 0 && p.Shared < 1) {
						t.Errorf("budget %+v: %s: %+v", cfg, r.Policy, p)
					}
				}
			}
		case 2:
			cfg := OutageBudgetConfig{OutageConfig: OutageConfig{Clients: small(a, 50), Runs: small(b, 3), Outage: time.Duration(extra), Policy: pol}, Budget: budget}
			res, err := OutageBudget(cfg, All(), 1)
			if err != nil && refused(err) {
				return
			}
			for _, r := range res {
				if r.SuccessRate < 0 || r.SuccessRate > 1 || r.Refused < 0 || r.Refused > 1 || r.DuringCalls > r.CallsPerClient || r.CallsPerClient < 1 {
					t.Errorf("outage-budget %+v: %s: %+v", cfg, r.Policy, r)
				}
			}
		}
	})
}

// TestFleetMisbehaving checks that the new workloads stop a policy that
// retries past its MaxAttempts and name it.
func TestFleetMisbehaving(t *testing.T) {
	rc := DefaultRecovery()
	rc.Clients, rc.Runs, rc.Policy.MaxAttempts = 2, 1, 5
	bc := DefaultBudgetAmplification()
	bc.Rates = []float64{1}
	oc := DefaultOutageBudget()
	oc.Clients, oc.Runs = 2, 1
	oc.Budget.Burst = 1000
	tests := []struct {
		name string
		run  func() error
		want string
	}{
		{"recovery", func() error { _, err := Recovery(rc, []Contender{forever}, 1); return err }, `sim: recovery: policy "forever": did not give up after Policy.MaxAttempts = 5 calls`},
		{"budget", func() error { _, err := BudgetAmplification(bc, []Contender{forever}, 1); return err }, `sim: budget-amplification: policy "forever": did not give up after Policy.MaxAttempts = 3 calls`},
		{"outage-budget", func() error { _, err := OutageBudget(oc, []Contender{forever}, 1); return err }, `sim: outage-budget: policy "forever": did not give up after 8 calls without reaching the end of the outage`},
	}
	for _, tt := range tests {
		if err := tt.run(); err == nil || err.Error() != tt.want {
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.want)
		}
	}
}

// TestFluidLoad checks the arithmetic at its two ends: the ratio alone,
// (1+ratio)^layers, when the reserve is negligible; every attempt, A^layers,
// when the reserve covers them.
func TestFluidLoad(t *testing.T) {
	if got, want := FluidLoad(0.1, 0, 3, 5, 1), math.Pow(1.1, 5); math.Abs(got-want) > 1e-12 {
		t.Errorf("ratio only: %v, want %v", got, want)
	}
	if got := FluidLoad(0.1, 10, 3, 5, 1e-3); math.Abs(got-243) > 1e-9 {
		t.Errorf("reserve above every retry: %v, want 243", got)
	}
}

// TestConfigErrorAlso: a refused estimate names every parameter it depends
// on (issue 16 §4: the command named a flag the user had not touched); a
// parameter out of range names only itself.
func TestConfigErrorAlso(t *testing.T) {
	herd := DefaultHerd()
	herd.Window = time.Microsecond
	ob := DefaultOutageBudget()
	ob.Clients, ob.Runs = MaxBudgetClients, 1000 // issue 16 §4: about 22 minutes
	bad := DefaultHerd()
	bad.Clients = 0
	tests := []struct {
		err      error
		workload string
		also     []string
	}{
		{herd.Validate(All()), "herd", []string{"Policy.Cap", "Policy.MaxAttempts"}},
		{ob.Validate(All()), "outage-budget", []string{"Runs", "Policy.MaxAttempts", "Outage", "contenders"}},
		{bad.Validate(All()), "herd", nil},
	}
	for _, tt := range tests {
		var ce *ConfigError
		if !errors.As(tt.err, &ce) || ce.Workload != tt.workload || !slices.Equal(ce.Also, tt.also) {
			t.Errorf("%v: Also %v, want %s and %v", tt.err, ce, tt.workload, tt.also)
		}
	}
}

// TestBudgetLoadUndefined: no request in the measured span gives NaN, not
// a load of 0.
func TestBudgetLoadUndefined(t *testing.T) {
	cfg := DefaultBudgetAmplification()
	cfg.Rates = []float64{1e-300, 1}
	res, err := BudgetAmplification(cfg, []Contender{FullJitter()}, 1)
	if err != nil {
		t.Fatal(err)
	}
	p, q := res[0].Points[0], res[0].Points[1]
	if !math.IsNaN(p.PerLayer) || !math.IsNaN(p.Shared) || !math.IsNaN(p.SharedRetries[0]) || !math.IsNaN(p.PerLayerRetries[0]) {
		t.Errorf("no request measured: %+v, want NaN figures", p)
	}
	if math.IsNaN(q.PerLayer) || q.PerLayer < 1 {
		t.Errorf("1 request/s: load %v, want a number", q.PerLayer)
	}
}
