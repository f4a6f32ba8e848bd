// Adapter for github.com/avast/retry-go/v4 v4.7.0.
//
// Mapping: DelayType(retry.FullJitterBackoffDelay) with MaxDelay(cap) and
// Delay(base/2). FullJitterBackoffDelay draws rand.Int63n(min(cap,
// delay*2^n)), uniform in [0, ceiling), and the loop calls it with n = 1
// before the first retry (n counts retries from 1), so the ceiling before
// retry n is delay*2^n; Delay(base/2) makes that base*2^(n-1). Attempts(n)
// counts calls of the operation, like ours.
//
// Inexact:
//   - Delay(base/2) is exact for even bases only (100ms is).
//   - The ceiling is computed in float64 (math.Pow) and converted to int64,
//     so it is not exact above 2^53 ns (~104 days).
//   - A Config cannot be built outside the package except by applying
//     Options to a zero Config, which is what Seq does; it then calls the
//     exported FullJitterBackoffDelay directly (the loop's extra MaxDelay
//     clamp is a no-op here).
//   - The loop (retry.Do) builds a fresh Config per call from the options
//     (hoisted into one slice at construction; retry.Context(ctx) is added
//     only when ctx can be cancelled); the default Attempts(10),
//     LastErrorOnly(false) etc. are kept except as stated.
//   - NoCap: MaxDelay(0), the library default, which means "no cap".
//   - Smallest delays: base=cap=1ns gives Delay(0): ceilings of 0, 0 delays.
package benchmarks

import (
	"context"
	"time"

	retry "github.com/avast/retry-go/v4"
)

type avast struct{}

func init() { register(avast{}) }

func (avast) Name() string { return "avast" }

func avastOpts(base, cap time.Duration) []retry.Option {
	maxDelay := cap
	if cap == NoCap {
		maxDelay = 0
	}
	return []retry.Option{
		retry.Delay(base / 2),
		retry.MaxDelay(maxDelay),
		retry.DelayType(retry.FullJitterBackoffDelay),
	}
}

func newAvastConfig(base, cap time.Duration) *retry.Config {
	c := &retry.Config{}
	for _, o := range avastOpts(base, cap) {
		o(c)
	}
	return c
}

type avastSeq struct{ c *retry.Config }

func (s avastSeq) Delay(attempt int) time.Duration {
	return retry.FullJitterBackoffDelay(uint(attempt), nil, s.c)
}

func (avast) NewSeq(base, cap time.Duration) Seq {
	return avastSeq{newAvastConfig(base, cap)}
}

func (avast) NewRetrier(op *Op, base, cap time.Duration, maxAttempts int) func(context.Context) error {
	opts := append(avastOpts(base, cap), retry.Attempts(uint(maxAttempts)))
	withCtx := append(opts[:len(opts):len(opts)], nil)
	f := retry.RetryableFunc(op.Call)
	return func(ctx context.Context) error {
		if ctx.Done() == nil { // context.Background(): the default context
			return retry.Do(f, opts...)
		}
		withCtx[len(withCtx)-1] = retry.Context(ctx)
		return retry.Do(f, withCtx...)
	}
}

func (avast) NewShared(base, cap time.Duration) func(int) time.Duration {
	c := newAvastConfig(base, cap)
	return func(attempt int) time.Duration { return retry.FullJitterBackoffDelay(uint(attempt), nil, c) }
}

func (avast) NewSharedRetrier(base, cap time.Duration, maxAttempts int) func(context.Context, *Op) error {
	opts := append(avastOpts(base, cap), retry.Attempts(uint(maxAttempts)))
	return func(ctx context.Context, op *Op) error {
		return retry.Do(op.Call, append(opts[:len(opts):len(opts)], retry.Context(ctx))...)
	}
}
