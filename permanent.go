package backoff

import (
	"errors"
	"reflect"
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
