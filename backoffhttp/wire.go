package backoffhttp

import (
	"net/http"
	"strconv"
)

// DontRetryHeader is the response header by which a server tells its
// callers not to retry its answer: Envoy's x-envoy-ratelimited, with the
// value "true". [MarkFailure] and [Handler] send it; a [Transport] and
// [CheckResponse] read it.
//
// A response says "don't retry" when its status is 400 or more and it
// carries the header exactly once with the value "true" in any ASCII case;
// "false", any other value, a repeated header or a status below 400 is not
// the signal. A Transport returns such a response at once, whatever its
// status, with the reason [backoff.ErrRetriedBelow], unless its Retrier's
// RetryInner is set; the *[StatusError] of CheckResponse unwraps to
// [backoff.ErrRetriedBelow].
const DontRetryHeader = "X-Envoy-Ratelimited"

// AttemptCountHeader is the request header that says which attempt of a
// request this is: Envoy's x-envoy-attempt-count. A [Transport] sends it on
// each retry with the attempt's number (2 for the first retry, then 3, …),
// replacing any value the request carried; a first attempt is sent as the
// caller made it. [Attempt] reads it.
const AttemptCountHeader = "X-Envoy-Attempt-Count"

// dontRetry reports whether resp tells its caller not to retry it (see
// DontRetryHeader).
func dontRetry(resp *http.Response) bool {
	return failing(resp.StatusCode) && saysTrue(resp.Header[DontRetryHeader])
}

// failing reports whether a status is a failure that DontRetryHeader
// applies to.
func failing(code int) bool { return code >= 400 }

// saysTrue reports whether a header's values are the single value "true",
// in any ASCII case.
func saysTrue(values []string) bool {
	if len(values) != 1 || len(values[0]) != len("true") {
		return false
	}
	for i, c := range []byte(values[0]) {
		if c|0x20 != "true"[i] {
			return false
		}
	}
	return true
}

// Attempt returns the attempt number that req's [AttemptCountHeader] says:
// the header's number when req carries it exactly once as a decimal number
// of 2 or more (digits only, at most the largest int), and 1 otherwise: for
// a missing or malformed count, and for a nil req or Header. [Handler]
// counts a request as a retry exactly when Attempt returns 2 or more.
func Attempt(req *http.Request) int {
	if req == nil {
		return 1
	}
	v := req.Header[AttemptCountHeader]
	if len(v) != 1 || v[0] == "" {
		return 1
	}
	for _, c := range []byte(v[0]) {
		if c < '0' || c > '9' {
			return 1
		}
	}
	n, err := strconv.Atoi(v[0])
	if err != nil || n < 2 {
		return 1
	}
	return n
}

// attemptHeader returns a copy of h that says attempt n.
func attemptHeader(h http.Header, n int) http.Header {
	h = h.Clone()
	if h == nil {
		h = make(http.Header, 1)
	}
	h[AttemptCountHeader] = []string{strconv.Itoa(n)}
	return h
}
