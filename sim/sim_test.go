package sim

import (
	"errors"
	"os"
	"reflect"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
)

func smallContention() ContentionConfig {
	c := DefaultContention()
	c.Clients = []int{10, 30}
	c.Runs = 8
	return c
}

func TestSameSeedSameNumbers(t *testing.T) {
	tests := []struct {
		name string
		run  func(seed uint64) (any, error)
	}{
		{"herd", func(s uint64) (any, error) { return Herd(DefaultHerd(), All(), s) }},
		{"outage", func(s uint64) (any, error) { return Outage(DefaultOutage(), All(), s) }},
		{"contention", func(s uint64) (any, error) { return Contention(smallContention(), All(), s) }},
		{"amplification", func(s uint64) (any, error) { return Amplification(DefaultAmplification(), All(), s) }},
		{"periodic", func(s uint64) (any, error) { return Periodic(DefaultPeriodic(), All(), s) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := tt.run(7)
			if err != nil {
				t.Fatal(err)
			}
			b, err := tt.run(7)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(a, b) {
				t.Errorf("seed 7 gave different results on two runs")
			}
			c, err := tt.run(8)
			if err != nil {
				t.Fatal(err)
			}
			if tt.name != "amplification" && reflect.DeepEqual(a, c) {
				t.Errorf("seeds 7 and 8 gave identical results")
			}
		})
	}
}

// TestIndependentOfCores checks that the result does not depend on how runs
// are spread over goroutines.
func TestIndependentOfCores(t *testing.T) {
	a, err := Contention(smallContention(), Brooker(), 3)
	if err != nil {
		t.Fatal(err)
	}
	var seq []ContentionResult
	for _, c := range Brooker() {
		r, err := Contention(smallContention(), []Contender{c}, 3)
		if err != nil {
			t.Fatal(err)
		}
		seq = append(seq, r...)
	}
	if !reflect.DeepEqual(a, seq) {
		t.Errorf("policies run together and one at a time disagree")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	one, err := Contention(smallContention(), Brooker(), 3)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, one) {
		t.Errorf("results on one core differ from results on %d", runtime.NumCPU())
	}
}

// countingPolicy is a Sequencer that counts the sequences started and the
// delays asked for, to check that the simulator drives policies as Do does.
type countingPolicy struct {
	sequences, calls *atomic.Int64
	max              int
}

func (p countingPolicy) NewSequence() backoff.Policy {
	p.sequences.Add(1)
	return p
}

func (p countingPolicy) NextDelay(attempt int, err error) (time.Duration, error) {
	p.calls.Add(1)
	if !errors.Is(err, errFailed) {
		panic("policy called without the simulated error")
	}
	if p.max != backoff.Unlimited && attempt >= p.max {
		return 0, backoff.ErrExhausted
	}
	return time.Duration(attempt) * time.Millisecond, nil
}

func counting() (Contender, *atomic.Int64, *atomic.Int64) {
	var seqs, calls atomic.Int64
	return Contender{Name: "counting", New: func(p Params, _ backoff.Rng) (backoff.Policy, error) {
		return countingPolicy{&seqs, &calls, p.MaxAttempts}, nil
	}}, &seqs, &calls
}

