package sim

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/internal/race"
	"github.com/backoffgo/backoff/retryshare"
)

// TestServerShareClaims pins the chains of services with the server's
// retry count (issue 20): at most 1.2× the request rate through the outage
// at every rate and for the fleet, where the one-layer rule and the
// budgets alone give 3× at 1 request/s per chain; the dependency says "do
// not retry" within a second; a healthy service at a 1 % failure rate loses
// under 1 % of its retries. The outage's counts are deterministic; the
// healthy span's failures are drawn, so the healthy figures are checked at
// three seeds (at seed 1 with the defaults, at the two others on cheaper
// scenarios).
func TestServerShareClaims(t *testing.T) {
	full := DefaultServerShare()
	cheap := full
	cheap.Scenarios = []ShareScenario{{1, 1}, {1, 100}, {100, 1}}
	cheap.Outage = 20 * time.Second
	runs := []struct {
		cfg  ServerShareConfig
		seed uint64
	}{{full, 1}, {cheap, 2}, {cheap, 3}}
	switch {
	case race.Enabled:
		cheap.HealthyRequests = 20_000
		runs = runs[:0]
		runs = append(runs, struct {
			cfg  ServerShareConfig
			seed uint64
		}{cheap, 1})
	case testing.Short() || strconv.IntSize == 32:
		// The defaults cost seconds, minutes under a 32-bit emulator; the
		// documentation's freshness test runs them on 64 bits.
		runs = runs[1:]
	}
	for _, run := range runs {
		cfg, seed := run.cfg, run.seed
		res, err := ServerShare(cfg, []Contender{FullJitter()}, seed)
		if err != nil {
			t.Fatal(err)
		}
		byName(t, res, []Contender{FullJitter()}, func(r ServerShareResult) string { return r.Policy })
		if len(res[0].Points) != len(cfg.Scenarios) {
			t.Fatalf("%d points for %d scenarios", len(res[0].Points), len(cfg.Scenarios))
		}
		for _, p := range res[0].Points {
			at := fmt.Sprintf("seed %d, %d × %g/s", seed, p.Clients, p.Rate)
			w, wo := p.With, p.Without
			// In the first window the allowance's Burst of 4, full after
			// the healthy span, is spent as well: 4 calls more.
			firstMax := 1.2 + 4/(p.Rate*float64(p.Clients)*ShareDefaults(cfg.Share).Window.Seconds())
			if !(w.Load <= 1.2 && w.Peak <= 1.2 && w.First <= firstMax) {
				t.Errorf("%s: load %v, peak %v, first window %v: want at most 1.2× (%.3g× in the first window)", at, w.Load, w.Peak, w.First, firstMax)
			}
			if !(w.Load <= wo.Load) {
				t.Errorf("%s: load %v with the RetryShares, %v without", at, w.Load, wo.Load)
			}
			if p.Rate*float64(p.Clients) <= 100 && w.Load > 1.13 && p.Rate > 1 {
				t.Errorf("%s: load %v, want the threshold's 1/(1-0.1) within 2 %%", at, w.Load)
			}
			if p.Rate == 1 && wo.Load != 3 {
				t.Errorf("%s: load %v without the RetryShares, want 3: the one-layer rule, the reserve allowing every retry", at, wo.Load)
			}
			if (wo.Load > 1.2 && !(w.React >= 0 && w.React <= time.Second)) || wo.React != -1 {
				t.Errorf("%s: reaction %v (%v without, load %v): want within a second (none without)", at, w.React, wo.React, wo.Load)
			}
			// At 100 requests/s and more per service, a window holds
			// enough requests that 1 % of failures never look widespread;
			// at 10,000/s the budgets alone keep the retries under 10 %.
			if p.Rate >= 100 && (w.Refused != 0 || w.HealthyFailed != 0) {
				t.Errorf("%s: healthy: %v of the failing answers refused, %v of the requests failed: want none", at, w.Refused, w.HealthyFailed)
			}
			// Where the budgets alone keep retries under the threshold
			// (10,000/s), the dependency still says so within a second:
			// it counts each failing answer it lets be retried as a
			// retry on its way, whether the caller's budget then allows
			// it or not.
			if p.Rate >= 10000 && !(w.React >= 0 && w.React < time.Second) {
				t.Errorf("%s: the dependency said not to retry at %v: want within a second", at, w.React)
			}
			if !(w.Refused < 0.01 && w.HealthyFailed < 2e-4) || wo.HealthyFailed > 1e-5 || wo.Refused != 0 {
				t.Errorf("%s: healthy: %v of the failing answers refused, %v of the requests failed (%v without): want under 1 %% and 2e-4", at, w.Refused, w.HealthyFailed, wo.HealthyFailed)
			}
		}
	}
}

