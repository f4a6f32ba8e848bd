package backoffhttp

import (
	"net/http"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/throttle"
)

// errThrottled is the failure of an attempt that the Transport's Throttle
// refused: the loop stops at it, and stopThrottled gives the reason.
var errThrottled = backoff.Permanent(throttle.ErrThrottled)

// allow asks the Transport's Throttle, if any, for attempt n of req:
// errThrottled when it refuses.
func (t *Transport) allow(req *http.Request, n int) error {
	if t.Throttle != nil && t.Throttle.Allow(req.URL.Host, n > 1) != nil {
		return errThrottled
	}
	return nil
}

// record tells the Transport's Throttle, if any, the outcome of an attempt
// of r that was sent: accepted unless it got no response, a 429 or 503, or
// one that says DontRetryHeader.
func (t *Transport) record(r *http.Request, resp *http.Response, err error) {
	if t.Throttle != nil {
		t.Throttle.Record(r.URL.Host, err == nil && resp != nil && !overloaded(resp))
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
