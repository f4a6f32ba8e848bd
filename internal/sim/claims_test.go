package sim

import (
	"fmt"
	"testing"
)

// The claims of the documentation and of the source (Brooker 2015, and the
// library's policy pages), pinned at the fixed seed 1 and at six other seeds,
// so a result cannot rest on one lucky seed. Each seed is one independent
// fleet (Runs = 1) for the herd and the outage, and Brooker's 100 runs for
// contention.
var claimSeeds = []uint64{1, 2, 3, 42, 1234, 2026, 99991}

// byName indexes results by policy name, failing the test unless there is
// exactly one result per contender, in the contenders' order: a workload
// that returned nothing cannot pass a claim vacuously.
func byName[R any](t *testing.T, res []R, cs []Contender, name func(R) string) map[string]R {
	t.Helper()
	if len(res) != len(cs) {
		t.Fatalf("%d results for %d policies", len(res), len(cs))
	}
	m := map[string]R{}
	for i, r := range res {
		if name(r) != cs[i].Name {
			t.Fatalf("result %d is for %q, want %q", i, name(r), cs[i].Name)
		}
		m[name(r)] = r
	}
	return m
}

func TestHerdClaims(t *testing.T) {
	cfg := DefaultHerd()
	cfg.Runs = 1
	for _, seed := range claimSeeds {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			cs := []Contender{Exponential(), FullJitter()}
			res, err := Herd(cfg, cs, seed)
			if err != nil {
				t.Fatal(err)
			}
			m := byName(t, res, cs, func(r HerdResult) string { return r.Policy })
			exp, full := m["exponential"].PeakShare, m["full-jitter"].PeakShare
			checks := []struct {
				what   string
				v      float64
				lo, hi float64
			}{
				{"exponential peak share (source: about 15%)", exp, 0.13, 0.16},
				{"full jitter peak share (source: about 2.6%)", full, 0.018, 0.032},
				{"exponential / full jitter (source: roughly sixfold)", exp / full, 4.5, 1e9},
			}
			for _, c := range checks {
				if c.v < c.lo || c.v > c.hi {
					t.Errorf("%s = %.4f, want in [%g, %g]", c.what, c.v, c.lo, c.hi)
				}
			}
		})
	}
}

func TestOutageClaims(t *testing.T) {
	cfg := DefaultOutage()
	cfg.Runs = 1
	for _, seed := range claimSeeds {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			res, err := Outage(cfg, Builtins(), seed)
			if err != nil {
				t.Fatal(err)
			}
			m := byName(t, res, Builtins(), func(r OutageResult) string { return r.Policy })
			exp, equal, full := m["exponential"].SuccessRate, m["equal-jitter"].SuccessRate, m["full-jitter"].SuccessRate
			if exp < 0.36 || exp > 0.46 {
				t.Errorf("exponential success rate = %.4f, want in [0.36, 0.46] (source: about 0.40)", exp)
			}
			if full < 0.16 || full > 0.25 {
				t.Errorf("full jitter success rate = %.4f, want in [0.16, 0.25] (source: about 0.20)", full)
			}
			if !(exp > equal && equal > full) {
				t.Errorf("want exponential > equal > full jitter, got %.4f, %.4f, %.4f", exp, equal, full)
			}
		})
	}
}

func TestContentionClaims(t *testing.T) {
	cfg := DefaultContention()
	cfg.Clients = []int{100}
	for _, seed := range claimSeeds {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			res, err := Contention(cfg, Brooker(), seed)
			if err != nil {
				t.Fatal(err)
			}
			m := byName(t, res, Brooker(), func(r ContentionResult) string { return r.Policy })
			exp, full, equal := m["exponential"].Points[0], m["full-jitter"].Points[0], m["equal-jitter"].Points[0]
			if full.Calls >= exp.Calls/2 {
				t.Errorf("full jitter calls %.1f, want less than half of exponential's %.1f", full.Calls, exp.Calls)
			}
			if equal.Time <= full.Time {
				t.Errorf("equal jitter time %v, want above full jitter's %v", equal.Time, full.Time)
			}
			for _, r := range res {
				if r.Policy != "exponential" && r.Points[0].Time >= exp.Time {
					t.Errorf("%s time %v, want below exponential's %v (exponential the slowest)", r.Policy, r.Points[0].Time, exp.Time)
				}
			}
		})
	}
}

