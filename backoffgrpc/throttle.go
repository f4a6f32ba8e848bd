package backoffgrpc

import (
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/throttle"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// refusal is the failure of a first try that the Client's Throttle
// refused: not made, not retried, and the call's result says so (see
// Client.result).
type refusal struct{}

func (e *refusal) Error() string   { return throttle.ErrThrottled.Error() }
func (e *refusal) Unwrap() error   { return throttle.ErrThrottled }
func (e *refusal) Retryable() bool { return false }

// errRefused is every refusal.
var errRefused error = &refusal{}

// target is the Throttle's key of a call on cc: its dial target.
func target(cc *grpc.ClientConn) string {
	if cc == nil {
		return ""
	}
	return cc.Target()
}

// allow asks the Client's Throttle, if any, for attempt n of a call on cc
// when it is the first try (gated retries: see gated): errRefused when it
// refuses.
func (c *Client) allow(cc *grpc.ClientConn, n int) error {
	if n == 1 && c.throttle != nil && c.throttle.Allow(target(cc), false) != nil {
		return errRefused
	}
	return nil
}

// gated is the Policy of a Client with a Throttle: a retry that the
// Client's own Policy allows is asked of the Throttle, before the
// Retrier's deadline, Budget and OnRetry, so that a retry refused
// withdraws nothing and is not announced. A refusal stops the loop with
// the Reason throttle.ErrThrottled.
type gated struct {
	backoff.Policy // the Client's, or one sequence of it
	th             *throttle.Throttle
}

func (g *gated) NextDelay(attempt int, err error) (time.Duration, error) {
	d, reason := g.Policy.NextDelay(attempt, err)
	if reason != nil {
		return d, reason
	}
	var target string
	if e, ok := err.(*attemptError); ok { // every failure retried is one
		target = e.target
	}
	if g.th.Allow(target, true) != nil {
		return 0, throttle.ErrThrottled
	}
	return d, nil
}

// NewSequence returns g, or a gated of the sequence of g's Policy when it
// keeps one.
func (g *gated) NewSequence() backoff.Policy {
	if s, ok := g.Policy.(backoff.Sequencer); ok {
		if seq := s.NewSequence(); seq != g.Policy {
			return &gated{Policy: seq, th: g.th}
		}
	}
	return g
}

// record tells the Client's Throttle, if any, the outcome of an attempt
// sent on cc: nil when it succeeded or answered, else its failure.
func (c *Client) record(cc *grpc.ClientConn, e *attemptError) {
	if c.throttle != nil {
		c.throttle.Record(target(cc), e == nil || !e.rejected)
	}
}

// rejected reports whether the failure err of an attempt says the server
// is rejecting requests, or got no answer in time: RESOURCE_EXHAUSTED,
// UNAVAILABLE, DEADLINE_EXCEEDED (also the attempt's timeout, a
// *timeoutError), or a pushback that says not to retry (dontRetry). A
// cancellation (CANCELLED) is not.
func rejected(err error, dontRetry bool) bool {
	switch status.Code(err) {
	case codes.ResourceExhausted, codes.Unavailable, codes.DeadlineExceeded:
		return true
	}
	return dontRetry
}
