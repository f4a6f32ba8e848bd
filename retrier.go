package backoff

import (
	"context"
	"math"
	"time"

	"github.com/backoffgo/backoff/internal/decided"
	"github.com/backoffgo/backoff/internal/errchain"
	"github.com/backoffgo/backoff/internal/nilness"
)

// Retrier runs the loop of [Do] with a shared retry [Budget], a limit on the
// time since the first call, and hooks. Every field but Policy may be zero.
// It must not be changed once in use and may be shared by goroutines; its
// hooks run on Do's goroutine and must then be safe for concurrent use.
type Retrier struct {
	// Policy, not nil, decides every delay and every stop, as in [Do].
	Policy Policy

	// Budget, when not nil, gets a deposit before each Do's first call and
	// a withdrawal for each retry the policy and the deadline allow; a
	// refusal stops Do ([ErrBudget]). A withdrawn retry not made is returned.
	Budget *Budget

	// MaxElapsed, when positive, is how long after the start of the first
	// call a retry may still begin: Do stops with [ErrDeadline] when the
	// next delay would end at or after it, checked again after OnRetry.
	// It never interrupts a call. Zero means none; negative is invalid.
	MaxElapsed time.Duration

	// RetryInner retries inner loops' give-ups instead of stopping with
	// [ErrRetriedBelow], multiplying the retries (for a job runner).
	RetryInner bool

	// OnRetry, when not nil, is called once a retry is decided, before the
	// wait: attempt is the number of calls so far, err the last error. A
	// cancellation, or a delay that ends at or after the deadline or
	// MaxElapsed once OnRetry returns, still prevents the retry.
	OnRetry func(ctx context.Context, attempt int, err error, delay time.Duration)

	// OnDone, when not nil, is called once when Do returns, with the number
	// of calls made and Do's result.
	OnDone func(ctx context.Context, attempts int, err error)
}

// Do is [Do] with r's fields. A nil r, fn or Policy, or a negative
// MaxElapsed, panics with a *[ParamError].
func (r *Retrier) Do(ctx context.Context, fn func(context.Context) error) error {
	s, err := r.begin(ctx, fn == nil)
	if err != nil {
		return err
	}
	if err = fn(ctx); err == nil {
		return r.done(ctx, 1, nil)
	}
	return r.retry(ctx, fn, s, err)
}

// doValue is [DoValue] with the fields of r.
func doValue[T any](ctx context.Context, fn func(context.Context) (T, error), r *Retrier) (T, error) {
	var zero T
	s, err := r.begin(ctx, fn == nil)
	if err != nil {
		return zero, err
	}
	v, err := fn(ctx)
	if err == nil {
		return v, r.done(ctx, 1, nil)
	}
	err = r.retry(ctx, func(ctx context.Context) error {
		var err error
		v, err = fn(ctx)
		return err
	}, s, err)
	if err != nil {
		return zero, err
	}
	return v, nil
}

var (
	errNilFn      = &ParamError{Param: "fn", Value: nil, Reason: "must not be nil"}
	errNilPolicy  = &ParamError{Param: "Policy", Value: nil, Reason: "must not be nil"}
	errNilRetrier = &ParamError{Param: "r", Value: nil, Reason: "must not be nil"}
)

// begin checks the arguments of Do, starts the clock of MaxElapsed and
// deposits the call in the budget. It returns the start of the first call
// (zero without MaxElapsed), or the error for a context done before it.
func (r *Retrier) begin(ctx context.Context, nilFn bool) (time.Time, error) {
	switch {
	case r == nil:
		panic(errNilRetrier)
	case nilFn:
		panic(errNilFn)
	case r.Policy == nil:
		panic(errNilPolicy)
	case r.MaxElapsed < 0:
		panic(&ParamError{Param: "MaxElapsed", Value: r.MaxElapsed, Reason: "must not be negative"})
	}
	if ctx.Err() != nil {
		return time.Time{}, r.done(ctx, 0, contextStop(ctx, nil, 0))
	}
	if r.Budget != nil {
		r.Budget.Deposit()
	}
	if r.MaxElapsed > 0 {
		return time.Now(), nil
	}
	return time.Time{}, nil
}