func TestOneSequencePerClient(t *testing.T) {
	c, seqs, calls := counting()
	cfg := DefaultHerd()
	cfg.Clients, cfg.Runs = 50, 2
	res, err := Herd(cfg, []Contender{c}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := seqs.Load(), int64(100); got != want {
		t.Errorf("herd started %d sequences, want one per client per run, %d", got, want)
	}
	if got, want := calls.Load(), int64(100*8); got != want {
		t.Errorf("herd asked %d delays, want %d (7 retries and one refusal per client)", got, want)
	}
	if res[0].Retries != 350 {
		t.Errorf("retries per run = %g, want 350", res[0].Retries)
	}

	c, seqs, calls = counting()
	oc := DefaultOutage()
	oc.Clients, oc.Runs = 50, 2
	oc.Outage = time.Hour // nobody gets through: every client spends its whole budget
	out, err := Outage(oc, []Contender{c}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := seqs.Load(), int64(100); got != want {
		t.Errorf("outage started %d sequences, want one per client per run, %d", got, want)
	}
	if got, want := calls.Load(), int64(100*8); got != want {
		t.Errorf("outage asked %d delays, want %d (7 retries and one refusal per client)", got, want)
	}
	if out[0].CallsPerClient != 8 || out[0].SuccessRate != 0 {
		t.Errorf("outage: %v calls per client, success %v; want 8 and 0", out[0].CallsPerClient, out[0].SuccessRate)
	}

	c, seqs, _ = counting()
	cc := smallContention()
	if _, err := Contention(cc, []Contender{c}, 1); err != nil {
		t.Fatal(err)
	}
	if got, want := seqs.Load(), int64((10+30)*cc.Runs); got != want {
		t.Errorf("contention started %d sequences, want %d", got, want)
	}

	c, seqs, _ = counting()
	ac := DefaultAmplification()
	ac.Requests = 1
	if _, err := Amplification(ac, []Contender{c}, 1); err != nil {
		t.Fatal(err)
	}
	// Every layer: 1 + 3 + 9 + 27 + 81 calls served by retrying layers;
	// top layer only: 1.
	if got, want := seqs.Load(), int64(121+1); got != want {
		t.Errorf("amplification started %d sequences, want one per call served, %d", got, want)
	}
}

func TestHerdSeries(t *testing.T) {
	res, err := Herd(DefaultHerd(), []Contender{Exponential()}, 1)
	if err != nil {
		t.Fatal(err)
	}
	// Exponential: every client retries at 100, 300, 700, ... 12,700 ms.
	want := map[int]int{10: 1000, 30: 1000, 70: 1000, 150: 1000, 310: 1000, 630: 1000, 1270: 1000}
	s := res[0].Series
	if len(s) != 1271 {
		t.Fatalf("series has %d windows, want 1271", len(s))
	}
	for w, n := range s {
		if n != want[w] {
			t.Errorf("window %d: %d retries, want %d", w, n, want[w])
		}
	}
}

func TestBaselines(t *testing.T) {
	p := Params{Base: 100 * time.Millisecond, Cap: time.Second, MaxAttempts: 4}
	rng := backoff.NewSeededRng(1)
	nb, err := NoBackoff().New(p, rng)
	if err != nil {
		t.Fatal(err)
	}
	tj, err := TimidJitter().New(p, rng)
	if err != nil {
		t.Fatal(err)
	}
	exp := backoff.Must(backoff.NewExponential(p.Config()))
	for attempt := 1; attempt <= 5; attempt++ {
		d, stop := nb.NextDelay(attempt, errFailed)
		if ok, wantOK := stop == nil, attempt < 4; ok != wantOK || d != 0 {
			t.Errorf("no-backoff attempt %d = %v, %v; want 0, %v", attempt, d, ok, wantOK)
		}
		for range 50 {
			d, stop := tj.NextDelay(attempt, errFailed)
			e, estop := exp.NextDelay(attempt, errFailed)
			ok, eok := stop == nil, estop == nil
			if ok != eok || (ok && (d < e || d > e+TimidSpread)) {
				t.Errorf("timid-jitter attempt %d = %v, %v; want in [%v, %v+200ms], %v", attempt, d, ok, e, e, eok)
			}
		}
	}
	for _, c := range All() {
		if c.Baseline != (c.Name == "no-backoff" || c.Name == "timid-jitter") {
			t.Errorf("%s: Baseline = %v", c.Name, c.Baseline)
		}
		if got, err := Lookup(c.Name); err != nil || got.Name != c.Name {
			t.Errorf("Lookup(%q) = %v, %v", c.Name, got.Name, err)
		}
	}
	if _, err := Lookup("nope"); err == nil {
		t.Error("Lookup(nope) succeeded")
	}
}

func TestErrors(t *testing.T) {
	forever := Contender{Name: "forever", New: func(Params, backoff.Rng) (backoff.Policy, error) {
		return backoff.PolicyFunc(func(int, error) (time.Duration, error) { return time.Millisecond, nil }), nil
	}}
	badParams := DefaultHerd()
	badParams.Params.Base = 0
	unlimited := DefaultHerd()
	unlimited.Params.MaxAttempts = backoff.Unlimited
	noClients := DefaultOutage()
	noClients.Clients = 0
	zeroSweep := DefaultContention()
	zeroSweep.Clients = []int{0}
	badLayer := DefaultAmplification()
	badLayer.RetryLayer = 9
	shortHorizon := DefaultPeriodic()
	shortHorizon.Horizon = time.Minute
	tests := []struct {
		name string
		run  func() error
		want string
	}{
		{"invalid params name the policy", func() error { _, err := Herd(badParams, []Contender{FullJitter()}, 1); return err }, `"full-jitter"`},
		{"herd needs a finite budget", func() error { _, err := Herd(unlimited, Builtins(), 1); return err }, "finite"},
		{"policy that never gives up", func() error { _, err := Herd(DefaultHerd(), []Contender{forever}, 1); return err }, "did not give up"},
		{"no constructor", func() error { _, err := Herd(DefaultHerd(), []Contender{{Name: "x"}}, 1); return err }, "no constructor"},
		{"outage clients", func() error { _, err := Outage(noClients, All(), 1); return err }, "Clients"},
		{"contention fleet size", func() error { _, err := Contention(zeroSweep, All(), 1); return err }, "fleet size 0"},
		{"amplification retry layer", func() error { _, err := Amplification(badLayer, All(), 1); return err }, "RetryLayer"},
		{"periodic horizon", func() error { _, err := Periodic(shortHorizon, All(), 1); return err }, "Horizon"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.run()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want one mentioning %q", err, tt.want)
			}
		})
	}
}

