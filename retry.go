package backoff

import (
	"context"
	"time"
)

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

// wait blocks for d or until ctx is done, and returns ctx.Err() in the latter
// case. It creates *timer on first need and reuses it afterwards.
func wait(ctx context.Context, timer **time.Timer, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	if *timer == nil {
		*timer = time.NewTimer(d)
	} else {
		(*timer).Reset(d)
	}
	select {
	case <-(*timer).C:
		return ctx.Err() // both may be ready: never call fn with a done context
	case <-ctx.Done():
		(*timer).Stop()
		return ctx.Err()
	}
}

// contextStop is the error for a context that ended, keeping the cause given
// to context.WithCancelCause and its relatives when there is one.
func contextStop(ctx context.Context, last error, attempts int) *Error {
	e := &Error{Reason: ctx.Err(), Err: last, Attempts: attempts}
	if cause := context.Cause(ctx); cause != e.Reason {
		e.cause = cause
	}
	return e
}
