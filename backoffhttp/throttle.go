package backoffhttp

import (
	"context"
	"net/http"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/throttle"
)

// errThrottled is the failure of an attempt that the Transport's Throttle
// refused: the loop stops at it, and stopThrottled gives the reason.
var errThrottled = backoff.Permanent(throttle.ErrThrottled)

// allow asks the Transport's Throttle, if any, for attempt n of req when
// it is the first try (the Transport's gate gates retries): errThrottled when it
// refuses.
func (t *Transport) allow(req *http.Request, n int) error {
	if n == 1 && t.Throttle != nil && t.Throttle.Allow(req.URL.Host, false) != nil {
		return errThrottled
	}
	return nil
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

// gate returns p with every retry asked of the Throttle (throttle.Gate):
// the target is the failed attempt's host, and a refused retry's response
// is discarded (RoundTrip returns none).
func (t *Transport) gate(p backoff.Policy) backoff.Policy {
	return &throttle.Gate{Policy: p, Throttle: t.Throttle,
		Target: func(err error) string {
			switch e := err.(type) {
			case *attemptError:
				return e.host
			case *delayFired:
				return e.host
			}
			return ""
		},
		Refused: func(err error) {
			if e, ok := err.(*attemptError); ok {
				e.discard()
			}
		},
	}
}
