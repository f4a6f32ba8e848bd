// Adapter for github.com/cenkalti/backoff/v5 v5.0.3.
//
// Mapping: cenkalti has no full-jitter mode. Its ExponentialBackOff returns
// currentInterval * U[1-r, 1+r] and then multiplies currentInterval by
// Multiplier, clamping it at MaxInterval. With RandomizationFactor r = 1,
// Multiplier = 2, InitialInterval = base/2 and MaxInterval = cap/2 the delay
// is uniform in [0, 2*currentInterval] = [0, min(cap, base*2^(n-1))], which is
// exactly full jitter (getRandomValueFromInterval adds 1ns to the width and
// truncates, so the upper bound is reached inclusively). Exact for even base
// and cap (100ms/10s are).
//
// Inexact:
//   - The policy is stateful: NextBackOff advances an internal interval, so
//     "the delay at attempt n" means "the n-th call since Reset". Seq resets
//     on a new sequence and steps forward; skipping to huge attempt numbers
//     is done by stepping until the internal interval reaches its fixed
//     point (read with reflect), after which every later call is identical.
//   - Attempts: WithMaxTries(n) counts calls of the operation (same as ours).
//     WithMaxElapsedTime(0) disables the default 15-minute elapsed limit,
//     which the common policy does not have.
//   - The object is documented as not safe for concurrent use; NewShared and
//     NewSharedRetrier share it anyway, because that is what is probed.
//   - "No cap" (NoCap): the library has no such setting; we use
//     MaxInterval = math.MaxInt64, what a user wanting "no cap" would write.
//     A cap of math.MaxInt64 through the mapping is MaxInterval = MaxInt64/2.
//   - Smallest delays: base=cap=1ns maps to intervals of 0, i.e. 0 delays.
package benchmarks

import (
	"context"
	"math"
	"reflect"
	"time"

	backoff "github.com/cenkalti/backoff/v5"
)

type cenkaltiV5 struct{}

func init() { register(cenkaltiV5{}) }

func (cenkaltiV5) Name() string { return "cenkalti-v5" }

func cenkMaxInterval(cap time.Duration) time.Duration {
	if cap == NoCap {
		return math.MaxInt64
	}
	return cap / 2
}

func newCenkV5(base, cap time.Duration) *backoff.ExponentialBackOff {
	b := &backoff.ExponentialBackOff{
		InitialInterval:     base / 2,
		RandomizationFactor: 1,
		Multiplier:          2,
		MaxInterval:         cenkMaxInterval(cap),
	}
	b.Reset()
	return b
}

// cenkState reads the unexported currentInterval field (read-only reflect).
func cenkState(b any) int64 {
	return reflect.ValueOf(b).Elem().FieldByName("currentInterval").Int()
}

type cenkV5Seq struct {
	b *backoff.ExponentialBackOff
	n int // calls of NextBackOff since Reset
}

func (s *cenkV5Seq) Delay(attempt int) time.Duration {
	if attempt <= s.n {
		s.b.Reset()
		s.n = 0
	}
	for s.n < attempt-1 {
		before := cenkState(s.b)
		s.b.NextBackOff()
		s.n++
		if cenkState(s.b) == before {
			s.n = attempt - 1 // fixed point: all later calls are alike
		}
	}
	s.n++
	return s.b.NextBackOff()
}

func (cenkaltiV5) NewSeq(base, cap time.Duration) Seq {
	return &cenkV5Seq{b: newCenkV5(base, cap)}
}

func (cenkaltiV5) NewRetrier(op *Op, base, cap time.Duration, maxAttempts int) func(context.Context) error {
	b := newCenkV5(base, cap)
	f := func() (struct{}, error) { return struct{}{}, op.Call() }
	opts := []backoff.RetryOption{
		backoff.WithBackOff(b),
		backoff.WithMaxTries(uint(maxAttempts)),
		backoff.WithMaxElapsedTime(0),
	}
	return func(ctx context.Context) error {
		_, err := backoff.Retry(ctx, f, opts...)
		return err
	}
}

func (cenkaltiV5) NewShared(base, cap time.Duration) func(int) time.Duration {
	b := newCenkV5(base, cap)
	return func(int) time.Duration { return b.NextBackOff() }
}

func (cenkaltiV5) NewSharedRetrier(base, cap time.Duration, maxAttempts int) func(context.Context, *Op) error {
	b := newCenkV5(base, cap)
	return func(ctx context.Context, op *Op) error {
		_, err := backoff.Retry(ctx, func() (struct{}, error) { return struct{}{}, op.Call() },
			backoff.WithBackOff(b), backoff.WithMaxTries(uint(maxAttempts)), backoff.WithMaxElapsedTime(0))
		return err
	}
}
