package throttle

import (
	"time"

	"github.com/backoffgo/backoff"
)

// Gate is a backoff.Policy that asks Throttle for every retry its Policy
// allows, so that a Retrier's loop is gated before its deadline, Budget
// and OnRetry: a retry refused withdraws nothing and is not announced.
// backoffhttp's Transport and backoffgrpc's Client gate their loops with
// it; a loop of one's own may too.
//
// NextDelay returns the Policy's delay and reason when it stops; otherwise
// it calls Throttle.Allow(Target(err), true), and on a refusal calls
// Refused(err) and returns 0 and ErrThrottled, which stops the loop with
// that Reason. A nil Target means the target ""; a nil Refused is not
// called. Policy and Throttle must not be nil. A Gate is safe for
// concurrent use when its Policy and funcs are.
type Gate struct {
	Policy   backoff.Policy
	Throttle *Throttle
	Target   func(err error) string // the target of the call whose attempt failed with err
	Refused  func(err error)        // told that the retry after err was refused
}

// NextDelay gates the retry after attempt failed with err (see Gate).
func (g *Gate) NextDelay(attempt int, err error) (time.Duration, error) {
	d, reason := g.Policy.NextDelay(attempt, err)
	if reason != nil {
		return d, reason
	}
	target := ""
	if g.Target != nil {
		target = g.Target(err)
	}
	if g.Throttle.Allow(target, true) != nil {
		if g.Refused != nil {
			g.Refused(err)
		}
		return 0, ErrThrottled
	}
	return d, nil
}

// NewSequence returns a Gate of its Policy's sequence when the Policy is
// a backoff.Sequencer that makes a new one, and g otherwise.
func (g *Gate) NewSequence() backoff.Policy {
	if s, ok := g.Policy.(backoff.Sequencer); ok {
		if seq := s.NewSequence(); seq != g.Policy {
			c := *g
			c.Policy = seq
			return &c
		}
	}
	return g
}
