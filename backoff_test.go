package backoff

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

var errTransient = errors.New("transient")

// countingRng counts the draws made from an underlying generator.
type countingRng struct {
	r     *rand.Rand
	calls int
}

func newCountingRng(seed uint64) *countingRng {
	return &countingRng{r: rand.New(rand.NewPCG(seed, seed))}
}

func (c *countingRng) Int64N(n int64) int64 {
	c.calls++
	return c.r.Int64N(n)
}

// extremeRng always returns the highest (or lowest) value allowed.
type extremeRng struct{ high bool }

func (e extremeRng) Int64N(n int64) int64 {
	if e.high {
		return n - 1
	}
	return 0
}

// doublingCeiling is the reference definition: double from base until the
// attempt is reached or the cap would be passed.
func doublingCeiling(base, cap time.Duration, attempt int) time.Duration {
	d := base
	for i := 1; i < attempt; i++ {
		if d > cap/2 {
			return cap
		}
		d *= 2
	}
	return min(d, cap)
}

func TestCeilingTable(t *testing.T) {
	const maxD = time.Duration(math.MaxInt64)
	tests := []struct {
		base, cap time.Duration
		attempt   int
		want      time.Duration
	}{
		{100 * time.Millisecond, 10 * time.Second, 1, 100 * time.Millisecond},
		{100 * time.Millisecond, 10 * time.Second, 2, 200 * time.Millisecond},
		{100 * time.Millisecond, 10 * time.Second, 7, 6400 * time.Millisecond},
		{100 * time.Millisecond, 10 * time.Second, 8, 10 * time.Second},
		{100 * time.Millisecond, 10 * time.Second, 0, 100 * time.Millisecond},
		{100 * time.Millisecond, 10 * time.Second, -7, 100 * time.Millisecond},
		{100 * time.Millisecond, 10 * time.Second, math.MaxInt, 10 * time.Second},
		{time.Second, maxD, 34, time.Second << 33},
		{time.Second, maxD, 35, maxD},
		{time.Second, maxD, 40, maxD},
		{1, maxD, 63, 1 << 62},
		{1, maxD, 64, maxD},
		{1, maxD, 65, maxD},
		{1, maxD, 1e6, maxD},
		{1, maxD, math.MaxInt, maxD},
		{maxD, maxD, 1, maxD},
		{maxD, maxD, math.MaxInt, maxD},
		{1, 1, 2, 1},
		{3, 10, 2, 6},
		{3, 10, 3, 10},
	}
	for _, tt := range tests {
		got := ceiling(tt.base, tt.cap, tt.attempt)
		if got != tt.want {
			t.Errorf("ceiling(%d, %d, %d) = %d, want %d", tt.base, tt.cap, tt.attempt, got, tt.want)
		}
	}
}

// randomConfig draws a valid (base, cap) pair spread over all magnitudes,
// extremes included.
func randomConfig(r *rand.Rand) (base, cap time.Duration) {
	base = time.Duration(1) << r.IntN(63)
	base += time.Duration(r.Int64N(int64(base)))
	if base <= 0 {
		base = math.MaxInt64
	}
	switch r.IntN(4) {
	case 0:
		cap = math.MaxInt64
	case 1:
		cap = base
	default:
		cap = base + time.Duration(r.Int64N(math.MaxInt64-int64(base)+1))
	}
	return base, cap
}

func randomAttempt(r *rand.Rand) int {
	switch r.IntN(4) {
	case 0:
		return r.IntN(70) - 3
	case 1:
		return math.MaxInt - r.IntN(3)
	default:
		return int(r.Int64N(math.MaxInt64))
	}
}

func TestCeilingMatchesDoubling(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		base, cap := randomConfig(r)
		attempt := randomAttempt(r)
		got := ceiling(base, cap, attempt)
		if want := doublingCeiling(base, cap, attempt); got != want {
			t.Fatalf("ceiling(%d, %d, %d) = %d, doubling gives %d", base, cap, attempt, got, want)
		}
		if got < base || got > cap {
			t.Fatalf("ceiling(%d, %d, %d) = %d outside [base, cap]", base, cap, attempt, got)
		}
	}
}

