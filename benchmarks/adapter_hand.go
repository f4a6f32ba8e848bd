// Adapter "hand": no library, the loop a user writes instead with
// math/rand/v2 alone, the floor a retry library's delay is held to.
//
// Mapping: the ceiling doubles from base and stops at cap (checking before
// each doubling that it cannot pass cap, so it never overflows), and the
// delay is rand.N(ceiling+1): uniform in [0, min(cap, base*2^(n-1))], both
// ends included, exact (math/rand/v2 rejects as Lemire's method requires).
// The loop calls the operation, returns on success or after maxAttempts
// calls, and otherwise waits for a time.Timer or the context.
//
// Inexact:
//   - Nothing in the policy. The error is not classified (every error is
//     retried) and the Timer is made anew for every wait, as the plain
//     version of such a loop does.
//   - NoCap: cap = math.MaxInt64, where ceiling+1 overflows and rand.N
//     panics: the probes show what the plain version does there.
//   - The functions are stateless and math/rand/v2's top-level functions
//     are safe for concurrent use, so sharing is safe.
package benchmarks

import (
	"context"
	"math"
	"math/rand/v2"
	"time"
)

type hand struct{}

func init() { register(hand{}) }

func (hand) Name() string { return "hand" }

// handDelay is the hand-written full-jitter delay after attempt.
func handDelay(base, cap time.Duration, attempt int) time.Duration {
	c := base
	for i := 1; i < attempt && c < cap; i++ {
		if c > cap/2 {
			c = cap
			break
		}
		c *= 2
	}
	return rand.N(c + 1)
}

func handCap(cap time.Duration) time.Duration {
	if cap == NoCap {
		return math.MaxInt64
	}
	return cap
}

type handSeq struct{ base, cap time.Duration }

func (s handSeq) Delay(attempt int) time.Duration { return handDelay(s.base, s.cap, attempt) }

func (hand) NewSeq(base, cap time.Duration) Seq { return handSeq{base, handCap(cap)} }

// handRetry is the hand-written loop.
func handRetry(ctx context.Context, op func(context.Context) error, base, cap time.Duration, maxAttempts int) error {
	for attempt := 1; ; attempt++ {
		err := op(ctx)
		if err == nil || attempt >= maxAttempts {
			return err
		}
		t := time.NewTimer(handDelay(base, cap, attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

func (hand) NewRetrier(op *Op, base, cap time.Duration, maxAttempts int) func(context.Context) error {
	cap = handCap(cap)
	f := op.CallCtx
	return func(ctx context.Context) error { return handRetry(ctx, f, base, cap, maxAttempts) }
}

func (hand) NewShared(base, cap time.Duration) func(int) time.Duration {
	cap = handCap(cap)
	return func(attempt int) time.Duration { return handDelay(base, cap, attempt) }
}

func (hand) NewSharedRetrier(base, cap time.Duration, maxAttempts int) func(context.Context, *Op) error {
	cap = handCap(cap)
	return func(ctx context.Context, op *Op) error { return handRetry(ctx, op.CallCtx, base, cap, maxAttempts) }
}
