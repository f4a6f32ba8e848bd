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
// succeeds at once. A panic in fn propagates unchanged. When p is a *[Loop],
// Do also applies its budget and calls its hooks, as Loop describes.
//
// A nil fn or p, or a p that is a nil pointer or func, is a programming
// error: Do panics with a *[ParamError], as net/http does for a nil handler.
// A plain nil is found before fn is called, a typed nil when fn first fails.
func Do(ctx context.Context, fn func(context.Context) error, p Policy) error {
	l, err := begin(ctx, fn == nil, p)
	if err != nil {
		return err
	}
	err = fn(ctx)
	if err == nil {
		if l != nil {
			l.done(ctx, nil, 1)
		}
		return nil
	}
	return retry(ctx, fn, p, l, err)
}

// DoValue is [Do] for a function that returns a value with its error. On
// success it returns fn's value; otherwise it returns the zero value of T and
// an *[Error].
func DoValue[T any](ctx context.Context, fn func(context.Context) (T, error), p Policy) (T, error) {
	var zero T
	l, err := begin(ctx, fn == nil, p)
	if err != nil {
		return zero, err
	}
	v, err := fn(ctx)
	if err == nil {
		if l != nil {
			l.done(ctx, nil, 1)
		}
		return v, nil
	}
	err = retry(ctx, func(ctx context.Context) error {
		var err error
		v, err = fn(ctx)
		return err
	}, p, l, err)
	if err != nil {
		return zero, err
	}
	return v, nil
}

var (
	errNilFn     = &ParamError{Param: "fn", Value: nil, Reason: "must not be nil"}
	errNilPolicy = &ParamError{Param: "p", Value: nil, Reason: "must not be nil"}
)

// begin is the start of Do and DoValue: it checks their arguments, starts
// a Loop's budget, and returns p as a *Loop (nil when it is not one) and the
// error for a context done before the first call.
func begin(ctx context.Context, nilFn bool, p Policy) (*Loop, error) {
	if nilFn {
		panic(errNilFn)
	}
	if p == nil {
		panic(errNilPolicy)
	}
	l, _ := p.(*Loop)
	if l != nil {
		l.start()
	}
	if ctx.Err() != nil {
		return l, l.done(ctx, contextStop(ctx, nil, 0), 0)
	}
	return l, nil
}

// retry runs the loop after fn's first call failed with err; it returns nil
// once fn succeeds. Keeping it apart leaves the success path of Do and
// DoValue free of loop state. l is p when p is a *Loop, and nil otherwise.
func retry(ctx context.Context, fn func(context.Context) error, p Policy, l *Loop, err error) error {
	if l != nil {
		p = l.Policy
	}
	if isNil(p) {
		panic(&ParamError{Param: "p", Value: p, Reason: "must not be a nil pointer or func"})
	}
	seq := StartSequence(p)
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for attempt := 1; ; attempt = saturatingInc(attempt) {
		d, stop := next(ctx, seq, l, attempt, err)
		if stop != nil {
			return l.done(ctx, stop, attempt)
		}
		if wait(ctx, &timer, d) != nil {
			return l.done(ctx, contextStop(ctx, err, attempt), attempt)
		}
		if err = fn(ctx); err == nil {
			if l != nil {
				l.done(ctx, nil, saturatingInc(attempt))
			}
			return nil
		}
	}
}

// next decides what follows the failure of attempt with err, by the checks
// of Do's documentation in order, then the Loop's budget and OnRetry hook:
// the delay before the next attempt, or the *Error that stops the loop.
func next(ctx context.Context, seq Policy, l *Loop, attempt int, err error) (time.Duration, error) {
	if ctx.Err() != nil {
		return 0, contextStop(ctx, err, attempt)
	}
	if !Retryable(err) {
		return 0, &Error{Reason: ErrPermanent, Err: err, Attempts: attempt}
	}
	d, reason := seq.NextDelay(attempt, err)
	if reason == nil {
		d = max(d, 0)
		if deadline, has := ctx.Deadline(); has && d >= time.Until(deadline) {
			reason = ErrDeadline
		} else if l != nil {
			reason = l.retry(ctx, attempt, err, d)
		}
	}
	if reason != nil {
		return 0, &Error{Reason: reason, Err: err, Attempts: attempt}
	}
	return d, nil
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