// smallShare is a server-share configuration that runs in a few
// milliseconds: one client at 2/s, 100 healthy requests at 10 % failures,
// a 20 s outage.
func smallShare() ServerShareConfig {
	c := DefaultServerShare()
	c.Scenarios = []ShareScenario{{1, 2}, {3, 1}}
	c.HealthyRequests, c.Background, c.Outage = 100, 0.1, 20*time.Second
	return c
}

// TestServerShareByHand follows one chain of one service at 1 request/s
// through a 20 s outage, Threshold 0.1, Burst 4, 10 buckets of 1 s, one
// caller (its slots count what the route counts). Every failing answer is
// significant (1 of 1 is), so the dependency's allowance decides (it starts
// at 4, gains 0.1 per call and loses 1 per answer let be retried) unless
// the window is over by its retries: at least 2, significantly more than
// 0.1 of the calls (2 of up to 5, 3 of up to 11, 4 of up to 18). Request 1
// makes its 3 calls, the third answer refused by its 2 retries of 3 (the
// reaction, at 0 s; 4 → 2.2); requests 2 and 3 one each (2 of 4, 2 of 5);
// request 4 two (2 of 6 are not significant: 2.5 → 1.5, then 3 of 7);
// requests 5 to 8 one; request 9 two (3 of 12 are not: 2.1 → 1.1, then 4
// of 13); request 10 one (4 of 14). At 10 s request 1's calls leave the
// window, and the allowance decides: request 11 makes two (1.4 → 0.4),
// then request 16 (1.0 → 0), each tenth after it (10 calls earn one
// retry). The first window's 10 requests make 14 calls, the second's 12;
// the peak window after the first reads 1.2. Without the RetryShares every
// request makes its 3 calls.
func TestServerShareByHand(t *testing.T) {
	cfg := ServerShareConfig{
		Layers: 1, Policy: backoff.Config{Base: time.Second, Cap: time.Second, MaxAttempts: 3},
		Scenarios: []ShareScenario{{1, 1}}, Outage: 20 * time.Second,
	}
	for _, layers := range []int{1, 2, 5} {
		cfg.Layers = layers
		res, err := ServerShare(cfg, []Contender{Exponential()}, 1)
		if err != nil {
			t.Fatal(err)
		}
		p := res[0].Points[0]
		nan := func(v float64) bool { return math.IsNaN(v) }
		if w := p.With; w.Load != 1.2 || w.First != 1.4 || w.Peak != 1.2 || w.React != 0 || !nan(w.HealthyFailed) || !nan(w.Refused) {
			t.Errorf("%d layers, with: %+v; want a load of 1.2, 1.4 in the first window, a peak of 1.2, a reaction at 0 s, nothing healthy", layers, w)
		}
		if wo := p.Without; wo.Load != 3 || wo.First != 3 || wo.Peak != 3 || wo.React != -1 {
			t.Errorf("%d layers, without: %+v; want loads of 3, no reaction", layers, wo)
		}
		// 20 requests, each through the layers: with, 26 calls at the
		// dependency; without, 60.
		if want := int64(20*layers + 26 + 20*layers + 60); res[0].Events != want {
			t.Errorf("%d layers: %d calls, want %d", layers, res[0].Events, want)
		}
	}
}

