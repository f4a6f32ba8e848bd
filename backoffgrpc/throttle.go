package backoffgrpc

import (
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

// errThrottleRefused is every refusal.
var errThrottleRefused error = &refusal{}

// target is the Throttle's key of a call on cc: its dial target.
func target(cc *grpc.ClientConn) string {
	if cc == nil {
		return ""
	}
	return cc.Target()
}

// allow asks the Client's Throttle, if any, for attempt n of a call on cc
// when it is the first try (the Client's gate gates retries): errThrottleRefused when
// it refuses.
func (c *Client) allow(cc *grpc.ClientConn, n int) error {
	if n == 1 && c.throttle != nil && c.throttle.Allow(target(cc), false) != nil {
		return errThrottleRefused
	}
	return nil
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

// gate returns p with every retry asked of the Throttle (throttle.Gate),
// for the target of the failed attempt's call.
func (c *Client) gate(p backoff.Policy) backoff.Policy {
	return &throttle.Gate{Policy: p, Throttle: c.throttle,
		Target: func(err error) string {
			switch e := err.(type) {
			case *attemptError:
				return e.target
			case *delayFired:
				return e.target
			}
			return ""
		},
	}
}
