// Adapter for github.com/sethvargo/go-retry v0.5.0.
//
// Mapping: WithFullJitter(WithCappedDuration(cap, NewExponential(base))).
// NewExponential yields base<<k on its k-th call (k from 0); the cap is
// applied to that ceiling, then WithFullJitter draws rand.Int64N(ceiling),
// i.e. uniform in [0, ceiling) - full jitter (the ceiling itself is never
// returned, a negligible difference). The loop is retry.Do with
// WithMaxRetries(maxAttempts-1, ...) (it counts retries, not calls).
//
// Inexact:
//   - Stateful and without Reset: the exponential object keeps an atomic
//     attempt counter, and WithMaxRetries a mutex-guarded one, so every retry
//     sequence needs a freshly built chain (4 closures/objects). Seq rebuilds
//     the chain when a sequence restarts; the retrier rebuilds it per call.
//     To reach a huge attempt number Seq sets the unexported counter directly
//     (unsafe) to the value the library's own Next calls would leave there:
//     Next stops incrementing once base<<counter overflows to <= 0 (from then
//     on it returns MaxInt64), so the counter is clamped at that first
//     overflow (37 for 100ms) and never set past it.
//   - The operation must mark errors as retryable with retry.RetryableError;
//     the adapter wraps ErrFail once up front (the cheapest legal form).
//   - Shared: the counters are atomic / mutex-guarded, so sharing is race
//     free, but all goroutines then advance ONE attempt counter (and share
//     one retry budget), which is not per-sequence backoff.
//   - NoCap: the chain without WithCappedDuration.
//   - Smallest delays: base must be > 0 (it panics otherwise): base=cap=1ns.
package benchmarks

import (
	"context"
	"reflect"
	"sync/atomic"
	"time"
	"unsafe"

	retry "github.com/sethvargo/go-retry"
)

type sethvargo struct{}

func init() { register(sethvargo{}) }

func (sethvargo) Name() string { return "sethvargo" }

// newSethChain returns the full-jitter chain and the inner exponential
// object (whose attempt counter Seq may set).
func newSethChain(base, cap time.Duration) (retry.Backoff, retry.Backoff) {
	exp := retry.NewExponential(base)
	var b retry.Backoff = exp
	if cap != NoCap {
		b = retry.WithCappedDuration(cap, b)
	}
	return retry.WithFullJitter(b), exp
}

// sethSetAttempt sets the unexported attempt counter of the object returned
// by retry.NewExponential to k, or to the value where the library's Next
// stops incrementing it (the first k with base<<k <= 0), whichever is lower:
// the counter can never pass that point through Next.
func sethSetAttempt(exp retry.Backoff, base time.Duration, k uint64) {
	for stuck := uint64(0); stuck < k; stuck++ {
		if base<<stuck <= 0 {
			k = stuck
			break
		}
	}
	f := reflect.ValueOf(exp).Elem().FieldByName("attempt")
	(*atomic.Uint64)(unsafe.Pointer(f.UnsafeAddr())).Store(k)
}

type sethSeq struct {
	base, cap time.Duration
	b, exp    retry.Backoff
	n         int
}

func (s *sethSeq) Delay(attempt int) time.Duration {
	if s.b == nil || attempt <= s.n {
		s.b, s.exp = newSethChain(s.base, s.cap)
		s.n = 0
	}
	if attempt-1 > s.n {
		sethSetAttempt(s.exp, s.base, uint64(attempt-1))
		s.n = attempt - 1
	}
	s.n++
	d, _ := s.b.Next()
	return d
}

func (sethvargo) NewSeq(base, cap time.Duration) Seq {
	return &sethSeq{base: base, cap: cap}
}

var errSethRetryable = retry.RetryableError(ErrFail)

func (sethvargo) NewRetrier(op *Op, base, cap time.Duration, maxAttempts int) func(context.Context) error {
	f := func(context.Context) error {
		if err := op.Call(); err != nil {
			return errSethRetryable
		}
		return nil
	}
	return func(ctx context.Context) error {
		b, _ := newSethChain(base, cap)
		return retry.Do(ctx, retry.WithMaxRetries(uint64(maxAttempts-1), b), f)
	}
}

func (sethvargo) NewShared(base, cap time.Duration) func(int) time.Duration {
	b, _ := newSethChain(base, cap)
	return func(int) time.Duration { d, _ := b.Next(); return d }
}

func (sethvargo) NewSharedRetrier(base, cap time.Duration, maxAttempts int) func(context.Context, *Op) error {
	b, _ := newSethChain(base, cap)
	b = retry.WithMaxRetries(uint64(maxAttempts-1), b)
	return func(ctx context.Context, op *Op) error {
		return retry.Do(ctx, b, func(context.Context) error {
			if err := op.Call(); err != nil {
				return errSethRetryable
			}
			return nil
		})
	}
}
