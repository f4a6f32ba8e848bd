package backoff

import (
	"context"
	"errors"
	"strconv"
)

// Permanent marks err as not retryable: [Retryable] reports false for it and
// for any error that wraps it, and [Do] stops at once with [ErrPermanent].
// Permanent(nil) returns nil.
//
// The mark is scoped to one Do call: a Do nested inside another Do's
// function does not stop the outer loop merely because the inner one met a
// marked error; the outer loop judges the underlying error on its own merits
// (see [Retryable]).
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &PermanentError{Err: err}
}

// PermanentError is the mark added by [Permanent].
type PermanentError struct {
	Err error
}

func (e *PermanentError) Error() string { return e.Err.Error() }

// Unwrap returns the marked error.
func (e *PermanentError) Unwrap() error { return e.Err }

// Retryable reports whether err is worth retrying. It walks err's chain (as
// errors.As does, through Unwrap() error and Unwrap() []error, depth first)
// and the first of these it meets decides:
//
//   - a *[PermanentError]: not retryable;
//   - the value context.Canceled or context.DeadlineExceeded itself, or
//     [ErrDeadline]: not retryable, since the caller has stopped waiting.
//     Only these values count, not errors whose Is method matches them: an
//     http.Client.Timeout error, which matches DeadlineExceeded only through
//     Is, is a per-attempt timeout and stays retryable;
//   - an error with a method Retryable() bool: its answer;
//   - an *[Error] from a nested [Do]: the verdict on its last error, with
//     [Permanent] marks ignored, because a mark only stops the Do call whose
//     function returned it.
//
// Any other non-nil error is retryable. A nil error stands for a failure
// without an error value and is retryable too.
func Retryable(err error) bool {
	if err == nil {
		return true
	}
	retryable, _ := judge(err, false)
	return retryable
}

// judge returns whether err is retryable and whether something in its chain
// decided it (rather than the default). With ignoreMarks it looks through
// *PermanentError values instead of stopping at them. It inspects each link
// of the chain with a single type switch, which the runtime resolves with
// one cached lookup; that keeps the common case, a plain error, to a few
// nanoseconds.
func judge(err error, ignoreMarks bool) (retryable, decided bool) {
	for err != nil {
		if err == context.Canceled || err == context.DeadlineExceeded {
			return false, true
		}
		switch e := err.(type) {
		case *PermanentError:
			if !ignoreMarks {
				return false, true
			}
			err = e.Err
		case *Error:
			return judge(e.Err, true)
		case deadlineError:
			return false, true
		case interface{ Retryable() bool }:
			return e.Retryable(), true
		case interface{ Unwrap() error }:
			err = e.Unwrap()
		case interface{ Unwrap() []error }:
			for _, inner := range e.Unwrap() {
				if r, ok := judge(inner, ignoreMarks); ok {
					return r, true
				}
			}
			return true, false
		default:
			return true, false
		}
	}
	return true, false
}

// The reasons a [Do] call stops without success. Test for them with
// errors.Is on the error Do returns; when the context ended, that error
// matches context.Canceled or context.DeadlineExceeded instead.
var (
	// ErrPermanent: fn returned an error that is not [Retryable].
	ErrPermanent = errors.New("backoff: error is not retryable")

	// ErrExhausted: the policy's attempt budget is spent. Do reports it
	// when the policy declines and reports, through a method
	// MaxAttempts() int as the built-in policies do, a limit that the
	// attempts made have reached.
	ErrExhausted = errors.New("backoff: attempts exhausted")

	// ErrDeclined: the policy declined to retry for a reason of its own.
	ErrDeclined = errors.New("backoff: policy declined to retry")

	// ErrDeadline: the next delay would end at or after the context's deadline,
	// so Do returned at once instead of sleeping into certain failure. An
	// error matching ErrDeadline also matches context.DeadlineExceeded.
	ErrDeadline error = deadlineError{}
)

type deadlineError struct{}

func (deadlineError) Error() string {
	return "backoff: next retry would come at or after the context deadline"
}

// Is makes ErrDeadline match context.DeadlineExceeded.
func (deadlineError) Is(target error) bool { return target == context.DeadlineExceeded }

// Error is the error [Do] returns when it stops without success.
//
// errors.Is matches both the stop reason ([ErrPermanent], [ErrExhausted],
// [ErrDeclined], [ErrDeadline], or the context's error) and, through Err,
// the last error fn returned; errors.As reaches the types in either chain.
// When fn itself ran a nested Do, the inner call's reason is in Err's chain
// too, so errors.Is can match both; the Reason field is this call's own.
type Error struct {
	// Reason says why Do stopped: one of the sentinels above or the
	// context's error (ctx.Err()). A cause given to the context is
	// reachable too, through errors.Is and errors.As, and named in Error.
	Reason error

	// Err is the last error fn returned, exactly as returned. It is nil
	// when the context ended before fn was first called.
	Err error

	// Attempts is the number of times fn was called.
	Attempts int

	cause error // context.Cause when it differs from Reason
}

func (e *Error) Error() string {
	msg := e.Reason.Error()
	if e.cause != nil {
		msg += " (" + e.cause.Error() + ")"
	}
	msg += " after " + strconv.Itoa(e.Attempts) + " attempt"
	if e.Attempts != 1 {
		msg += "s"
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the stop reason, the context's cause when one was given
// (context.WithCancelCause and its relatives) and the last error, for
// errors.Is and errors.As.
func (e *Error) Unwrap() []error {
	errs := []error{e.Reason}
	if e.cause != nil {
		errs = append(errs, e.cause)
	}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}
