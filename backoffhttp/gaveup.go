package backoffhttp

import (
	"context"
	"net/http"

	"github.com/backoffgo/backoff"
)

// GaveUp returns the reason a [Transport] gave up on resp: when RoundTrip
// returns the last response of a status it would have retried, with a nil
// error (see "What RoundTrip returns" at Transport), it is the
// *[backoff.Error] that OnDone receives, whose Reason is why it stopped
// ([backoff.ErrExhausted], [backoff.ErrDeadline], [backoff.ErrBudget],
// [backoff.ErrHintTooLong], [backoff.ErrRetriedBelow] or the policy's
// own). It is nil for a response that no Transport gave up on (a success,
// a status that is not retried), and for a nil resp.
//
// The reason travels with resp.Request, which RoundTrip sets to a copy of
// the request its base transport reported (the caller's request when it
// reported none) whose context carries it; so it survives http.Client
// (whose Timeout wraps the body) and middleware that wraps the body or
// copies the *http.Response, but not one that replaces resp.Request.
func GaveUp(resp *http.Response) *backoff.Error {
	if resp == nil || resp.Request == nil {
		return nil
	}
	if g, _ := resp.Request.Context().Value(gaveUpKey{}).(*gaveUp); g != nil && g.req == resp.Request {
		return g.err
	}
	return nil
}

type gaveUpKey struct{}

// gaveUp is the value under gaveUpKey: why the Transport gave up, and the
// request whose response it is, so that a request built later from the
// same context is not taken for it.
type gaveUp struct {
	req *http.Request
	err *backoff.Error
}

// markGaveUp records in resp.Request that the Transport gave up on resp,
// sent for req, with err.
func markGaveUp(resp *http.Response, req *http.Request, err *backoff.Error) {
	if resp.Request != nil {
		req = resp.Request
	}
	g := &gaveUp{err: err}
	g.req = req.WithContext(context.WithValue(req.Context(), gaveUpKey{}, g))
	resp.Request = g.req
}
