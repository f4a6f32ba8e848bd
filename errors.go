package backoff

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"strings"

	"github.com/backoffgo/backoff/internal/errchain"
)

// The library's reasons for a [Do] call to stop without success, for
// errors.Is. A context that ended gives its own error; a user's policy may
// give any reason.
var (
	// ErrPermanent: fn returned an error that is not [Retryable].
	ErrPermanent = errors.New("backoff: error is not retryable")

	// ErrExhausted: the policy's attempt budget (MaxAttempts) is spent.
	ErrExhausted = errors.New("backoff: attempts exhausted")

	// ErrDeadline: the next delay would end at or after the context's
	// deadline or a Retrier's MaxElapsed, so Do returned at once. It also
	// matches context.DeadlineExceeded.
	ErrDeadline error = deadlineError{}

	// ErrRetriedBelow: fn's error is [Retried] (an inner loop
	// retried, or a server said not to retry), so only the innermost loop
	// retries; a [Retrier] with RetryInner retries anyway.
	ErrRetriedBelow error = retriedBelowError{}
)

// retriedBelowError is ErrRetriedBelow's type: not errors.New's, so that a
// shortcut for plain errors does not pass it by.
type retriedBelowError struct{}

func (retriedBelowError) Error() string { return "backoff: retried below, or told not to retry" }

type deadlineError struct{}

func (deadlineError) Error() string {
	return "backoff: the next retry would start past the deadline"
}

// Is makes ErrDeadline match context.DeadlineExceeded.
func (deadlineError) Is(target error) bool { return target == context.DeadlineExceeded }

// Error is the error [Do] returns when it stops without success.
type Error struct {
	// Reason says why Do stopped: [ErrPermanent], [ErrRetriedBelow],
	// [ErrDeadline], the policy's reason ([ErrExhausted] for the
	// built-ins), [ErrBudget] or ctx.Err() (its cause, if any, is in the
	// chain and the message).
	Reason error

	// Err is the last error fn returned, exactly as returned. It is nil
	// when the context ended before fn was first called.
	Err error

	// Attempts is the number of times fn was called.
	Attempts int

	cause error // context.Cause when it differs from Reason
}

// Error reads "backoff: stopped after N attempts (reason): last error". A
// last error that is an inner loop's *Error, marked [Permanent] or not,
// reads "an inner loop stopped after…"; standing back from it, e leaves out
// its reason and the inner loops that stood back in turn.
func (e *Error) Error() string {
	if e == nil {
		return "backoff: <nil *Error>"
	}
	return "backoff: " + e.text()
}

// text is e's message without its prefix.
func (e *Error) text() string {
	s := "stopped after " + strconv.Itoa(e.Attempts) + " attempts"
	switch e.Attempts {
	case 0:
		s = "stopped before the first attempt"
	case 1:
		s = "stopped after 1 attempt"
	}
	inner := innerLoop(e.Err)
	if inner == nil || e.Reason != ErrRetriedBelow {
		reason := ""
		if e.Reason != nil {
			reason = strings.TrimPrefix(e.Reason.Error(), "backoff: ")
		}
		if e.cause != nil {
			reason += ": " + e.cause.Error()
		}
		s += " (" + reason + ")"
	} else {
		// Standing back from loops that stood back: the innermost speaks.
		for next := innerLoop(inner.Err); next != nil && inner.Reason == ErrRetriedBelow; next = innerLoop(inner.Err) {
			inner = next
		}
	}
	if inner != nil {
		return s + ": an inner loop " + inner.text()
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// innerLoop returns err as an inner loop's *Error, looking through
// Permanent marks, or nil when err is something else.
func innerLoop(err error) *Error {
	for {
		switch e := err.(type) {
		case *permanentError:
			if e == nil {
				return nil
			}
			err = e.Err
		case *Error:
			return e
		default:
			return nil
		}
	}
}

// Unwrap returns the reason, the context's cause if any and the last error,
// in whose chain an inner loop's *Error unwraps to its last error only: e
// matches [ErrExhausted] and the other reasons for its own loop alone.
func (e *Error) Unwrap() []error {
	if e == nil {
		return nil
	}
	errs := make([]error, 0, 3)
	for _, err := range [...]error{e.Reason, e.cause, hideReasons(e.Err)} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// hideReasons returns err, or, when its chain holds an *Error, a view of it
// in which each *Error unwraps only to its last error.
func hideReasons(err error) error {
	if err == nil || errchain.IsPlain(err) || !holdsError(err) {
		return err
	}
	return reasonless{err: err}
}

// holdsError reports whether err's chain holds an *Error.
func holdsError(err error) bool { return errchain.Walk(err, isError) }

func isError(err error) errchain.Step {
	if _, ok := err.(*Error); ok {
		return errchain.Stop
	}
	return errchain.Continue
}

// reasonless shows err to errors.Is and errors.As as err itself, and its
// chain through more reasonless views, an *Error's cut to its last error.
// It is a view for errchain.Walk, which visits err in its place, so that
// the module's classifiers see what errors.As sees.
type reasonless struct {
	errchain.Viewer
	err error
}

func (v reasonless) Error() string { return v.err.Error() }

// Shown returns err, for errchain.Walk.
func (v reasonless) Shown() error { return v.err }

// Is reports whether err is target, or says it is.
func (v reasonless) Is(target error) bool {
	if reflect.TypeOf(v.err).Comparable() && v.err == target {
		return true
	}
	is, ok := v.err.(interface{ Is(error) bool })
	return ok && is.Is(target)
}

// As sets *target to err when err is assignable to it, or asks err.
func (v reasonless) As(target any) bool {
	t := reflect.ValueOf(target).Elem() // errors.As checked: a non-nil pointer
	if reflect.TypeOf(v.err).AssignableTo(t.Type()) {
		t.Set(reflect.ValueOf(v.err))
		return true
	}
	as, ok := v.err.(interface{ As(any) bool })
	return ok && as.As(target)
}

func (v reasonless) Unwrap() []error {
	next := []error{nil}
	switch e := v.err.(type) {
	case *Error:
		if e != nil {
			next[0] = e.Err
		}
	case interface{ Unwrap() error }:
		next[0] = e.Unwrap()
	case interface{ Unwrap() []error }:
		next = e.Unwrap()
	}
	views := make([]error, 0, len(next))
	for _, err := range next {
		if err != nil {
			views = append(views, reasonless{err: err})
		}
	}
	return views
}

// Timeout reports, as net.Error's method does, whether the reason, or unless
// the context was cancelled the last error, matches
// context.DeadlineExceeded or has a Timeout() bool method reporting true.
func (e *Error) Timeout() bool {
	if e == nil {
		return false
	}
	if isTimeout(e.Reason) {
		return true
	}
	return !errors.Is(e.Reason, context.Canceled) && isTimeout(e.Err)
}

// isTimeout reports whether err matches context.DeadlineExceeded or has a
// Timeout method that reports true.
func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &t) && t.Timeout()
}
