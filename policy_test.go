package backoff

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/backoffgo/backoff/internal/golden"
)

func TestPolicyBoundsProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	rng := NewSeededRng(5)
	for range 3000 {
		base, cap := randomConfig(r)
		cfg := Config{Base: base, Cap: cap, MaxAttempts: Unlimited}
		for _, p := range policiesFor(t, cfg, rng) {
			for range 10 {
				attempt := randomAttempt(r)
				d, stop := p.policy.NextDelay(attempt, errTransient)
				ok := stop == nil
				lo, hi := p.bounds(attempt)
				if !ok || d < lo || d > hi {
					t.Fatalf("%s %+v attempt %d: got (%d, %v), want [%d, %d]", p.name, cfg, attempt, d, ok, lo, hi)
				}
			}
		}
	}
}

func FuzzPolicyBounds(f *testing.F) {
	f.Add(int64(1), int64(math.MaxInt64), math.MaxInt, uint64(1))
	f.Add(int64(100*time.Millisecond), int64(10*time.Second), 3, uint64(2))
	f.Fuzz(func(t *testing.T, base, cap int64, attempt int, seed uint64) {
		if base <= 0 || cap < base {
			t.Skip()
		}
		cfg := Config{Base: time.Duration(base), Cap: time.Duration(cap), MaxAttempts: Unlimited}
		for _, p := range policiesFor(t, cfg, NewSeededRng(seed)) {
			d, stop := p.policy.NextDelay(attempt, errTransient)
			ok := stop == nil
			lo, hi := p.bounds(attempt)
			if !ok || d < lo || d > hi {
				t.Fatalf("%s %+v attempt %d: got (%d, %v), want [%d, %d]", p.name, cfg, attempt, d, ok, lo, hi)
			}
		}
	})
}

func TestRangeEndsReachable(t *testing.T) {
	const maxD = time.Duration(math.MaxInt64)
	tests := []struct {
		name   string
		make   func(Config, Rng) Policy
		cfg    Config
		lo, hi time.Duration
	}{
		{"fulljitter small", func(c Config, r Rng) Policy { return Must(NewFullJitter(c, r)) }, Config{Base: 4, Cap: 4, MaxAttempts: 2}, 0, 4},
		{"fulljitter MaxInt64", func(c Config, r Rng) Policy { return Must(NewFullJitter(c, r)) }, Config{Base: maxD, Cap: maxD, MaxAttempts: 2}, 0, maxD},
		{"equaljitter small", func(c Config, r Rng) Policy { return Must(NewEqualJitter(c, r)) }, Config{Base: 5, Cap: 5, MaxAttempts: 2}, 3, 5},
		{"equaljitter 1ns", func(c Config, r Rng) Policy { return Must(NewEqualJitter(c, r)) }, Config{Base: 1, Cap: 1, MaxAttempts: 2}, 1, 1},
		{"equaljitter MaxInt64", func(c Config, r Rng) Policy { return Must(NewEqualJitter(c, r)) }, Config{Base: maxD, Cap: maxD, MaxAttempts: 2}, maxD - maxD/2, maxD},
		{"decorrelated", func(c Config, r Rng) Policy { return Must(NewDecorrelated(c, r)) }, Config{Base: 2, Cap: 5, MaxAttempts: 2}, 2, 5},
		{"decorrelated MaxInt64", func(c Config, r Rng) Policy { return Must(NewDecorrelated(c, r)) }, Config{Base: maxD, Cap: maxD, MaxAttempts: 2}, maxD, maxD},
		// 3·(MaxInt64/3) = MaxInt64−1 still fits: the largest prev whose
		// triple is exact, one below the saturated bound.
		{"decorrelated MaxInt64/3", func(c Config, r Rng) Policy { return Must(NewDecorrelated(c, r)) }, Config{Base: maxD / 3, Cap: maxD, MaxAttempts: 2}, maxD / 3, maxD - 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The extreme sources pin both ends exactly, whatever the span.
			if d, _ := tt.make(tt.cfg, extremeRng{high: false}).NextDelay(1, nil); d != tt.lo {
				t.Errorf("lowest draw gave %d, want %d", d, tt.lo)
			}
			if d, _ := tt.make(tt.cfg, extremeRng{high: true}).NextDelay(1, nil); d != tt.hi {
				t.Errorf("highest draw gave %d, want %d", d, tt.hi)
			}
			// A real source reaches both ends of a small range.
			if tt.hi-tt.lo > 10 {
				return
			}
			p := tt.make(tt.cfg, NewSeededRng(1))
			seen := map[time.Duration]bool{}
			for range 1000 {
				d, _ := p.NextDelay(1, errTransient)
				seen[d] = true
			}
			if !seen[tt.lo] || !seen[tt.hi] {
				t.Errorf("in 1000 draws saw %v; want both %d and %d", seen, tt.lo, tt.hi)
			}
		})
	}
}