// TestServerShareSlow: below a request per second the window no longer
// matters to the answers, as every failing answer is significant; the
// allowance earns an invitation per 10 calls at any rate, and a request's
// third failing answer is refused by its 2 retries of 3 calls, which keeps
// that invitation for later (rules as in TestServerShareByHand). Through a
// 40 s outage, after the first window: at 0.5/s, requests 6 to 20 make 18
// calls (6, 7 and 16 make two), 1.2×; at 0.1/s, each request alone in its
// window, requests 2 to 4 make 5 (request 2 finds 2.3 left of the Burst
// and makes three, its third answer refused by its retries), 5/3×.
func TestServerShareSlow(t *testing.T) {
	cfg := ServerShareConfig{
		Layers: 1, Policy: backoff.Config{Base: time.Second, Cap: time.Second, MaxAttempts: 3},
		Scenarios: []ShareScenario{{1, 0.5}, {1, 0.1}}, Outage: 40 * time.Second,
	}
	res, err := ServerShare(cfg, []Contender{Exponential()}, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []float64{18.0 / 15, 5.0 / 3} {
		if p := res[0].Points[i]; math.Abs(p.With.Load-want) > 1e-12 || p.Without.Load != 3 {
			t.Errorf("%g/s: load %v with the RetryShares, %v without; want %v and 3", p.Rate, p.With.Load, p.Without.Load, want)
		}
	}
}

// TestServerShareHealthy: with the dependency failing no call the healthy
// span counts no failure; failing half its calls, the RetryShare refuses
// retries that the chain without it makes.
func TestServerShareHealthy(t *testing.T) {
	cfg := DefaultServerShare()
	cfg.Scenarios = []ShareScenario{{1, 10}}
	cfg.HealthyRequests = 2000
	cfg.Outage = 20 * time.Second
	for _, tt := range []struct {
		background float64
		refused    bool
	}{{0, false}, {0.5, true}} {
		cfg.Background = tt.background
		res, err := ServerShare(cfg, []Contender{FullJitter()}, 1)
		if err != nil {
			t.Fatal(err)
		}
		w, wo := res[0].Points[0].With, res[0].Points[0].Without
		if tt.refused != (w.Refused > 0.5) || tt.refused != (w.HealthyFailed > 2*wo.HealthyFailed) {
			t.Errorf("background %v: refused %v, failed %v with, %v without", tt.background, w.Refused, w.HealthyFailed, wo.HealthyFailed)
		}
		if tt.background == 0 && (w.HealthyFailed != 0 || !math.IsNaN(w.Refused)) {
			t.Errorf("background 0: %+v, want no failure, Refused undefined", w)
		}
	}
}

func TestServerShareRefusals(t *testing.T) {
	sc := DefaultServerShare()
	m := func(f func(*ServerShareConfig)) ServerShareConfig { c := sc; f(&c); return c }
	tests := []struct {
		name        string
		cfg         ServerShareConfig
		cs          []Contender
		param, want string
	}{
		{"no contenders", sc, nil, "contenders", "none given"},
		{"layers", m(func(c *ServerShareConfig) { c.Layers = 0 }), nil, "Layers", "want 1 to MaxLayers"},
		{"attempts", m(func(c *ServerShareConfig) { c.Policy.MaxAttempts = backoff.Unlimited }), nil, "Policy.MaxAttempts", "want a finite budget"},
		{"budget clock", m(func(c *ServerShareConfig) { c.Budget.Now = time.Now }), nil, "Budget.Now", "virtual clock"},
		{"budget", m(func(c *ServerShareConfig) { c.Budget.Ratio = 2 }), nil, "Budget", "invalid Ratio 2"},
		{"share clock", m(func(c *ServerShareConfig) { c.Share.Now = time.Now }), nil, "Share.Now", "virtual clock"},
		{"share", m(func(c *ServerShareConfig) { c.Share.Threshold = 2 }), nil, "Share", "invalid Threshold 2"},
		{"share window", m(func(c *ServerShareConfig) { c.Share.Window = time.Millisecond }), nil, "Share", "invalid Window 1ms"},
		{"no scenario", m(func(c *ServerShareConfig) { c.Scenarios = nil }), nil, "Scenarios", "0 scenarios"},
		{"rate", m(func(c *ServerShareConfig) { c.Scenarios = []ShareScenario{{1, 0}} }), nil, "Scenarios.Rate", "want in (0, MaxRate"},
		{"rate NaN", m(func(c *ServerShareConfig) { c.Scenarios = []ShareScenario{{1, math.NaN()}} }), nil, "Scenarios.Rate", "want in (0, MaxRate"},
		{"clients", m(func(c *ServerShareConfig) { c.Scenarios = []ShareScenario{{0, 1}} }), nil, "Scenarios.Clients", "MaxServices"},
		{"services", m(func(c *ServerShareConfig) { c.Scenarios = []ShareScenario{{MaxServices/5 + 1, 1}} }), nil, "Scenarios.Clients", "52429 clients × Layers 5 + 1: want 1 to MaxServices = 262144 services"},
		{"healthy", m(func(c *ServerShareConfig) { c.HealthyRequests = -1 }), nil, "HealthyRequests", "want >= 0"},
		{"healthy too long", m(func(c *ServerShareConfig) { c.HealthyRequests = 1 << 30; c.Scenarios = []ShareScenario{{1, 1e-3}} }), nil, "HealthyRequests", "want at most 2e6 s"},
		{"background", m(func(c *ServerShareConfig) { c.Background = 1 }), nil, "Background", "want in [0, 1)"},
		{"background NaN", m(func(c *ServerShareConfig) { c.Background = math.NaN() }), nil, "Background", "want in [0, 1)"},
		{"outage", m(func(c *ServerShareConfig) { c.Outage = 20*time.Second - 1 }), nil, "Outage", "want from twice Share.Window (10s"},
		{"outage long", m(func(c *ServerShareConfig) { c.Outage = 1e6*time.Second + 1 }), nil, "Outage", "to 1e6 s"},
		{"series", m(func(c *ServerShareConfig) { c.Share.Window = 10 * time.Millisecond; c.Outage = 1e5 * time.Second }), nil, "Outage", "above the limit MaxSeries"},
		{"work", m(func(c *ServerShareConfig) { c.Scenarios = []ShareScenario{{50000, 1000}} }), nil, "Scenarios", "above the limit MaxWork"},
	}
	for _, tt := range tests {
		cs := tt.cs
		if cs == nil && tt.name != "no contenders" {
			cs = []Contender{FullJitter()}
		}
		_, err := ServerShare(tt.cfg, cs, 1)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Param != tt.param || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want a ConfigError on %s saying %q", tt.name, err, tt.param, tt.want)
		}
		if verr := tt.cfg.Validate(cs); fmt.Sprint(verr) != fmt.Sprint(err) {
			t.Errorf("%s: Validate says %v, ServerShare %v", tt.name, verr, err)
		}
	}
	if err := sc.Validate([]Contender{FullJitter()}); err != nil {
		t.Errorf("the default configuration: %v", err)
	}
	most := sc
	most.Scenarios = []ShareScenario{{MaxServices / 5, 0.5}}
	most.HealthyRequests, most.Outage = 0, 20*time.Second
	if err := most.Validate([]Contender{FullJitter()}); err != nil {
		t.Errorf("MaxServices/5 clients of 5 layers at 0.5/s: %v", err)
	}
}

