package backoff

import "github.com/backoffgo/backoff/internal/errchain"

// Retried reports whether err is, or wraps, the give-up of a retry loop
// that retried (Attempts > 1), whose budget refused a retry, or that stood
// back from an inner give-up, or is ErrRetriedBelow itself (a server said
// not to retry): its chain, through Unwrap, holds such an *[Error] or
// ErrRetriedBelow; an Is method claiming either does not count. A loop
// around a function that returned err stands back from it, and a server
// tells its caller not to retry exactly such a failure: not a give-up it
// absorbed, a loop still retrying, or a give-up's text alone (%v).
func Retried(err error) bool {
	return errchain.Walk(err, retriedStep)
}

// retriedStep is Retried's rule for one error of the chain: it stops at
// ErrRetriedBelow and at an *Error whose loop retried; through an *Error
// whose loop did not, it follows the last error only, not the reason.
func retriedStep(err error) errchain.Step {
	if err == ErrRetriedBelow {
		return errchain.Stop
	}
	e, ok := err.(*Error)
	switch {
	case !ok:
		return errchain.Continue
	case e != nil && (e.retried() || Retried(e.Err)):
		return errchain.Stop
	}
	return errchain.Skip
}

// retried reports whether e's own loop retried, stood back or was refused
// by its budget.
func (e *Error) retried() bool {
	_, refused := e.Reason.(*budgetError)
	return e.Attempts > 1 || e.Reason == ErrRetriedBelow || refused
}
