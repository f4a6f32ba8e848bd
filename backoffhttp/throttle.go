package backoffhttp

import (
	"context"
	"net/http"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/throttle"
)

// errThrottled is the failure of an attempt that the Transport's Throttle
// refused: the loop stops at it, and stopThrottled gives the reason.
var errThrottled = backoff.Permanent(throttle.ErrThrottled)

// allow asks the Transport's Throttle, if any, for attempt n of req when
// it is the first try (gated retries: see gated): errThrottled when it
// refuses.
func (t *Transport) allow(req *http.Request, n int) error {
	if n == 1 && t.Throttle != nil && t.Throttle.Allow(req.URL.Host, false) != nil {
		return errThrottled
	}
	return nil
}

// gated is the Policy of a loop of a Transport with a Throttle: a retry
// (or hedged copy) that the loop's own Policy allows is asked of the
// Throttle, before the Retrier's deadline, Budget and OnRetry, so that a
// retry refused withdraws nothing and is not announced. A refusal stops
// the loop with the Reason throttle.ErrThrottled; the failure's response,
// if any, is discarded (RoundTrip returns none).
type gated struct {
	backoff.Policy // the loop's, or one sequence of it
	th             *throttle.Throttle
}

func (g *gated) NextDelay(attempt int, err error) (time.Duration, error) {
	d, reason := g.Policy.NextDelay(attempt, err)
	if reason != nil {
		return d, reason
	}
	// Only these are retried: every other failure is permanent.
	var host string
	switch e := err.(type) {
	case *attemptError:
		host = e.host
	case *delayFired:
		host = e.host
	}
	if g.th.Allow(host, true) != nil {
		if e, ok := err.(*attemptError); ok {
			e.discard()
		}
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

// record tells the Transport's Throttle, if any, the outcome of an attempt
// of r that was sent, on the call's context ctx: accepted unless it got no
// response, a 429 or 503, or one that says DontRetryHeader. An attempt
// cancelled, not timed out, is accepted: by the caller (ctx), or by the
// Transport (errLost: a hedged copy once the call was decided); the
// backend did not reject it.
func (t *Transport) record(ctx context.Context, r *http.Request, resp *http.Response, err error) {
	if t.Throttle != nil {
		cancelled := err != nil && (ctx.Err() == context.Canceled || context.Cause(r.Context()) == errLost)
		t.Throttle.Record(r.URL.Host, cancelled || err == nil && resp != nil && !overloaded(resp))
	}
}

// overloaded reports whether resp says the server is rejecting requests.
func overloaded(resp *http.Response) bool {
	return resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable || dontRetry(resp)
}

// stopThrottled makes stop, when the loop stopped at an attempt the
// Throttle refused, say so: its Reason becomes throttle.ErrThrottled, its
// Err the last failure of an attempt sent (nil for none) and its Attempts
// those sent.
func stopThrottled(stop *backoff.Error, last *attemptError, sent int) {
	if stop == nil || stop.Err != errThrottled {
		return
	}
	stop.Reason, stop.Err, stop.Attempts = throttle.ErrThrottled, nil, sent
	if last != nil {
		stop.Err = last
	}
}