// TestOneLayerCalls: the bound of the one-layer rule, against the chains:
// a policy that stops whenever it is told to and retries otherwise makes at
// most that many calls.
func TestOneLayerCalls(t *testing.T) {
	if got := oneLayerCalls(5, 3); got != 36 {
		t.Errorf("5 layers of 3 attempts: %v calls, want 36", got)
	}
	if got := oneLayerCalls(1, 4); got != 5 {
		t.Errorf("1 layer of 4 attempts: %v calls, want 5", got)
	}
	if got := oneLayerCalls(MaxLayers, math.MaxInt32); math.IsInf(got, 0) || got < 1e15 {
		t.Errorf("the largest stack: %v", got)
	}
}

// TestShareDefaults: ShareDefaults fills in what retryshare.New
// does. A RetryShare of the zero configuration and one of the filled
// configuration, on the same clock, agree on every Refuse of a sequence that
// crosses each default's edge: the threshold (a share of 1/8, between 0.1
// and 0.2), the minimum (a share of 1 from a single retry) and the window
// (9, 10 s and a minute later).
func TestShareDefaults(t *testing.T) {
	for _, cfg := range []retryshare.Config{{}, {Threshold: 0.3}, {Window: time.Minute}, {MinRetries: 7}, {Burst: 2}, {MaxRoutes: 3}, {Callers: 5}} {
		clock := &virtualClock{}
		a, b := cfg, ShareDefaults(cfg)
		if b.Threshold == 0 || b.Window == 0 || b.MinRetries == 0 || b.Burst == 0 || b.MaxRoutes == 0 || b.Callers == 0 {
			t.Fatalf("ShareDefaults(%+v) = %+v: a zero left", cfg, b)
		}
		a.Now, b.Now = clock.now, clock.now
		x, errA := retryshare.New(a)
		y, errB := retryshare.New(b)
		if errA != nil || errB != nil {
			t.Fatal(errA, errB)
		}
		var seq []bool
		step := func(retry bool) {
			x.Record("", "c", retry)
			y.Record("", "c", retry)
			rx, ry := x.Refuse("", "c"), y.Refuse("", "c")
			seq = append(seq, rx)
			if rx != ry {
				t.Errorf("%+v: after %d requests: Refuse %v with the zero fields, %v with ShareDefaults %+v", cfg, len(seq), rx, ry, b)
			}
		}
		step(true) // 1 of 1
		for i := range 60 {
			step(i%8 == 0)
		}
		for _, d := range []time.Duration{9 * time.Second, 10 * time.Second, 59 * time.Second, time.Minute, 2 * time.Minute} {
			clock.t = d
			step(false)
		}
		if !slices.Contains(seq, true) || !slices.Contains(seq, false) {
			t.Errorf("%+v: Refuse was %v throughout: the sequence tests nothing", cfg, seq[0])
		}
	}
}
