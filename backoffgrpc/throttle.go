package backoffgrpc

import (
	"context"

	"github.com/backoffgo/backoff/throttle"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// refusal is the failure of an attempt that the Client's Throttle refused:
// not retried, and the call's result says so (see Client.result).
type refusal struct {
	last error // the failure of the last attempt sent, as the caller sees it; nil for none
}

func (e *refusal) Error() string   { return throttle.ErrThrottled.Error() }
func (e *refusal) Unwrap() error   { return throttle.ErrThrottled }
func (e *refusal) Retryable() bool { return false }

// target is the Throttle's key of a call on cc: its dial target.
func target(cc *grpc.ClientConn) string {
	if cc == nil {
		return ""
	}
	return cc.Target()
}

// allow asks the Client's Throttle, if any, for attempt n of a call on cc,
// whose last attempt sent failed with last (nil for none): a *refusal
// when it refuses.
func (c *Client) allow(cc *grpc.ClientConn, n int, last *attemptError) error {
	if c.throttle == nil || c.throttle.Allow(target(cc), n > 1) == nil {
		return nil
	}
	r := &refusal{}
	if last != nil {
		r.last = last.err
	}
	return r
}

// record tells the Client's Throttle, if any, the outcome of an attempt
// sent on cc: nil when it succeeded or answered, else its failure.
func (c *Client) record(cc *grpc.ClientConn, e *attemptError) {
	if c.throttle != nil {
		c.throttle.Record(target(cc), e == nil || !e.rejected)
	}
}

// rejected reports whether the failure err of an attempt says the server
// is rejecting requests, or got no answer: RESOURCE_EXHAUSTED,
// UNAVAILABLE, DEADLINE_EXCEEDED (also the attempt's timeout, a
// *timeoutError), a pushback that says not to retry (dontRetry), or the
// caller's context ended.
func rejected(ctx context.Context, err error, dontRetry bool) bool {
	switch status.Code(err) {
	case codes.ResourceExhausted, codes.Unavailable, codes.DeadlineExceeded:
		return true
	}
	return dontRetry || ctx.Err() != nil
}
