package sim

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/backoffhttp"
	"github.com/backoffgo/backoff/retryshare"
)

// smallOverload is a short run of every default policy: a server of 5
// slots (50 requests/s), a spike at 70 % load, and 10 % random failures.
func smallOverload() OverloadConfig {
	c := DefaultOverload()
	c.Slots, c.Queue, c.Clients = 5, 100, 1000
	c.Warmup, c.After = 10*time.Second, 40*time.Second
	c.Rows = []OverloadRow{c.Rows[0], c.Rows[len(c.Rows)-1]}
	return c
}

// TestOverloadDeterministic: the same seed gives the same results.
func TestOverloadDeterministic(t *testing.T) {
	a, err := Overload(smallOverload(), nil, 7)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Overload(smallOverload(), nil, 7)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprintf("%+v", a) != fmt.Sprintf("%+v", b) { // NaN != NaN for reflect.DeepEqual
		t.Error("two runs with seed 7 differ")
	}
}

// TestOverloadCounts checks what every run of the small configuration
// counts: without retries every attempt is a request's first, so the
// peak load is 1; goodput never passes what arrived, and the shares are
// shares (After is not one: it counts successes of earlier requests).
func TestOverloadCounts(t *testing.T) {
	res, err := Overload(smallOverload(), nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		for i, run := range r.Runs {
			var good, offered int64
			for s := range run.Goodput {
				good += int64(run.Goodput[s])
				offered += int64(run.Offered[s])
			}
			if good > offered || offered > run.Requests || run.Refused > run.Requests {
				t.Errorf("%s, row %d: goodput %d, offered %d, requests %d, refused %d", r.Policy.Name, i, good, offered, run.Requests, run.Refused)
			}
			for _, v := range []float64{run.Success, run.Wasted} {
				if !(v >= 0 && v <= 1) {
					t.Errorf("%s, row %d: a share out of [0, 1]: %+v", r.Policy.Name, i, run)
				}
			}
			if r.Policy.Retry.MaxAttempts == 1 && (run.PeakLoad != 1 || run.Refused != 0) {
				t.Errorf("%s, row %d: peak load %v, refused %d; want 1 and 0 without retries", r.Policy.Name, i, run.PeakLoad, run.Refused)
			}
		}
	}
}

