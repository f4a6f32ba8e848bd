package backoff

import "github.com/backoffgo/backoff/internal/errchain"

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

// Retryable reports whether err is worth retrying: the first of these in
// err's chain (in errors.As's order) decides: a [Permanent] mark (false);
// a method Retryable() bool (its answer); a nested [Do]'s *[Error] (the
// verdict on its last error, marks ignored). Any other error is
// retryable, nil and context errors included. Retryable does not allocate
// and is safe for concurrent use.
func Retryable(err error) bool {
	if err == nil || errchain.IsPlain(err) {
		return true
	}
	retryable, _ := judge(err, false)
	return retryable
}

// judge returns whether err is retryable and whether something in its chain
// decided it (rather than the default). With ignoreMarks it looks through
// *permanentError values instead of stopping at them.
func judge(err error, ignoreMarks bool) (retryable, decided bool) {
	retryable = true
	decided = errchain.Walk(err, func(err error) errchain.Step {
		switch e := err.(type) {
		case *permanentError:
			if ignoreMarks {
				return errchain.Continue
			}
			retryable = false
			return errchain.Stop
		case *Error:
			if e == nil {
				return errchain.Skip
			}
			// The nested Do's verdict: on its last error, not its reason.
			if r, ok := judge(e.Err, true); ok {
				retryable = r
				return errchain.Stop
			}
			return errchain.Skip
		case interface{ Retryable() bool }:
			retryable = e.Retryable()
			return errchain.Stop
		}
		return errchain.Continue
	})
	return retryable, decided
}
