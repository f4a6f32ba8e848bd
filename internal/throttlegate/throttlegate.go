// Package throttlegate asks a throttle.Throttle for the retries of a
// Retrier's loop from its Policy: once the loop's own Policy allows a
// retry, before the Retrier's deadline, Budget and OnRetry, so that a
// retry refused withdraws nothing and is not announced. backoffhttp's
// Transport and backoffgrpc's Client use it.
package throttlegate

import (
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/throttle"
)

// Failure is a failure whose retry is gated: ThrottleTarget is the
// Throttle's target of its call. Any other failure is gated with the
// target "".
type Failure interface{ ThrottleTarget() string }

// refused is a Failure that lets go of what it holds when its retry is
// refused.
type refused interface{ ThrottleRefused() }

// Policy is a loop's Policy gated by Throttle. A refusal stops the loop
// with the Reason throttle.ErrThrottled.
type Policy struct {
	backoff.Policy // the loop's, or one sequence of it
	Throttle       *throttle.Throttle
}

func (g *Policy) NextDelay(attempt int, err error) (time.Duration, error) {
	d, reason := g.Policy.NextDelay(attempt, err)
	if reason != nil {
		return d, reason
	}
	var target string
	if f, ok := err.(Failure); ok {
		target = f.ThrottleTarget()
	}
	if g.Throttle.Allow(target, true) != nil {
		if r, ok := err.(refused); ok {
			r.ThrottleRefused()
		}
		return 0, throttle.ErrThrottled
	}
	return d, nil
}

// NewSequence returns g, or a Policy of the sequence of g's Policy when
// it keeps one.
func (g *Policy) NewSequence() backoff.Policy {
	if s, ok := g.Policy.(backoff.Sequencer); ok {
		if seq := s.NewSequence(); seq != g.Policy {
			return &Policy{Policy: seq, Throttle: g.Throttle}
		}
	}
	return g
}
