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
//   - If the error is not [Retryable], Do stops with [ErrPermanent], also
//     when the policy would have ignored the error.
//   - Do asks the policy for the next delay, passing the number of attempts
//     made so far (1 after the first call). If the policy returns an error,
//     Do stops with exactly that error as the reason.
//   - If ctx has a deadline and the delay would end at or after it, Do
//     stops at once with [ErrDeadline] rather than sleep into certain
//     failure.
//   - Do waits for the delay, or until ctx is done, and calls fn again.
//
// A context error returned by fn while ctx is still live (a per-attempt
// timeout fn set up itself) is retried like any other error.
//
// A [Sequencer] policy gets one fresh sequence per Do call, created after the
// first failure. A negative delay from a user's policy is treated as zero; a
// zero delay retries at once without a timer. Do starts no goroutines, uses at
// most one timer per call and reuses it, and does not allocate when fn
// succeeds at once. A panic in fn propagates unchanged. For a budget, a limit
// on the elapsed time or hooks, use a [Retrier].
//
// A nil fn or p, or a p that is a nil pointer or func, is a programming
// error: Do panics with a *[ParamError], as net/http does for a nil handler.
// A plain nil is found before fn is called, a typed nil when fn first fails.
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
