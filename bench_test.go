package backoff

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"
)

var benchCfg = Config{Base: 100 * time.Millisecond, Cap: 10 * time.Second, MaxAttempts: Unlimited}

// sink keeps results alive so the compiler cannot drop the work.
var sink time.Duration

func benchPolicies(b *testing.B) []policyUnderTest {
	return policiesFor(b, benchCfg, RuntimeRng{})
}

// BenchmarkNextDelay measures one delay, attempts cycling 1..10, after a
// plain error.
func BenchmarkNextDelay(b *testing.B) { benchNextDelay(b, errTransient) }

// BenchmarkNextDelayNilError is BenchmarkNextDelay for a failure without an
// error value, which skips the classification: the cost of the delay alone.
func BenchmarkNextDelayNilError(b *testing.B) { benchNextDelay(b, nil) }

func benchNextDelay(b *testing.B, err error) {
	for _, p := range benchPolicies(b) {
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			attempt := 0
			for b.Loop() {
				attempt = attempt%10 + 1
				d, _ := p.policy.NextDelay(attempt, err)
				sink += d
			}
		})
	}
}

// BenchmarkNextDelaySequence measures one delay through a per-sequence
// policy, as Do drives it.
func BenchmarkNextDelaySequence(b *testing.B) {
	seq := startSequence(Must(NewDecorrelated(benchCfg, RuntimeRng{})))
	b.ReportAllocs()
	attempt := 0
	for b.Loop() {
		attempt = attempt%10 + 1
		d, _ := seq.NextDelay(attempt, errTransient)
		sink += d
	}
}

// BenchmarkNextDelayParallel shares one policy between all goroutines; the
// time per delay should not exceed BenchmarkNextDelay's.
func BenchmarkNextDelayParallel(b *testing.B) {
	for _, p := range benchPolicies(b) {
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				var local time.Duration
				attempt := 0
				for pb.Next() {
					attempt = attempt%10 + 1
					d, _ := p.policy.NextDelay(attempt, errTransient)
					local += d
				}
				_ = local
			})
		})
	}
}

// BenchmarkDoSuccess is Do when fn succeeds at once.
func BenchmarkDoSuccess(b *testing.B) {
	ctx := context.Background()
	p := Must(NewFullJitter(benchCfg, RuntimeRng{}))
	fn := func(context.Context) error { return nil }
	b.ReportAllocs()
	for b.Loop() {
		if err := Do(ctx, fn, p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDoFiveZeroDelayRetries is Do when fn fails five times with a
// policy that retries at once.
func BenchmarkDoFiveZeroDelayRetries(b *testing.B) {
	ctx := context.Background()
	zero := PolicyFunc(func(int, error) (time.Duration, error) { return 0, nil })
	f := &flaky{n: 5, err: errTransient}
	b.ReportAllocs()
	for b.Loop() {
		f.calls = 0
		if err := Do(ctx, f.call, zero); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDoExhausted is Do giving up after five zero-delay retries, which
// builds the returned *Error.
func BenchmarkDoExhausted(b *testing.B) {
	ctx := context.Background()
	p := PolicyFunc(func(attempt int, _ error) (time.Duration, error) { return 0, stopAt(attempt, 6) })
	fn := func(context.Context) error { return errTransient }
	b.ReportAllocs()
	for b.Loop() {
		if err := Do(ctx, fn, p); err == nil {
			b.Fatal("want an error")
		}
	}
}

// BenchmarkRetryable classifies a plain error, the cost every policy pays
// before deciding.
func BenchmarkRetryable(b *testing.B) {
	for b.Loop() {
		if !Retryable(errTransient) {
			b.Fatal("plain error judged permanent")
		}
	}
}

// BenchmarkRuntimeUint64 is one raw draw from the runtime generator, the
// floor under every jittered delay drawn with RuntimeRng on this machine:
// "direct" as the policies draw (runtimeRand), "rand.Uint64" as
// math/rand/v2's top-level function reaches it, through an interface call.
func BenchmarkRuntimeUint64(b *testing.B) {
	var s uint64
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			s += runtimeRand()
		}
	})
	b.Run("rand.Uint64", func(b *testing.B) {
		for b.Loop() {
			s += rand.Uint64()
		}
	})
	sink += time.Duration(s & 1)
}

// BenchmarkDoFiveOneNanosecondRetries is Do when fn fails five times with a
// policy that always waits 1ns, so every retry goes through the timer.
func BenchmarkDoFiveOneNanosecondRetries(b *testing.B) {
	ctx := context.Background()
	oneNanosecond := PolicyFunc(func(int, error) (time.Duration, error) { return 1, nil })
	f := &flaky{n: 5, err: errTransient}
	b.ReportAllocs()
	for b.Loop() {
		f.calls = 0
		if err := Do(ctx, f.call, oneNanosecond); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDoSuccessRetrier is BenchmarkDoSuccess through a Retrier: with
// hooks only, with a budget only (one deposit per call), and with both.
func BenchmarkDoSuccessRetrier(b *testing.B) {
	ctx := context.Background()
	p := Must(NewFullJitter(benchCfg, RuntimeRng{}))
	budget, err := NewBudget(BudgetConfig{})
	if err != nil {
		b.Fatal(err)
	}
	var retries, done int
	onRetry := func(context.Context, int, error, time.Duration) { retries++ }
	onDone := func(context.Context, int, error) { done++ }
	fn := func(context.Context) error { return nil }
	for _, bc := range []struct {
		name string
		r    *Retrier
	}{
		{"hooks", &Retrier{Policy: p, OnRetry: onRetry, OnDone: onDone}},
		{"budget", &Retrier{Policy: p, Budget: budget}},
		{"both", &Retrier{Policy: p, Budget: budget, OnRetry: onRetry, OnDone: onDone}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := bc.r.Do(ctx, fn); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkBudgetParallel shares one budget between all goroutines (both
// cores here): "deposit" records a call; "withdraw" records a call and takes
// the retry it earned (Ratio 1), one CAS on the shared word each.
func BenchmarkBudgetParallel(b *testing.B) {
	budget, err := NewBudget(BudgetConfig{Ratio: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("deposit", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				budget.Deposit()
			}
		})
	})
	b.Run("withdraw", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				budget.Deposit()
				if budget.Withdraw() != nil {
					b.Error("a deposited retry was refused")
					return
				}
			}
		})
	})
}

// BenchmarkDoNested is five nested Do calls: "success" when the innermost
// call succeeds at once, "standBack" when the dependency always fails, the
// innermost loop retries twice at once and the four outer ones stand back.
func BenchmarkDoNested(b *testing.B) {
	ctx := context.Background()
	p := zeroDelays(3)
	for _, bc := range []struct {
		name string
		err  error
	}{{"success", nil}, {"standBack", errTransient}} {
		b.Run(bc.name, func(b *testing.B) {
			var layer func(ctx context.Context, d int) error
			layer = func(ctx context.Context, d int) error {
				if d == 5 {
					return bc.err
				}
				return Do(ctx, func(ctx context.Context) error { return layer(ctx, d+1) }, p)
			}
			b.ReportAllocs()
			for b.Loop() {
				layer(ctx, 0)
			}
		})
	}
}