func TestSweep(t *testing.T) {
	tests := []struct {
		from, to, step int
		want           []int
	}{
		{10, 50, 10, []int{10, 20, 30, 40, 50}},
		{10, 55, 10, []int{10, 20, 30, 40, 50}},
		{5, 5, 1, []int{5}},
		{5, 4, 1, nil},
		{1, 3, 0, nil},
	}
	for _, tt := range tests {
		if got := Sweep(tt.from, tt.to, tt.step); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Sweep(%d, %d, %d) = %v, want %v", tt.from, tt.to, tt.step, got, tt.want)
		}
	}
}

// TestPerformance checks the targets: Brooker's default sweep
// (N = 10..190, 100 runs, five policies) under 2 s on two cores, and the herd
// at 1,000,000 clients under 5 s. It measures wall time, which other test
// packages running in parallel would distort, so it runs only when asked, on
// its own:
//
//	SIM_PERF=1 go test -run TestPerformance -count=1 ./sim/
//
// The best of three attempts counts.
func TestPerformance(t *testing.T) {
	if os.Getenv("SIM_PERF") == "" || raceEnabled {
		t.Skip("timing test: set SIM_PERF=1 and run it alone, without -race")
	}
	best := func(f func()) time.Duration {
		b := time.Duration(1 << 62)
		for range 3 {
			start := time.Now()
			f()
			b = min(b, time.Since(start))
		}
		return b
	}
	cfg := DefaultContention()
	cfg.Clients = Sweep(10, 190, 10)
	sweep := best(func() {
		if _, err := Contention(cfg, Brooker(), 1); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("contention sweep N=10..190, 100 runs, 5 policies: %v", sweep)
	if sweep > 2*time.Second {
		t.Errorf("contention sweep took %v, want under 2s", sweep)
	}
	herd := DefaultHerd()
	herd.Clients, herd.Runs = 1_000_000, 1
	h := best(func() {
		if _, err := Herd(herd, []Contender{FullJitter(), Decorrelated()}, 1); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("herd, 1,000,000 clients, full jitter and decorrelated: %v", h)
	if h > 5*time.Second {
		t.Errorf("herd at 1,000,000 clients took %v, want under 5s", h)
	}
}