func TestAmplificationClaims(t *testing.T) {
	// Calls at every layer: 1 + A + ... + A^L with retries everywhere,
	// 1 + A·L with retries at the top layer only, and L + A with retries at
	// the innermost only; the library's nested Do make the innermost's by
	// default and every layer's with RetryInner.
	tests := []struct {
		layers, attempts                 int
		every, one                       float64
		everyTotal, oneTotal, innerTotal float64
	}{
		{5, 3, 243, 3, 364, 16, 8}, // the source: 3, 9, 27, 81, 243
		{3, 3, 27, 3, 40, 10, 6},
		{5, 2, 32, 2, 63, 11, 7},
		{1, 4, 4, 4, 5, 5, 5},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%dx%d", tt.layers, tt.attempts), func(t *testing.T) {
			cfg := DefaultAmplification()
			cfg.Layers = tt.layers
			cfg.Policy.MaxAttempts = tt.attempts
			cfg.Requests = 3
			res, err := Amplification(cfg, All(), 1)
			if err != nil {
				t.Fatal(err)
			}
			byName(t, res, All(), func(r AmplificationResult) string { return r.Policy })
			for _, r := range res {
				if r.EveryLayer.TotalCalls != tt.everyTotal || r.OneLayer.TotalCalls != tt.oneTotal || r.Innermost.TotalCalls != tt.innerTotal ||
					r.Events != int64(cfg.Requests)*int64(2*tt.everyTotal+tt.oneTotal+2*tt.innerTotal) {
					t.Errorf("%s: %g, %g and %g calls per request, %d events; want %g, %g and %g", r.Policy,
						r.EveryLayer.TotalCalls, r.OneLayer.TotalCalls, r.Innermost.TotalCalls, r.Events, tt.everyTotal, tt.oneTotal, tt.innerTotal)
				}
				// The library itself: one layer retries by default, every
				// layer with RetryInner (issue 14: 3 and 243 for five nested
				// Do of 3 attempts).
				if (r.Library != Nested{BottomCalls: tt.one, TotalCalls: tt.innerTotal}) || (r.LibraryRetryInner != Nested{BottomCalls: tt.every, TotalCalls: tt.everyTotal}) {
					t.Errorf("%s: the library's nested Do: %+v by default, %+v with RetryInner; want %g and %g calls at the dependency",
						r.Policy, r.Library, r.LibraryRetryInner, tt.one, tt.every)
				}
				// The two models of issue 14 load the dependency alike.
				if r.Innermost.BottomCalls != tt.one {
					t.Errorf("%s: innermost-only load %gx, want %gx", r.Policy, r.Innermost.BottomCalls, tt.one)
				}
				if r.EveryLayer.BottomCalls != tt.every || r.OneLayer.BottomCalls != tt.one {
					t.Errorf("%s: load %gx every layer, %gx one layer; want %gx, %gx",
						r.Policy, r.EveryLayer.BottomCalls, r.OneLayer.BottomCalls, tt.every, tt.one)
				}
			}
		})
	}
}

func TestPeriodicClaims(t *testing.T) {
	cfg := DefaultPeriodic()
	cfg.Runs = 2
	for _, seed := range claimSeeds[:3] {
		res, err := Periodic(cfg, All(), seed)
		if err != nil {
			t.Fatal(err)
		}
		m := byName(t, res, All(), func(r PeriodicResult) string { return r.Policy })
		for _, aligned := range []string{"exponential", "no-backoff", "timid-jitter"} {
			if got := m[aligned].Peak; got != float64(cfg.Jobs) {
				t.Errorf("seed %d: %s peak %g calls/s, want the whole fleet, %d", seed, aligned, got, cfg.Jobs)
			}
		}
		if full := m["full-jitter"].Peak; full > 10*m["full-jitter"].Mean {
			t.Errorf("seed %d: full jitter peak %g calls/s, want within 10x of the mean %g", seed, full, m["full-jitter"].Mean)
		}
	}
}

// TestTimidJitterMeasured pins what this simulator measures for the timid
// jitter baseline, which does not match the source's picture of a "wall of
// traffic" on the herd: a 0-200 ms band spreads the first retries over 20
// windows where full jitter's first ceiling (100 ms) spreads them over 10, and
// the band is redrawn at every retry, so its peak share is lower than full
// jitter's. Its weakness shows where the interval dwarfs the band: on the
// periodic workload it leaves the whole fleet inside one second.
func TestTimidJitterMeasured(t *testing.T) {
	cfg := DefaultHerd()
	cfg.Runs = 1
	pc := DefaultPeriodic()
	pc.Runs = 1
	for _, seed := range claimSeeds {
		res, err := Herd(cfg, []Contender{TimidJitter()}, seed)
		if err != nil {
			t.Fatal(err)
		}
		if s := res[0].PeakShare; s < 0.007 || s > 0.012 {
			t.Errorf("seed %d: timid jitter herd peak share %.4f, want the measured [0.007, 0.012]", seed, s)
		}
		pr, err := Periodic(pc, []Contender{TimidJitter()}, seed)
		if err != nil {
			t.Fatal(err)
		}
		if pr[0].Peak != float64(pc.Jobs) {
			t.Errorf("seed %d: timid jitter periodic peak %g, want the whole fleet %d", seed, pr[0].Peak, pc.Jobs)
		}
	}
}
