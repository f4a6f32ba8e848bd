// Adapter for github.com/backoffgo/backoff, this repository (via replace).
//
// Mapping: NewFullJitter(Config{Base: base, Cap: cap, MaxAttempts: ...},
// RuntimeRng{}): a delay uniform in [0, min(Cap, Base*2^(n-1))], both ends
// included - the common policy itself. RuntimeRng is math/rand/v2's
// runtime generator, the same source the other libraries use (their global
// rand), so the comparison is like for like. Seq calls NextDelay(attempt,
// ErrFail) with MaxAttempts Unlimited; the loop is backoff.Do with
// MaxAttempts = maxAttempts (it counts calls, the first included).
//
// Inexact: nothing in the policy. Notes:
//   - NextDelay also classifies the error (Retryable) on every call, work the
//     other libraries' delay functions do not do; the benchmarks pass a plain
//     error, as a caller would.
//   - NoCap: there is no "no cap" setting; Cap = math.MaxInt64.
//   - Smallest delays: Base must be > 0: base=cap=1ns.
//   - The policy is immutable and documented safe for concurrent use with
//     RuntimeRng, so NewShared/NewSharedRetrier share one *FullJitter.
package benchmarks

import (
	"context"
	"math"
	"time"

	backoff "github.com/backoffgo/backoff"
)

type backoffgo struct{}

func init() { register(backoffgo{}) }

func (backoffgo) Name() string { return "backoffgo" }

func newOurs(base, cap time.Duration, maxAttempts int) *backoff.FullJitter {
	if cap == NoCap {
		cap = math.MaxInt64
	}
	return backoff.Must(backoff.NewFullJitter(
		backoff.Config{Base: base, Cap: cap, MaxAttempts: maxAttempts}, backoff.RuntimeRng{}))
}

type oursSeq struct{ p *backoff.FullJitter }

func (s oursSeq) Delay(attempt int) time.Duration {
	d, _ := s.p.NextDelay(attempt, ErrFail)
	return d
}

func (backoffgo) NewSeq(base, cap time.Duration) Seq {
	return oursSeq{newOurs(base, cap, backoff.Unlimited)}
}

func (backoffgo) NewRetrier(op *Op, base, cap time.Duration, maxAttempts int) func(context.Context) error {
	p := newOurs(base, cap, maxAttempts)
	f := op.CallCtx
	return func(ctx context.Context) error { return backoff.Do(ctx, f, p) }
}

func (backoffgo) NewShared(base, cap time.Duration) func(int) time.Duration {
	p := newOurs(base, cap, backoff.Unlimited)
	return func(attempt int) time.Duration { d, _ := p.NextDelay(attempt, ErrFail); return d }
}

func (backoffgo) NewSharedRetrier(base, cap time.Duration, maxAttempts int) func(context.Context, *Op) error {
	p := newOurs(base, cap, maxAttempts)
	return func(ctx context.Context, op *Op) error { return backoff.Do(ctx, op.CallCtx, p) }
}
