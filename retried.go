package backoff

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

// retried reports whether e's own loop retried, stood back or was refused
// by its budget.
func (e *Error) retried() bool {
	_, refused := e.Reason.(*budgetError)
	return e.Attempts > 1 || e.Reason == ErrRetriedBelow || refused
}
