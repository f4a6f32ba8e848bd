package backoff

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Permanent marks err as not retryable: [Retryable] reports false for it and
// any error that wraps it, so [Do] stops at once ([ErrPermanent]); it binds
// only the Do whose fn returned it. Permanent(nil) returns nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{Err: err}
}

// permanentError is the mark added by Permanent. A nil *permanentError is
// still a mark: Retryable reports false for it.
type permanentError struct {
	Err error
}

func (e *permanentError) Error() string {
	if e == nil || e.Err == nil {
		return "backoff: permanent error"
	}
	return e.Err.Error()
}

// Unwrap returns the marked error.
func (e *permanentError) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Err
}

// Retryable reports whether err is worth retrying. It walks err's chain as
// errors.As does, and the first of these it meets decides: a [Permanent]
// mark (false); an error with a method Retryable() bool (its answer); an
// *[Error] of a nested [Do] (the verdict on its last error, marks ignored,
// since a mark binds only its own Do). Any other error is retryable, nil and
// context errors included (Do checks its own context first). Retryable does
// not allocate and is safe for concurrent use.
func Retryable(err error) bool {
	if err == nil || isPlain(err) {
		return true
	}
	retryable, _ := judge(err, false)
	return retryable
}

// plainError is the type of errors.New's (and fmt.Errorf's without %w)
// values, the most common errors by far. They carry none of the methods
// judge looks for, so Retryable answers for them with one comparison.
var plainError = reflect.TypeOf(errors.New(""))

// isPlain reports whether err is of plainError's type. It is small enough
// to inline, so that the policies' check of a plain error costs a compare
// and no call.
func isPlain(err error) bool { return reflect.TypeOf(err) == plainError }

// judge returns whether err is retryable and whether something in its chain
// decided it (rather than the default). With ignoreMarks it looks through
// *permanentError values instead of stopping at them.
func judge(err error, ignoreMarks bool) (retryable, decided bool) {
	for err != nil {
		if isPlain(err) {
			return true, false
		}
		switch e := err.(type) {
		case *permanentError:
			if !ignoreMarks {
				return false, true
			}
			err = e.Unwrap()
		case *Error:
			if e == nil {
				return true, false
			}
			return judge(e.Err, true)
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

// Retried reports whether err is, or wraps, the give-up of a retry loop
// that retried (Attempts > 1), whose budget refused a retry, or that stood
// back from an inner give-up, or is ErrRetriedBelow itself (a server said
// not to retry): its chain, through Unwrap, holds such an *[Error] or
// ErrRetriedBelow; an Is method claiming either does not count. A loop
// around a function that returned err stands back from it, and a server
// tells its caller not to retry exactly such a failure: not a give-up it
// absorbed, a loop still retrying, or a give-up's text alone (%v).
func Retried(err error) bool {
	for err != nil {
		if err == ErrRetriedBelow {
			return true
		}
		if isPlain(err) {
			return false
		}
		switch e := err.(type) {
		case *Error:
			if e == nil {
				return false
			}
			if e.retried() {
				return true
			}
			err = e.Err
		case interface{ Unwrap() error }:
			err = e.Unwrap()
		case interface{ Unwrap() []error }:
			for _, inner := range e.Unwrap() {
				if Retried(inner) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}

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

func (retriedBelowError) Error() string { return "backoff: an inner loop already retried" }

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
	if err == nil || isPlain(err) || !holdsError(err) {
		return err
	}
	return reasonless{err}
}

// holdsError reports whether err's chain holds an *Error.
func holdsError(err error) bool {
	for err != nil {
		switch e := err.(type) {
		case *Error:
			return true
		case interface{ Unwrap() error }:
			err = e.Unwrap()
		case interface{ Unwrap() []error }:
			for _, inner := range e.Unwrap() {
				if holdsError(inner) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}

// reasonless shows err to errors.Is and errors.As as err itself, and its
// chain through more reasonless views, an *Error's cut to its last error.
type reasonless struct{ err error }

func (v reasonless) Error() string { return v.err.Error() }

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
			views = append(views, reasonless{err})
		}
	}
	return views
}

// retried reports whether e's own loop retried, stood back or was refused
// by its budget.
func (e *Error) retried() bool {
	_, refused := e.Reason.(*budgetError)
	return e.Attempts > 1 || e.Reason == ErrRetriedBelow || refused
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

// ParamError reports an invalid parameter of a constructor or of [Do].
type ParamError struct {
	Param  string // the parameter's name, as in Config: "Base", "Cap", "MaxAttempts", "Rng", ...
	Value  any    // the rejected value
	Reason string // what the parameter must be
}

func (e *ParamError) Error() string {
	if e == nil {
		return "backoff: invalid parameter"
	}
	return "backoff: invalid " + e.Param + " " + formatValue(e.Value) + ": " + e.Reason
}

// formatValue prints the parameter values the library rejects without
// importing fmt, which would make importing the package cost more.
func formatValue(v any) string {
	switch v := v.(type) {
	case nil:
		return "nil"
	case time.Duration:
		return v.String()
	case int:
		return strconv.Itoa(v)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case string:
		return v
	case interface{ String() string }:
		return v.String()
	}
	return "(" + reflect.TypeOf(v).String() + ")"
}
