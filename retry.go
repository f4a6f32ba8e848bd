package backoff

import "context"

// Do calls fn until it succeeds, retrying failures as the policy p directs,
// and returns nil on success or an *[Error] that says why it stopped.
//
// The loop, in order:
//
//   - If ctx is already done, Do returns at once without calling fn.
//   - Do calls fn(ctx). A nil error ends the loop with success.
//   - If ctx is done by then, Do stops with ctx.Err() as the reason.
//   - If the error is not [Retryable], Do stops with [ErrPermanent].
//   - If it comes from an inner loop that retried (a Do in fn), Do stops
//     with [ErrRetriedBelow]: nested loops retry at one layer only.
//   - Do asks the policy for the delay after this attempt (1 after the
//     first call); a non-nil error from it is the reason Do stops with.
//   - If the delay would end at or after ctx's deadline, Do stops at once
//     with [ErrDeadline] rather than sleep into certain failure.
//   - Do waits for the delay, or until ctx is done, and calls fn again.
//
// A context error from fn while ctx is live (fn's own timeout) is retried. A
// [Sequencer] gets one fresh sequence per call; a negative delay counts as
// zero. Do starts no goroutine, uses at most one timer, does not allocate
// when fn succeeds at once, and lets a panic in fn through. A nil fn or p (a
// typed nil once fn has failed) panics with a *[ParamError]. For a budget,
// an elapsed-time limit or hooks, use a [Retrier].
func Do(ctx context.Context, fn func(context.Context) error, p Policy) error {
	r := Retrier{Policy: p}
	return r.Do(ctx, fn)
}

// DoValue is [Do] for a function that returns a value with its error. On
// success it returns fn's value; otherwise it returns the zero value of T and
// an *[Error].
func DoValue[T any](ctx context.Context, fn func(context.Context) (T, error), p Policy) (T, error) {
	r := Retrier{Policy: p}
	return DoValueWith(ctx, fn, &r)
}
