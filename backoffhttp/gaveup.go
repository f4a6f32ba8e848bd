package backoffhttp

import (
	"context"
	"net/http"
	"reflect"

	"github.com/backoffgo/backoff"
)

// gaveUpOn returns the error of a Transport that gave up on resp and
// returned it, or nil.
func gaveUpOn(resp *http.Response) *backoff.Error {
	if resp.Request == nil {
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