func FuzzCeiling(f *testing.F) {
	f.Add(int64(1), int64(math.MaxInt64), 64)
	f.Add(int64(time.Second), int64(math.MaxInt64), 34)
	f.Add(int64(100*time.Millisecond), int64(10*time.Second), 0)
	f.Fuzz(func(t *testing.T, base, cap int64, attempt int) {
		if base <= 0 || cap < base {
			t.Skip()
		}
		b, c := time.Duration(base), time.Duration(cap)
		got := ceiling(b, c, attempt)
		if want := doublingCeiling(b, c, attempt); got != want {
			t.Fatalf("ceiling(%d, %d, %d) = %d, doubling gives %d", base, cap, attempt, got, want)
		}
	})
}

// policyUnderTest builds every policy over cfg, with the bounds each must
// respect at a given attempt.
type policyUnderTest struct {
	name   string
	policy Policy
	bounds func(attempt int) (lo, hi time.Duration)
}

func policiesFor(t testing.TB, cfg Config, rng Rng) []policyUnderTest {
	t.Helper()
	c := func(attempt int) time.Duration { return ceiling(cfg.Base, cfg.Cap, attempt) }
	exp := Must(NewExponential(cfg))
	ra := Must(NewRetryAfter(exp, RetryAfterConfig{MaxWait: time.Second}))
	return []policyUnderTest{
		{"exponential", exp, func(a int) (time.Duration, time.Duration) { return c(a), c(a) }},
		{"fulljitter", Must(NewFullJitter(cfg, rng)), func(a int) (time.Duration, time.Duration) { return 0, c(a) }},
		{"equaljitter", Must(NewEqualJitter(cfg, rng)), func(a int) (time.Duration, time.Duration) { return c(a) - c(a)/2, c(a) }},
		{"decorrelated", Must(NewDecorrelated(cfg, rng)), func(a int) (time.Duration, time.Duration) {
			return cfg.Base, min(cfg.Cap, saturatingTriple(cfg.Base))
		}},
		{"retryafter", ra, func(a int) (time.Duration, time.Duration) { return c(a), c(a) }},
	}
}

func saturatingTriple(d time.Duration) time.Duration {
	if d > math.MaxInt64/3 {
		return math.MaxInt64
	}
	return 3 * d
}

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

func TestDecorrelatedSequenceProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 7))
	for range 2000 {
		base, cap := randomConfig(r)
		cfg := Config{Base: base, Cap: cap, MaxAttempts: Unlimited}
		seq := Must(NewDecorrelated(cfg, NewSeededRng(r.Uint64()))).NewSequence()
		prev := base
		for attempt := 1; attempt <= 50; attempt++ {
			d, stop := seq.NextDelay(attempt, errTransient)
			ok := stop == nil
			hi := min(cap, saturatingTriple(prev))
			if !ok || d < base || d > hi {
				t.Fatalf("%+v attempt %d: got %d, want [%d, %d] (prev %d)", cfg, attempt, d, base, hi, prev)
			}
			prev = d
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

// chiSquare returns the statistic for counts against a uniform expectation.
func chiSquare(counts []int, total int) float64 {
	expected := float64(total) / float64(len(counts))
	var x float64
	for _, c := range counts {
		x += (float64(c) - expected) * (float64(c) - expected) / expected
	}
	return x
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

func TestConstructorsRejectBadParameters(t *testing.T) {
	good := Config{Base: time.Millisecond, Cap: time.Second, MaxAttempts: 3}
	exp := Must(NewExponential(good))
	tests := []struct {
		name  string
		err   error
		param string
	}{
		{"base zero", second(NewExponential(Config{Base: 0, Cap: 1, MaxAttempts: 1})), "Base"},
		{"base negative", second(NewFullJitter(Config{Base: -1, Cap: 1, MaxAttempts: 1}, RuntimeRng{})), "Base"},
		{"cap below base", second(NewEqualJitter(Config{Base: 2, Cap: 1, MaxAttempts: 1}, RuntimeRng{})), "Cap"},
		{"max attempts zero", second(NewDecorrelated(Config{Base: 1, Cap: 1, MaxAttempts: 0}, RuntimeRng{})), "MaxAttempts"},
		{"max attempts -2", second(NewExponential(Config{Base: 1, Cap: 1, MaxAttempts: -2})), "MaxAttempts"},
		{"nil rng full", second(NewFullJitter(good, nil)), "Rng"},
		{"nil rng equal", second(NewEqualJitter(good, nil)), "Rng"},
		{"nil rng decorrelated", second(NewDecorrelated(good, nil)), "Rng"},
		{"typed nil rand.Rand", second(NewEqualJitter(good, (*rand.Rand)(nil))), "Rng"},
		{"nil PolicyFunc", second(NewRetryAfter(PolicyFunc(nil), RetryAfterConfig{MaxWait: 1})), "next"},
		{"typed nil policy", second(NewRetryAfter((*FullJitter)(nil), RetryAfterConfig{MaxWait: 1})), "next"},
		{"nil next", second(NewRetryAfter(nil, RetryAfterConfig{MaxWait: 1})), "next"},
		{"max wait zero", second(NewRetryAfter(exp, RetryAfterConfig{})), "MaxWait"},
		{"max wait negative", second(NewRetryAfter(exp, RetryAfterConfig{MaxWait: -1})), "MaxWait"},
	}
	for _, tt := range tests {
		var pe *ParamError
		if !errors.As(tt.err, &pe) || pe.Param != tt.param {
			t.Errorf("%s: got %v, want a *ParamError for %s", tt.name, tt.err, tt.param)
			continue
		}
		if !strings.Contains(tt.err.Error(), tt.param) {
			t.Errorf("%s: message %q does not name %s", tt.name, tt.err, tt.param)
		}
	}
	for _, cfg := range []Config{
		{Base: 1, Cap: 1, MaxAttempts: Unlimited},
		{Base: 1, Cap: math.MaxInt64, MaxAttempts: math.MaxInt},
		{Base: math.MaxInt64, Cap: math.MaxInt64, MaxAttempts: 1},
	} {
		if _, err := NewFullJitter(cfg, RuntimeRng{}); err != nil {
			t.Errorf("NewFullJitter(%+v) = %v, want success", cfg, err)
		}
	}
}

func second[P any](_ P, err error) error { return err }

func TestMustPanicsWithTheError(t *testing.T) {
	_, want := NewExponential(Config{})
	defer func() {
		if got := recover(); got == nil || got.(error).Error() != want.Error() {
			t.Errorf("Must panicked with %v, want %v", got, want)
		}
	}()
	Must(NewExponential(Config{}))
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

type retryableErr bool

func (r retryableErr) Error() string   { return fmt.Sprintf("retryable=%v", bool(r)) }
func (r retryableErr) Retryable() bool { return bool(r) }

// declaredWrapper declares itself retryable and wraps another error.
type declaredWrapper struct{ err error }

func (d declaredWrapper) Error() string   { return "declared: " + d.err.Error() }
func (d declaredWrapper) Unwrap() error   { return d.err }
func (d declaredWrapper) Retryable() bool { return true }

func TestRetryable(t *testing.T) {
	nested := &Error{Reason: ErrPermanent, Err: Permanent(errTransient), Attempts: 1}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, true},
		{"plain", errTransient, true},
		{"permanent", Permanent(errTransient), false},
		{"wrapped permanent", fmt.Errorf("op: %w", Permanent(errTransient)), false},
		{"fmt.Errorf without %w", fmt.Errorf("op %d failed", 3), true},
		// A context error from fn is an inner context's (Do checks its own
		// first): a per-attempt timeout, retried.
		{"canceled", context.Canceled, true},
		{"deadline", context.DeadlineExceeded, true},
		{"wrapped deadline", fmt.Errorf("op: %w", context.DeadlineExceeded), true},
		{"ErrDeadline", ErrDeadline, true},
		{"typed nil PermanentError", (*permanentError)(nil), false},
		{"typed nil Error", (*Error)(nil), true},
		{"permanent wrapping a typed nil", Permanent((*Error)(nil)), false},
		{"declares false", retryableErr(false), false},
		{"declares true", retryableErr(true), true},
		{"outer declaration wins over a mark", declaredWrapper{Permanent(errTransient)}, true},
		{"mark outside a declaration wins", Permanent(declaredWrapper{errTransient}), false},
		{"joined, permanent second", errors.Join(errTransient, Permanent(errTransient)), false},
		{"joined, plain", errors.Join(errTransient, errors.New("x")), true},
		{"nested Do gave up on a marked error", nested, true},
		{"wrapped nested Do", fmt.Errorf("outer: %w", nested), true},
		{"nested Do, error itself permanent", &Error{Reason: ErrPermanent, Err: retryableErr(false)}, false},
		{"nested Do, context ended", &Error{Reason: context.Canceled, Err: context.Canceled}, true},
		{"nested Do that never called", &Error{Reason: context.Canceled}, true},
	}
	for _, tt := range tests {
		if got := Retryable(tt.err); got != tt.want {
			t.Errorf("%s: Retryable(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
	if Permanent(nil) != nil {
		t.Error("Permanent(nil) != nil")
	}
	if got := Permanent(errTransient); !errors.Is(got, errTransient) || got.Error() != errTransient.Error() {
		t.Errorf("Permanent hides its error: %v", got)
	}
}

func TestPolicyFuncAndStartSequence(t *testing.T) {
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
	if d, _ := StartSequence(f).NextDelay(1, nil); d != 1 {
		t.Errorf("StartSequence(non-sequencer) gave %v, want the PolicyFunc's 1ns", d)
	}
	exp := Must(NewExponential(Config{Base: 1, Cap: 1, MaxAttempts: 1}))
	if StartSequence(exp) != Policy(exp) {
		t.Error("StartSequence should return a stateless policy itself")
	}
	dec := Must(NewDecorrelated(Config{Base: 1, Cap: 1, MaxAttempts: 1}, RuntimeRng{}))
	if a, b := StartSequence(dec), StartSequence(dec); a == b {
		t.Error("StartSequence should give each sequence its own state")
	}
}

func TestSeededRngIsReproducible(t *testing.T) {
	a, b := NewSeededRng(42), NewSeededRng(42)
	c := NewSeededRng(43)
	same, differ := true, false
	for range 100 {
		x, y, z := a.Int64N(1<<40), b.Int64N(1<<40), c.Int64N(1<<40)
		same = same && x == y
		differ = differ || x != z
	}
	if !same || !differ {
		t.Errorf("same seed same stream: %v; other seed differs: %v", same, differ)
	}
	if v := (RuntimeRng{}).Int64N(10); v < 0 || v >= 10 {
		t.Errorf("RuntimeRng.Int64N(10) = %d", v)
	}
}

// TestRuntimeRngIsUniform checks the runtime source's own mapping onto
// [0, n): in range for bounds where rejection is common, and uniform over a
// small bound. The source cannot be seeded, so the χ² threshold is set at
// P = 10⁻⁶ (9 degrees of freedom) to keep the test from flaking.
func TestRuntimeRngIsUniform(t *testing.T) {
	var rng RuntimeRng
	for _, n := range []int64{1, 2, 3, 1<<62 + 1, math.MaxInt64} {
		upper := 0
		for range 20000 {
			v := rng.Int64N(n)
			if v < 0 || v >= n {
				t.Fatalf("Int64N(%d) = %d out of range", n, v)
			}
			if v >= n/2 {
				upper++
			}
		}
		// For large n the upper half is drawn half the time; 20000 draws
		// put 5 standard deviations at ±354.
		if n > 1<<40 && (upper < 10000-354 || upper > 10000+354) {
			t.Errorf("Int64N(%d): %d of 20000 draws in the upper half", n, upper)
		}
	}
	counts := make([]int, 10)
	for range 200000 {
		counts[rng.Int64N(10)]++
	}
	if x := chiSquare(counts, 200000); x > 45.0 {
		t.Errorf("RuntimeRng.Int64N(10): χ² = %.2f > 45.0, counts %v", x, counts)
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
					seq := StartSequence(p.policy)
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
		"fulljitter":   func() Policy { return Must(NewFullJitter(cfg, NewSeededRng(1))) },
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
			seq := StartSequence(build())
			for attempt := 1; attempt <= 13; attempt++ {
				err := errTransient
				if name == "retryafter" && attempt%3 == 0 {
					err = hinted
				}
				d, stop := seq.NextDelay(attempt, err)
				ok := stop == nil
				fmt.Fprintf(&b, "%d %v %d\n", attempt, ok, d)
			}
			path := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -run TestGolden -update to create it)", err)
			}
			if got := b.String(); got != string(want) {
				t.Errorf("sequence changed:\n got:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

func TestParamErrorMessages(t *testing.T) {
	type opaque struct{ n int }
	for _, tt := range []struct {
		err  *ParamError
		want string
	}{
		{&ParamError{Param: "Base", Value: -time.Second, Reason: "must be positive"}, "backoff: invalid Base -1s: must be positive"},
		{&ParamError{Param: "MaxAttempts", Value: 0, Reason: "r"}, "backoff: invalid MaxAttempts 0: r"},
		{&ParamError{Param: "Ratio", Value: 1.5, Reason: "r"}, "backoff: invalid Ratio 1.5: r"},
		{&ParamError{Param: "Rng", Value: "LockedRng{}", Reason: "r"}, "backoff: invalid Rng LockedRng{}: r"},
		{&ParamError{Param: "p", Value: nil, Reason: "r"}, "backoff: invalid p nil: r"},
		{&ParamError{Param: "x", Value: opaque{1}, Reason: "r"}, "backoff: invalid x (backoff.opaque): r"},
		{&ParamError{Param: "x", Value: time.UTC, Reason: "r"}, "backoff: invalid x UTC: r"},
	} {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
	if got := (*ParamError)(nil).Error(); got != "backoff: invalid parameter" {
		t.Errorf("nil ParamError: %q", got)
	}
	if (*permanentError)(nil).Unwrap() != nil || (*Error)(nil).Unwrap() != nil {
		t.Error("Unwrap of a nil error must be nil")
	}
	if got := (&permanentError{}).Error(); got != "backoff: permanent error" {
		t.Errorf("empty PermanentError: %q", got)
	}
}

// TestRuntimeRngRejection draws where Lemire's method rejects often (a
// bound near 2⁶³ rejects about 3 draws in 8), through the policies' inlined
// path, and checks the bounds.
func TestRuntimeRngRejection(t *testing.T) {
	c := time.Duration(3 << 61)
	p := Must(NewFullJitter(Config{Base: c, Cap: c, MaxAttempts: Unlimited}, RuntimeRng{}))
	var high int
	for range 1000 {
		d, err := p.NextDelay(1, nil)
		if err != nil || d < 0 || d > c {
			t.Fatalf("NextDelay = %v, %v; want [0, %v]", d, err, c)
		}
		if d > c/2 {
			high++
		}
	}
	if high < 400 || high > 600 {
		t.Errorf("%d of 1000 draws above c/2, want about 500", high)
	}
}

// TestLemireReject drives the rejection step with chosen draws: for bound 3,
// 2⁶⁴ mod 3 = 1 low product must be rejected (lo = 0), and the next draw
// decides.
func TestLemireReject(t *testing.T) {
	draws := []uint64{0, 1 << 63}
	next := func() uint64 { d := draws[0]; draws = draws[1:]; return d }
	// The first product, 0·3, has lo = 0 < 1: rejected; 2⁶³·3 = 1·2⁶⁴ + 2⁶³.
	if got := lemireReject(3, 0, 0, next); got != 1 || len(draws) != 0 {
		t.Errorf("lemireReject = %d with %d draws left, want 1 after drawing both", got, len(draws))
	}
	// lo = 1 is not below the threshold: the first product stands.
	if got := lemireReject(3, 2, 1, func() uint64 { t.Fatal("drew again"); return 0 }); got != 2 {
		t.Errorf("lemireReject kept %d, want 2", got)
	}
}
