package backoff

import "time"

// Policy decides whether a failed call is retried and how long to wait first.
//
// NextDelay is called after a call has failed. attempt is the number of
// attempts made so far, counting the one that just failed: it is 1 after the
// first call failed, 2 after the first retry failed, and so on. err is the
// error that attempt returned; nil stands for a failure without an error
// value and is treated as retryable.
//
// NextDelay returns the delay before the next attempt and a nil error, or a
// non-nil error that is the reason to stop: [Do] puts exactly that value in
// [Error].Reason, so a policy states why it gives up and callers match the
// reason with errors.Is. The built-in policies return [ErrPermanent] for an
// error that is not [Retryable] and then [ErrExhausted] once attempt reaches
// MaxAttempts, both before any random draw. When the error is non-nil the
// delay is meaningless and zero. A returned delay is never negative.
//
// The built-in policies count from the first retry: at attempt 1 their
// ceiling is Base (Base·2⁰), at attempt 2 it is 2·Base, and so on up to Cap.
// They treat an attempt below 1 as 1.
//
// Every built-in policy is immutable after construction and safe for
// concurrent use by any number of goroutines. A Policy that keeps memory
// between the steps of one retry sequence implements [Sequencer] as well.
type Policy interface {
	NextDelay(attempt int, err error) (time.Duration, error)
}

// PolicyFunc adapts an ordinary function to the [Policy] interface. The
// function must honour Policy's contract: a delay of zero or more and a nil
// error to retry, or a non-nil error that says why it stops.
type PolicyFunc func(attempt int, err error) (time.Duration, error)

// NextDelay returns f(attempt, err).
func (f PolicyFunc) NextDelay(attempt int, err error) (time.Duration, error) {
	return f(attempt, err)
}

// Sequencer is implemented by a Policy whose delays depend on the delays it
// gave earlier in the same retry sequence, such as [Decorrelated].
//
// A retry sequence is the series of NextDelay calls for one logical
// operation, such as one [Do] call. NewSequence returns a fresh Policy that
// holds the memory of exactly one sequence; it is used by a single goroutine
// and dropped when the sequence ends. The Sequencer itself stays immutable
// and shareable. Do calls NewSequence once per call, after the first
// failure.
type Sequencer interface {
	Policy
	NewSequence() Policy
}

// StartSequence returns the Policy to use for one new retry sequence:
// p.NewSequence() when p is a [Sequencer], and p itself otherwise.
func StartSequence(p Policy) Policy { return startSequence(p) }

// startSequence returns p.NewSequence() when p is a Sequencer, p otherwise.
func startSequence(p Policy) Policy {
	if s, ok := p.(Sequencer); ok {
		return s.NewSequence()
	}
	return p
}
