package backoffhttp

import (
	"context"
	"net/http"
	"reflect"

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
// reported none) whose context carries it, and it holds only for the
// response whose Header map it was given with; so it survives http.Client
// (whose Timeout wraps the body) and middleware that wraps the body or
// copies the *http.Response, but not one that replaces resp.Request or
// resp.Header. The response to resp.Request sent again is another
// response: GaveUp is nil for it, unless a Transport gave up on it too.
func GaveUp(resp *http.Response) *backoff.Error {
	if resp == nil || resp.Request == nil {
		return nil
	}
	if g, _ := resp.Request.Context().Value(gaveUpKey{}).(*gaveUp); g != nil && g.req == resp.Request && sameMap(g.header, resp.Header) {
		return g.err
	}
	return nil
}

// sameMap reports whether a and b are the same map, not merely equal.
func sameMap(a, b http.Header) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

type gaveUpKey struct{}

// gaveUp is the value under gaveUpKey: why the Transport gave up, and the
// request and Header of the response it gave up on, so that a request
// built later from the same context, or the response to the same request
// sent again, is not taken for it.
type gaveUp struct {
	req    *http.Request
	header http.Header
	err    *backoff.Error
}

// markGaveUp records in resp.Request that the Transport gave up on resp,
// sent for req, with err.
func markGaveUp(resp *http.Response, req *http.Request, err *backoff.Error) {
	if resp.Request != nil {
		req = resp.Request
	}
	if resp.Header == nil {
		resp.Header = http.Header{} // a map of its own, to tell it from the next response's
	}
	g := &gaveUp{header: resp.Header, err: err}
	g.req = req.WithContext(context.WithValue(req.Context(), gaveUpKey{}, g))
	resp.Request = g.req
}
