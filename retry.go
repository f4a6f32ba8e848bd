package backoff

import (
	"context"
	"math"
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
//   - Do asks the policy for the next delay, passing the number of attempts
//     made so far (1 after the first call). If the policy declines, Do stops
//     with [ErrExhausted] or [ErrDeclined].
//   - If ctx has a deadline and the delay would end at or after it, Do
//     stops at once with [ErrDeadline] rather than sleep into certain
//     failure.
//   - Do waits for the delay, or until ctx is done, and calls fn again.
//
// A [Sequencer] policy gets one fresh sequence per Do call, created after the
// first failure. A negative delay from a user's policy is treated as zero; a
// zero delay retries at once without a timer. Do starts no goroutines, uses at
// most one timer per call and reuses it, and does not allocate when fn
// succeeds at once. A panic in fn propagates unchanged.
//
// Do returns a *[ParamError] when fn or p is nil. A p that is a typed nil
// (a nil *FullJitter, a nil PolicyFunc) is found at the first failure, and
// Do then returns an *Error whose Reason is that *ParamError.
func Do(ctx context.Context, fn func(context.Context) error, p Policy) error {
	if fn == nil {
		return errNilFn()
	}
	if err := precheck(ctx, p); err != nil {
		return err
	}
	err := fn(ctx)
	if err == nil {
		return nil
	}
	return retry(ctx, fn, p, err)
}

// DoValue is [Do] for a function that returns a value with its error. On
// success it returns fn's value; otherwise it returns the zero value of T and
// an *[Error].
func DoValue[T any](ctx context.Context, fn func(context.Context) (T, error), p Policy) (T, error) {
	var zero T
	if fn == nil {
		return zero, errNilFn()
	}
	if err := precheck(ctx, p); err != nil {
		return zero, err
	}
	v, err := fn(ctx)
	if err == nil {
		return v, nil
	}
	err = retry(ctx, func(ctx context.Context) error {
		var err error
		v, err = fn(ctx)
		return err
	}, p, err)
	if err != nil {
		return zero, err
	}
	return v, nil
}

func errNilFn() error { return &ParamError{Param: "fn", Value: nil, Reason: "must not be nil"} }

// precheck validates p and returns the error for a context already done.
func precheck(ctx context.Context, p Policy) error {
	if p == nil {
		return &ParamError{Param: "p", Value: nil, Reason: "must not be nil"}
	}
	if ctx.Err() != nil {
		return contextStop(ctx, nil, 0)
	}
	return nil
}

// retry runs the loop after fn's first call failed with err; it returns nil
// once fn succeeds. Keeping it apart leaves the success path of Do and
// DoValue free of loop state.
func retry(ctx context.Context, fn func(context.Context) error, p Policy, err error) error {
	if isNil(p) {
		return &Error{Reason: &ParamError{Param: "p", Value: p, Reason: "must not be a nil pointer or func"}, Err: err, Attempts: 1}
	}
	seq := StartSequence(p)
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for attempt := 1; ; attempt = saturatingInc(attempt) {
		if ctx.Err() != nil {
			return contextStop(ctx, err, attempt)
		}
		if !Retryable(err) {
			return &Error{Reason: ErrPermanent, Err: err, Attempts: attempt}
		}
		d, ok := seq.NextDelay(attempt, err)
		if !ok {
			return &Error{Reason: declineReason(seq, attempt, err), Err: err, Attempts: attempt}
		}
		if deadline, has := ctx.Deadline(); has && d >= time.Until(deadline) {
			return &Error{Reason: ErrDeadline, Err: err, Attempts: attempt}
		}
		if wait(ctx, &timer, d) != nil {
			return contextStop(ctx, err, attempt)
		}
		if err = fn(ctx); err == nil {
			return nil
		}
	}
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

// declineReason tells an exhausted attempt budget from any other refusal.
func declineReason(p Policy, attempt int, err error) error {
	if limitReached(p, attempt, err) {
		return ErrExhausted
	}
	return ErrDeclined
}

// limitReached reports whether p's refusal of (attempt, err) was due to an
// attempt limit. A policy tells by a method MaxAttempts() int, as the
// built-in ones do; wrappers that know more implement limitReached.
func limitReached(p Policy, attempt int, err error) bool {
	switch l := p.(type) {
	case interface{ limitReached(int, error) bool }:
		return l.limitReached(attempt, err)
	case interface{ MaxAttempts() int }:
		return exhausted(attempt, l.MaxAttempts())
	}
	return false
}

func saturatingInc(n int) int {
	if n == math.MaxInt {
		return n
	}
	return n + 1
}