func TestGivingUpConsumesNoRandomness(t *testing.T) {
	cfg := Config{Base: time.Millisecond, Cap: time.Second, MaxAttempts: 3}
	for _, make := range []func(Rng) Policy{
		func(r Rng) Policy { return Must(NewFullJitter(cfg, r)) },
		func(r Rng) Policy { return Must(NewEqualJitter(cfg, r)) },
		func(r Rng) Policy { return Must(NewDecorrelated(cfg, r)) },
		func(r Rng) Policy { return Must(NewDecorrelated(cfg, r)).NewSequence() },
	} {
		counting, reference := newCountingRng(9), newCountingRng(9)
		p, q := make(counting), make(reference)
		for _, step := range []struct {
			attempt int
			err     error
			retry   bool
		}{
			{1, errTransient, true},
			{1, Permanent(errTransient), false},
			{1, retryableErr(false), false},
			{3, errTransient, false},
			{math.MaxInt, errTransient, false},
			{2, nil, true},
		} {
			before := counting.calls
			d, stop := p.NextDelay(step.attempt, step.err)
			ok := stop == nil
			if ok != step.retry {
				t.Fatalf("%T NextDelay(%d, %v) ok = %v, want %v", p, step.attempt, step.err, ok, step.retry)
			}
			if !ok && (counting.calls != before || d != 0) {
				t.Fatalf("%T gave up at (%d, %v) but drew %d values, delay %d", p, step.attempt, step.err, counting.calls-before, d)
			}
			if ok {
				// The stream is where a policy that never gave up would be.
				want, _ := q.NextDelay(step.attempt, step.err)
				if d != want {
					t.Fatalf("%T after give-ups drew %d, a fresh stream gives %d", p, d, want)
				}
			}
		}
	}
}

func TestJitterIsUniform(t *testing.T) {
	// 10 buckets, 9 degrees of freedom: P(χ² > 27.88) = 0.001 for a uniform draw.
	const draws, limit = 200000, 27.88
	tests := []struct {
		name string
		p    Policy
		lo   int64
	}{
		{"fulljitter [0,9]", Must(NewFullJitter(Config{Base: 9, Cap: 9, MaxAttempts: 2}, NewSeededRng(11))), 0},
		{"equaljitter [10,19]", Must(NewEqualJitter(Config{Base: 19, Cap: 19, MaxAttempts: 2}, NewSeededRng(12))), 10},
	}
	for _, tt := range tests {
		counts := make([]int, 10)
		for range draws {
			d, _ := tt.p.NextDelay(1, errTransient)
			counts[int64(d)-tt.lo]++
		}
		if x := chiSquare(counts, draws); x > limit {
			t.Errorf("%s: χ² = %.2f > %.2f, counts %v", tt.name, x, limit, counts)
		}
	}
	// The wide case: the MaxInt64 path's two draws give a uniform top bit
	// and uniform tenths.
	p := Must(NewFullJitter(Config{Base: math.MaxInt64, Cap: math.MaxInt64, MaxAttempts: 2}, NewSeededRng(13)))
	counts := make([]int, 10)
	for range draws {
		d, _ := p.NextDelay(1, errTransient)
		counts[int64(d)/(math.MaxInt64/10+1)]++
	}
	if x := chiSquare(counts, draws); x > limit {
		t.Errorf("fulljitter [0,MaxInt64]: χ² = %.2f > %.2f, counts %v", x, limit, counts)
	}
}

// TestStopReasons pins the seed's order of checks in every built-in policy:
// a non-retryable error first (ErrPermanent, whatever the attempt), then the
// attempt budget (ErrExhausted), and a zero delay with either.
func TestStopReasons(t *testing.T) {
	permanent := Permanent(errTransient)
	for _, p := range policiesFor(t, Config{Base: 1, Cap: 8, MaxAttempts: 4}, RuntimeRng{}) {
		for _, tt := range []struct {
			attempt int
			err     error
			want    error
		}{
			{1, errTransient, nil},
			{3, errTransient, nil},
			{3, nil, nil},
			{4, errTransient, ErrExhausted},
			{5, errTransient, ErrExhausted},
			{math.MaxInt, errTransient, ErrExhausted},
			{1, permanent, ErrPermanent},
			{4, permanent, ErrPermanent},
			{4, retryableErr(false), ErrPermanent},
		} {
			d, reason := p.policy.NextDelay(tt.attempt, tt.err)
			if reason != tt.want || (reason != nil && d != 0) {
				t.Errorf("%s NextDelay(%d, %v) = %v, %v; want reason %v", p.name, tt.attempt, tt.err, d, reason, tt.want)
			}
		}
	}
	for _, p := range policiesFor(t, Config{Base: 1, Cap: 8, MaxAttempts: Unlimited}, RuntimeRng{}) {
		if _, reason := p.policy.NextDelay(math.MaxInt, errTransient); reason != nil {
			t.Errorf("%s with Unlimited gave up at MaxInt: %v", p.name, reason)
		}
	}
}

