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
// It is read strictly: a response says "don't retry" when its status is 400
// or more and it carries the header exactly once with the value "true" in
// any ASCII case; "false", any other value, a repeated header or a status
// below 400 is not the signal. The rule is the same for every status: a
// Transport returns such a response at once, whatever its status ([StatusError]
// and the reason [backoff.ErrRetriedBelow] say why), unless its RetryInner
// is set, and the *[StatusError] of CheckResponse unwraps to
// [backoff.ErrRetriedBelow].
//
// Envoy's router (its router filter docs, v1.25.5) does not retry a
// response that carries x-envoy-ratelimited unless its retry_on includes
// envoy-ratelimited; it reads only the header's presence, not its value,
// and its rate limit filter sets it on the requests it limits. Envoy
// retries x-envoy-overloaded by default since v1.15.0, so that header is
// neither sent nor read here. nginx (1.22) and HAProxy (2.6) read neither
// header: they pass both unchanged, and when set to retry 503s
// (proxy_next_upstream http_503, retry-on 503) they retry whatever
// x-envoy-ratelimited says, with the caller's attempt count (bash
// .ci/proxies tests both).
const DontRetryHeader = "X-Envoy-Ratelimited"

// AttemptCountHeader is the request header that says which attempt of a
// request this is: Envoy's x-envoy-attempt-count. A [Transport] sends it on
// each retry, with the attempt's number (2 for the first retry, then 3, …),
// replacing any value the request already carried; a first attempt is sent
// as the caller made it. [Handler] reads it to count the retries it
// receives: a request is a retry when it carries the header exactly once,
// with a decimal number of 2 or more; a missing or malformed count is a
// first attempt. [Attempt] reads it so.
//
// Envoy (route components docs, v1.34.0) sets the header on the requests it
// sends upstream only when the virtual host's include_request_attempt_count
// is true, and then overwrites any value already present with its own
// count: a server behind such an Envoy counts the retries of the Envoy
// closest to it.
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
//
// Under a [Transport] (in its Base, or a RoundTripper that Base wraps),
// Attempt returns each retry's number, 2 for the first; a first attempt is
// sent as the caller made it, so Attempt returns 1 for it unless the
// caller's request carried a count of its own. OpenTelemetry's
// http.request.resend_count of an attempt is Attempt − 1, set when that is
// positive.
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
