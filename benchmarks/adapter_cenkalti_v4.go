// Adapter for github.com/cenkalti/backoff/v4 v4.3.0.
//
// Mapping: as for v5 (see adapter_cenkalti_v5.go): RandomizationFactor 1,
// Multiplier 2, InitialInterval base/2, MaxInterval cap/2 gives a delay
// uniform in [0, min(cap, base*2^(n-1))], exactly full jitter.
//
// Inexact:
//   - Stateful, like v5: "attempt n" is the n-th NextBackOff since Reset;
//     huge attempt numbers are reached by stepping to the fixed point.
//   - v4 also tracks elapsed time: MaxElapsedTime is set to 0 (no limit, the
//     common policy has none), but NextBackOff still reads the clock on
//     every call; that cost is the library's.
//   - The attempt limit is WithMaxRetries(b, maxAttempts-1) (it counts
//     retries, not calls). The loop only watches a context if the BackOff is
//     wrapped with WithContext; the retrier wraps per call only when the
//     context can be cancelled (ctx.Done() != nil), so context.Background()
//     costs nothing, as for a user who has no context.
//   - Not safe for concurrent use (documented); shared anyway for the probes.
//   - NoCap: MaxInterval = math.MaxInt64 (no such setting exists).
//   - Smallest delays: base=cap=1ns maps to intervals of 0, i.e. 0 delays.
package benchmarks

import (
	"context"
	"time"

	backoff "github.com/cenkalti/backoff/v4"
)

type cenkaltiV4 struct{}

func init() { register(cenkaltiV4{}) }

func (cenkaltiV4) Name() string { return "cenkalti-v4" }

func newCenkV4(base, cap time.Duration) *backoff.ExponentialBackOff {
	return backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(base/2),
		backoff.WithRandomizationFactor(1),
		backoff.WithMultiplier(2),
		backoff.WithMaxInterval(cenkMaxInterval(cap)),
		backoff.WithMaxElapsedTime(0),
	)
}

type cenkV4Seq struct {
	b *backoff.ExponentialBackOff
	n int
}

func (s *cenkV4Seq) Delay(attempt int) time.Duration {
	if attempt <= s.n {
		s.b.Reset()
		s.n = 0
	}
	for s.n < attempt-1 {
		before := cenkState(s.b)
		s.b.NextBackOff()
		s.n++
		if cenkState(s.b) == before {
			s.n = attempt - 1
		}
	}
	s.n++
	return s.b.NextBackOff()
}

func (cenkaltiV4) NewSeq(base, cap time.Duration) Seq {
	return &cenkV4Seq{b: newCenkV4(base, cap)}
}

func (cenkaltiV4) NewRetrier(op *Op, base, cap time.Duration, maxAttempts int) func(context.Context) error {
	b := backoff.WithMaxRetries(newCenkV4(base, cap), uint64(maxAttempts-1))
	f := backoff.Operation(op.Call)
	return func(ctx context.Context) error {
		if ctx.Done() != nil {
			return backoff.Retry(f, backoff.WithContext(b, ctx))
		}
		return backoff.Retry(f, b)
	}
}

func (cenkaltiV4) NewShared(base, cap time.Duration) func(int) time.Duration {
	b := newCenkV4(base, cap)
	return func(int) time.Duration { return b.NextBackOff() }
}

func (cenkaltiV4) NewSharedRetrier(base, cap time.Duration, maxAttempts int) func(context.Context, *Op) error {
	b := backoff.WithMaxRetries(newCenkV4(base, cap), uint64(maxAttempts-1))
	return func(ctx context.Context, op *Op) error {
		return backoff.Retry(op.Call, b)
	}
}