func TestPolicyFuncAndstartSequence(t *testing.T) {
	errMine := errors.New("mine")
	f := PolicyFunc(func(attempt int, err error) (time.Duration, error) {
		if attempt >= 3 {
			return 0, errMine
		}
		return time.Duration(attempt), nil
	})
	if d, reason := f.NextDelay(2, nil); d != 2 || reason != nil {
		t.Errorf("PolicyFunc gave (%v, %v)", d, reason)
	}
	if _, reason := f.NextDelay(3, nil); reason != errMine {
		t.Errorf("PolicyFunc's reason = %v, want its own", reason)
	}
	if d, _ := startSequence(f).NextDelay(1, nil); d != 1 {
		t.Errorf("startSequence(non-sequencer) gave %v, want the PolicyFunc's 1ns", d)
	}
	exp := Must(NewExponential(Config{Base: 1, Cap: 1, MaxAttempts: 1}))
	if startSequence(exp) != Policy(exp) {
		t.Error("startSequence should return a stateless policy itself")
	}
	dec := Must(NewDecorrelated(Config{Base: 1, Cap: 1, MaxAttempts: 1}, RuntimeRng{}))
	if a, b := startSequence(dec), startSequence(dec); a == b {
		t.Error("startSequence should give each sequence its own state")
	}
}

// TestSharedPolicies has 64 goroutines share each policy; run with -race.
func TestSharedPolicies(t *testing.T) {
	cfg := Config{Base: time.Millisecond, Cap: time.Second, MaxAttempts: Unlimited}
	for _, rng := range []Rng{RuntimeRng{}, NewSeededRng(1)} {
		for _, p := range policiesFor(t, cfg, rng) {
			var wg sync.WaitGroup
			errs := make(chan string, 64)
			for g := range 64 {
				wg.Go(func() {
					seq := startSequence(p.policy)
					for i := range 500 {
						attempt := 1 + (g+i)%12
						d, stop := p.policy.NextDelay(attempt, errTransient)
						ok := stop == nil
						lo, hi := p.bounds(attempt)
						if !ok || d < lo || d > hi {
							errs <- fmt.Sprintf("%s attempt %d: %v", p.name, attempt, d)
							return
						}
						if d, reason := seq.NextDelay(attempt, errTransient); reason != nil || d < 0 || d > cfg.Cap {
							errs <- fmt.Sprintf("%s sequence attempt %d: %v", p.name, attempt, d)
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for e := range errs {
				t.Error(e)
			}
		}
	}
}

// TestGolden compares seeded delay sequences with testdata/*.golden.
// Regenerate with: go test -run TestGolden -update
func TestGolden(t *testing.T) {
	cfg := Config{Base: 100 * time.Millisecond, Cap: 10 * time.Second, MaxAttempts: 12}
	hinted := WithRetryAfter(errTransient, 3*time.Second)
	builders := map[string]func() Policy{
		"exponential":  func() Policy { return Must(NewExponential(cfg)) },
		"equaljitter":  func() Policy { return Must(NewEqualJitter(cfg, NewSeededRng(1))) },
		"decorrelated": func() Policy { return Must(NewDecorrelated(cfg, NewSeededRng(1))) },
		"retryafter": func() Policy {
			return Must(NewRetryAfter(Must(NewFullJitter(cfg, NewSeededRng(1))),
				RetryAfterConfig{MaxWait: 5 * time.Second}))
		},
	}
	for name, build := range builders {
		t.Run(name, func(t *testing.T) {
			var b strings.Builder
			seq := startSequence(build())
			for attempt := 1; attempt <= 13; attempt++ {
				err := errTransient
				if name == "retryafter" && attempt%3 == 0 {
					err = hinted
				}
				d, stop := seq.NextDelay(attempt, err)
				ok := stop == nil
				fmt.Fprintf(&b, "%d %v %d\n", attempt, ok, d)
			}
			golden.Check(t, filepath.Join("testdata", name+".golden"), []byte(b.String()))
		})
	}
}
