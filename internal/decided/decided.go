// Package decided lets a failure learn that the loop of package backoff
// will retry after it. A Retrier's OnRetry cannot know it: the deadline is
// checked again once OnRetry returns, and may still stop the loop. The
// loop tells a Failure after its last check, just before its wait; it is
// the moment backoffhttp discards the response it would otherwise return.
package decided

// Token is the argument of Failure's method. Outside this module no code
// can name it, so no error of a user's has the method by chance.
type Token struct{}

// Failure is an error that the loop tells, when it has decided to retry
// after it, by calling RetryDecided once.
type Failure interface {
	error
	RetryDecided(Token)
}

// Tell tells err that the loop retries after it, if err is a Failure (err
// itself, not one it wraps).
func Tell(err error) {
	if f, ok := err.(Failure); ok {
		f.RetryDecided(Token{})
	}
}
