package backoffhttp

import (
	"net/http"
	"strconv"
	"time"

	"github.com/backoffgo/backoff"
)

// StatusError reports an HTTP response's status as an error. [CheckResponse]
// makes one for a status of 400 or more; a [Transport], for every response
// to a repeatable request that its ShouldRetry retries, whatever the code:
// its Retrier's OnRetry gets it, and the *[backoff.Error] of a give-up on
// that response wraps it. It is retryable (see [backoff.Retryable]) for the statuses
// of [RetryableStatus] and permanent for every other, and it carries the
// response's Retry-After for [backoff.RetryAfter]. DontRetry is true when
// the status is 400 or more and the response carries [DontRetryHeader]
// once, with the value "true" in any ASCII case; it then unwraps to
// [backoff.ErrRetriedBelow], so that a loop around it does not retry it.
// Its methods are safe on a nil *StatusError.
type StatusError struct {
	StatusCode int           // the response's status code
	Status     string        // the response's status line, e.g. "503 Service Unavailable"
	Delay      time.Duration // Retry-After, from the response's Date when valid, else the local clock; 0 when absent or invalid
	DontRetry  bool          // the response said not to retry it, as above
}

// CheckResponse returns the *[backoff.Error] of a [Transport] that gave up
// on resp and returned it, which wraps the *[StatusError] of resp; for any
// other resp, a *StatusError when its status is 400 or more, and nil
// below. It does not read or close the body. A nil resp is reported as a
// *[backoff.ParamError].
//
// The Transport's give-up travels with resp.Request, a copy of the request
// sent whose context carries it, and holds for the response whose Header
// map it came with: it survives http.Client and middleware that wrap the
// body or copy the *http.Response, not one that replaces resp.Request or
// resp.Header. The response to resp.Request sent again is another one.
func CheckResponse(resp *http.Response) error {
	if resp == nil {
		return &backoff.ParamError{Param: "resp", Value: nil, Reason: "must not be nil"}
	}
	if g := gaveUpOn(resp); g != nil {
		return g
	}
	if resp.StatusCode < 400 {
		return nil
	}
	e := statusError(resp)
	return &e
}

// statusError describes resp's status as a StatusError.
func statusError(resp *http.Response) StatusError {
	return StatusError{StatusCode: resp.StatusCode, Status: resp.Status, Delay: retryAfter(resp.Header), DontRetry: dontRetry(resp)}
}

// retryAfter returns the delay a response's Retry-After asks for, measured
// from its Date header when valid and from the local clock otherwise; 0
// when there is none or it is invalid.
func retryAfter(h http.Header) time.Duration {
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	now, ok := parseHTTPDate(h.Get("Date"))
	if !ok {
		now = time.Now()
	}
	d, _ := ParseRetryAfter(v, now)
	return d
}

func (e *StatusError) Error() string {
	if e == nil {
		return "HTTP error <nil>"
	}
	status := e.Status
	if status == "" {
		status = strconv.Itoa(e.StatusCode)
	}
	return "HTTP " + status
}

// Retryable reports whether the status is one worth retrying.
func (e *StatusError) Retryable() bool {
	return e != nil && RetryableStatus(e.StatusCode)
}

// Unwrap returns [backoff.ErrRetriedBelow] when the response said
// [DontRetryHeader], and nil otherwise.
func (e *StatusError) Unwrap() error {
	if e == nil || !e.DontRetry {
		return nil
	}
	return backoff.ErrRetriedBelow
}

// RetryAfter returns the delay the server asked for, or 0.
func (e *StatusError) RetryAfter() time.Duration {
	if e == nil {
		return 0
	}
	return e.Delay
}

// RetryableStatus reports whether a response with this status code is worth
// retrying: 408, 425, 429, 500, 502, 503 and 504.
func RetryableStatus(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusTooEarly, http.StatusTooManyRequests,
		http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}
