package backoff

import "github.com/backoffgo/backoff/internal/errchain"

// Retried reports whether err's chain, through Unwrap (not Is methods),
// holds [ErrRetriedBelow] or the *[Error] of a loop that retried (Attempts
// > 1), stood back from an inner give-up or was refused by its budget: an
// outer loop stands back from err, and a server tells its caller not to
// retry it. A give-up's text alone (%v) does not count.
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
	if !ok {
		return errchain.Continue
	}
	if e != nil && (e.retried() || Retried(e.Err)) {
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
