package backoff

// The helpers shared by the package's tests; each source file's own tests
// are in its _test.go file.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

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

// chiSquare returns the statistic for counts against a uniform expectation.
func chiSquare(counts []int, total int) float64 {
	expected := float64(total) / float64(len(counts))
	var x float64
	for _, c := range counts {
		x += (float64(c) - expected) * (float64(c) - expected) / expected
	}
	return x
}

type retryableErr bool

func (r retryableErr) Error() string   { return fmt.Sprintf("retryable=%v", bool(r)) }
func (r retryableErr) Retryable() bool { return bool(r) }

// stopAt is the attempt budget of a test policy: nil below max, ErrExhausted
// from max on.
func stopAt(attempt, max int) error {
	if attempt >= max {
		return ErrExhausted
	}
	return nil
}

// flaky is the tests' one "fail n times, then succeed" function: call
// fails with err for its first n calls and succeeds after; a negative n
// never succeeds. Setting calls to 0 starts it over. It does not allocate.
type flaky struct {
	n, calls int
	err      error
}

func (f *flaky) call(context.Context) error {
	if f.calls++; f.n < 0 || f.calls <= f.n {
		return f.err
	}
	return nil
}

// failing is a flaky function that also records the (fake) time of every
// call, for tests of the delays between them.
func failing(n int, err error) (fn func(context.Context) error, calls *[]time.Time) {
	calls = new([]time.Time)
	f := &flaky{n: n, err: err}
	fn = func(ctx context.Context) error {
		*calls = append(*calls, time.Now())
		return f.call(ctx)
	}
	return fn, calls
}

func expPolicy(maxAttempts int) *Exponential {
	return Must(NewExponential(Config{Base: time.Second, Cap: 8 * time.Second, MaxAttempts: maxAttempts}))
}

// withDeadline returns t's context, with a deadline d from now when d > 0.
func withDeadline(t *testing.T, d time.Duration) context.Context {
	if d <= 0 {
		return t.Context()
	}
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}