// TestOverloadQuota: one client whose every attempt fails makes exactly
// the retries the AWS quota allows, 500/14 = 35 (17 requests retry twice,
// the 18th once), then every request stops at its first failure.
func TestOverloadQuota(t *testing.T) {
	c := smallOverload()
	c.Clients = 1
	c.Rows = []OverloadRow{{Load: 0.1, Fail: 1 - 1e-12}}
	c.Policies = nil
	for _, p := range DefaultOverloadPolicies() {
		if p.Guard == GuardAWS {
			c.Policies = append(c.Policies, p)
		}
	}
	if len(c.Policies) != 1 {
		t.Fatalf("%d policies of AWS's quota, want 1", len(c.Policies))
	}
	res, err := Overload(c, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	run := res[0].Runs[0]
	if run.Refused != run.Requests-17 || run.Requests < 100 {
		t.Errorf("refused %d of %d requests; want all but 17", run.Refused, run.Requests)
	}
}

// TestOverloadBreaker drives the breaker's rule: open after more than 5
// consecutive failures, for 60 s (strictly), then one attempt let
// through, closed at its success and opened again at its failure; an
// outcome from an earlier state is ignored.
func TestOverloadBreaker(t *testing.T) {
	s := &overloadRun{clock: &virtualClock{}}
	var b breaker
	fail := func() {
		t.Helper()
		if !s.allow(&b) {
			t.Fatalf("refused at %v in state %d", s.now(), b.state)
		}
		s.record(&b, b.gen, false)
	}
	for range 5 {
		fail()
	}
	if b.state != brClosed {
		t.Fatal("opened after 5 failures")
	}
	old := b.gen
	fail()
	if b.state != brOpen || s.allow(&b) {
		t.Fatal("not open after 6 failures")
	}
	s.record(&b, old, true) // from before it opened: ignored
	s.clock.t = breakerOpen
	if s.allow(&b) {
		t.Fatal("let an attempt through at exactly 60 s")
	}
	s.clock.t++
	if !s.allow(&b) || s.allow(&b) {
		t.Fatal("half-open: want one attempt, then none")
	}
	s.record(&b, b.gen, false)
	if b.state != brOpen {
		t.Fatal("a failed probe did not open it again")
	}
	s.clock.t += breakerOpen + 1
	if !s.allow(&b) {
		t.Fatal("no probe after the second opening")
	}
	s.record(&b, b.gen, true)
	if b.state != brClosed || !s.allow(&b) || !s.allow(&b) {
		t.Fatal("a successful probe did not close it")
	}
}

// TestOverloadRefused: configurations out of range, or whose work or
// memory estimate is above its limit, are refused naming the parameter.
func TestOverloadRefused(t *testing.T) {
	for _, tt := range []struct {
		param string
		edit  func(c *OverloadConfig)
	}{
		{"Slots", func(c *OverloadConfig) { c.Slots = 0 }},
		{"Slots", func(c *OverloadConfig) { c.Slots = MaxOverloadSlots }}, // memory
		{"Slots", func(c *OverloadConfig) { c.Slots = 200 }},              // work
		{"Queue", func(c *OverloadConfig) { c.Queue = -1 }},
		{"Clients", func(c *OverloadConfig) { c.Clients = MaxFleetClients + 1 }},
		{"Timeout", func(c *OverloadConfig) { c.Timeout = 0 }},
		{"Warmup", func(c *OverloadConfig) { c.Warmup = 1500 * time.Millisecond }},
		{"Window", func(c *OverloadConfig) { c.Window = c.After + time.Second }},
		{"Tolerance", func(c *OverloadConfig) { c.Tolerance = 1 }},
		{"Budget.Now", func(c *OverloadConfig) { c.Budget.Now = time.Now }},
		{"Throttle", func(c *OverloadConfig) { c.Throttle.K = 0.5 }},
		{"Policies", func(c *OverloadConfig) { c.Policies = nil }},
		{"Policies.Name", func(c *OverloadConfig) { c.Policies = append(c.Policies, c.Policies[0]) }},
		{"Policy.MaxAttempts", func(c *OverloadConfig) { c.Policies[0].Retry.MaxAttempts = backoff.Unlimited }},
		{"Policies.ThrottleWindow", func(c *OverloadConfig) { c.Policies[0].ThrottleWindow = time.Millisecond }},
		{"Rows.Load", func(c *OverloadConfig) { c.Rows[0].Load = 0 }},
		{"Rows.Peak", func(c *OverloadConfig) { c.Rows[0].Peak = 0.1 }},
		{"Rows.Fail", func(c *OverloadConfig) { c.Rows[0].Fail = 1 }},
		{"Rows.Clients", func(c *OverloadConfig) { c.Rows[0].Clients = -1 }},
	} {
		c := DefaultOverload()
		c.Policies = DefaultOverloadPolicies()
		tt.edit(&c)
		_, err := Overload(c, nil, 1)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Param != tt.param || !strings.HasPrefix(err.Error(), "sim: overload: ") {
			t.Errorf("%s: got %v, want a ConfigError for it", tt.param, err)
		}
	}
}

// TestOverloadLibraryDefaults: the "library defaults" policy is
// backoffhttp.DefaultRetrier()'s against a server of Handler's default
// Share (GuardShare, the config's Share zero), "client defaults alone"
// the same client without it. DefaultRetrier's Policy (full jitter on the
// runtime's random source) the simulator cannot seed: both stop after the
// same attempt, and 2,000 draws of each delay of DefaultRetrier's stay
// within the ceiling min(Cap, Base·2ⁿ⁻¹) of the simulator's Config and
// reach above 99 % of it (a chance of 0.99²⁰⁰⁰ ≈ 2·10⁻⁹ to miss).
func TestOverloadLibraryDefaults(t *testing.T) {
	byName := map[string]OverloadPolicy{}
	for _, p := range DefaultOverloadPolicies() {
		byName[p.Name] = p
	}
	lib, alone := byName["library defaults"], byName["client defaults alone"]
	if lib.Guard != GuardShare || alone.Guard != GuardNone || lib.Retry != alone.Retry || fmt.Sprint(DefaultOverload().Share) != fmt.Sprint(retryshare.Config{}) {
		t.Fatalf("library defaults %+v, client defaults alone %+v: want the same client, with Handler's default Share and without", lib, alone)
	}
	cfg := lib.Retry
	pol := backoffhttp.DefaultRetrier().Policy
	for n := 1; n < cfg.MaxAttempts; n++ {
		ceiling := min(cfg.Cap, cfg.Base<<(n-1))
		var most time.Duration
		for range 2000 {
			d, err := pol.NextDelay(n, errFailed)
			if err != nil || d < 0 || d > ceiling {
				t.Fatalf("attempt %d: %v, %v; want a delay in [0, %v]", n, d, err, ceiling)
			}
			most = max(most, d)
		}
		if most < ceiling*99/100 {
			t.Errorf("attempt %d: the longest of 2,000 delays is %v; want near %v", n, most, ceiling)
		}
	}
	if _, err := pol.NextDelay(cfg.MaxAttempts, errFailed); err == nil {
		t.Errorf("DefaultRetrier's policy retries after attempt %d; the simulator's stops", cfg.MaxAttempts)
	}
}

// TestOverloadAdmit: admit, the simulator's Handler at a retry's arrival,
// records nothing for a retry it admits; one it refuses Admit counts, as a
// request and a retry of the caller's slot (so the window stays over while
// refused retries come).
func TestOverloadAdmit(t *testing.T) {
	for firstTries, want := range map[int]bool{8: false, 9: true} {
		c := &virtualClock{}
		share := backoff.Must(retryshare.New(retryshare.Config{Callers: 1, Now: c.now}))
		if !admit(share, "r", "c") {
			t.Fatal("a retry refused before any was counted")
		}
		share.Record("r", "c", true)
		// 1 retry of 1 request: one short of MinRetries (2).
		if !admit(share, "r", "c") {
			t.Fatal("1 retry of 1 request: a retry refused")
		}
		share.Record("r", "c", true)
		// 2 retries of 2 requests: the route is over, and so is the slot
		// (P(Binomial(2, 0.1) ≥ 2) = 0.01 ≤ 0.1).
		if admit(share, "r", "c") {
			t.Fatal("2 retries of 2 requests: a retry admitted")
		}
		// The route counts 3 retries of 2 requests now, over until 30
		// requests; the slot 3 retries of 3 requests, significant
		// (P(Binomial(R, 0.1) ≥ 3) ≤ 0.1) up to 11 requests (0.090), not at
		// 12 (0.111): 9 first tries. Were the refusal not counted in the
		// slot, its 2 retries would be significant up to 5 requests only
		// (0.081; 0.114 at 6): 4 first tries; counted as a retry but not a
		// request, the slot would still be over after 9 (3 of 11).
		for range firstTries {
			share.Record("r", "c", false)
		}
		if got := admit(share, "r", "c"); got != want {
			t.Errorf("after %d first tries: admitted %v, want %v (the refusal counted as a request and a retry of the slot)", firstTries, got, want)
		}
	}
}
