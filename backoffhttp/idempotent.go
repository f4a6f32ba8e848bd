package backoffhttp

import (
	"net/http"
)

// IsIdempotent reports whether req may be sent more than once: its method
// is idempotent (RFC 9110, section 9.2.2: GET, HEAD, OPTIONS, TRACE, PUT,
// DELETE; an empty method means GET), or it carries an Idempotency-Key or
// X-Idempotency-Key header, as net/http itself accepts. It says nothing of
// the body (see [Transport]). A nil req is not idempotent.
func IsIdempotent(req *http.Request) bool {
	if req == nil {
		return false
	}
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace,
		http.MethodPut, http.MethodDelete:
		return true
	}
	return hasHeader(req.Header, "Idempotency-Key") || hasHeader(req.Header, "X-Idempotency-Key")
}

// hasHeader reports whether h has key, also with a nil or empty value as
// net/http reads it.
func hasHeader(h http.Header, key string) bool {
	_, ok := h[key]
	return ok
}