// done reports the end of the loop to OnDone and returns err.
func (r *Retrier) done(ctx context.Context, attempts int, err error) error {
	if r.OnDone != nil {
		r.OnDone(ctx, attempts, err)
	}
	return err
}

// retry runs the loop after fn's first call failed with err; it returns nil
// once fn succeeds. Keeping it apart leaves the success path free of loop
// state.
func (r *Retrier) retry(ctx context.Context, fn func(context.Context) error, start time.Time, err error) error {
	if nilness.IsNil(r.Policy) {
		panic(&ParamError{Param: "Policy", Value: r.Policy, Reason: "must not be a nil pointer or func"})
	}
	limit, _ := ctx.Deadline()
	if !start.IsZero() {
		if end := start.Add(r.MaxElapsed); limit.IsZero() || end.Before(limit) {
			limit = end
		}
	}
	seq := startSequence(r.Policy)
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for attempt := 1; ; attempt = saturatingInc(attempt) {
		d, stop := r.next(ctx, seq, limit, attempt, err)
		if stop != nil {
			return r.done(ctx, stop.Attempts, stop)
		}
		if wait(ctx, &timer, d) != nil {
			r.refund()
			stop := contextStop(ctx, err, attempt)
			return r.done(ctx, stop.Attempts, stop)
		}
		if err = fn(ctx); err == nil {
			return r.done(ctx, saturatingInc(attempt), nil)
		}
	}
}

// next decides what follows the failure of attempt with err, by the checks
// of Do's documentation in order, then the budget and OnRetry: the delay
// before the next attempt, or the *Error that stops the loop. limit is the
// time by which a retry must begin, zero for none.
func (r *Retrier) next(ctx context.Context, seq Policy, limit time.Time, attempt int, err error) (time.Duration, *Error) {
	if ctx.Err() != nil {
		return 0, contextStop(ctx, err, attempt)
	}
	if !Retryable(err) {
		return 0, &Error{Reason: ErrPermanent, Err: err, Attempts: attempt}
	}
	if !r.RetryInner && !errchain.IsPlain(err) && Retried(err) { // a plain error: no call
		return 0, &Error{Reason: ErrRetriedBelow, Err: err, Attempts: attempt}
	}
	d, reason := seq.NextDelay(attempt, err)
	if reason == nil {
		d = max(d, 0)
		if late(limit, d) {
			reason = ErrDeadline
		} else if r.Budget != nil {
			reason = r.Budget.Withdraw()
		}
	}
	if reason != nil {
		return 0, &Error{Reason: reason, Err: err, Attempts: attempt}
	}
	if r.OnRetry != nil {
		r.announce(ctx, attempt, err, d)
		if late(limit, d) { // OnRetry took the time
			r.refund()
			return 0, &Error{Reason: ErrDeadline, Err: err, Attempts: attempt}
		}
	}
	decided.Tell(err) // nothing stops this retry now but a cancellation
	return d, nil
}

// late reports whether a retry after d would begin at or after limit, if
// there is one.
func late(limit time.Time, d time.Duration) bool {
	return !limit.IsZero() && d >= time.Until(limit)
}

// refund returns to the budget, if any, the retry withdrawn for a retry
// that is not made.
func (r *Retrier) refund() {
	if r.Budget != nil {
		r.Budget.refund()
	}
}

// announce calls OnRetry. If it panics, the retry withdrawn for it is
// returned to the budget before the panic goes on.
func (r *Retrier) announce(ctx context.Context, attempt int, err error, d time.Duration) {
	announced := false
	if r.Budget != nil {
		defer func() {
			if !announced {
				r.refund()
			}
		}()
	}
	r.OnRetry(ctx, attempt, err, d)
	announced = true
}

// saturatingInc returns n+1, or n when that would overflow.
func saturatingInc(n int) int {
	if n == math.MaxInt {
		return n
	}
	return n + 1
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
