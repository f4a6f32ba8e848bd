package backoff

import "time"

// Policy decides whether a failed call is retried and how long to wait
// first. NextDelay is called after a failed call: attempt counts the calls
// so far (1 after the first), err is the failure's error (nil is
// retryable). It returns the delay before the next call, never negative,
// and nil, or the reason to stop that Do reports as [Error].Reason. The
// built-ins return [ErrPermanent] for an error not [Retryable], then
// [ErrExhausted] once attempt reaches MaxAttempts, before any draw; an
// attempt below 1 counts as 1. A policy with memory within one retry
// sequence implements [Sequencer].
type Policy interface {
	NextDelay(attempt int, err error) (time.Duration, error)
}

// PolicyFunc adapts a function that keeps [Policy]'s contract to it.
type PolicyFunc func(attempt int, err error) (time.Duration, error)

// NextDelay returns f(attempt, err).
func (f PolicyFunc) NextDelay(attempt int, err error) (time.Duration, error) {
	return f(attempt, err)
}

// Sequencer is implemented by a Policy whose delays depend on those it gave
// earlier in one retry sequence (one [Do] call), such as [Decorrelated].
// NewSequence returns a fresh Policy holding one sequence's memory, for one
// goroutine, and leaves the Sequencer immutable; Do calls it once per call,
// after the first failure.
type Sequencer interface {
	Policy
	NewSequence() Policy
}

// startSequence returns p.NewSequence() when p is a Sequencer, p otherwise.
func startSequence(p Policy) Policy {
	if s, ok := p.(Sequencer); ok {
		return s.NewSequence()
	}
	return p
}
