package backoffhttp

import (
	"net/http"
	"strconv"
	"time"

	"github.com/backoffgo/backoff"
)

// Error reports an HTTP response whose status is an error (400 or above).
// It is retryable (see [backoff.Retryable]) for the transient statuses
// (408 Request Timeout, 425 Too Early, 429 Too Many Requests, 500, 502, 503
// and 504) and permanent for every other, and it carries the response's
// Retry-After for [backoff.RetryAfter]. When a retry loop has retried the
// response already (its server's, said by [DontRetryHeader], or a
// [Transport]'s, which returned it after retrying), it unwraps to
// [backoff.ErrRetriedBelow], so that a loop around it does not retry it
// again. Its methods are safe on a nil *Error.
type Error struct {
	StatusCode   int           // the response's status code
	Status       string        // the response's status line, e.g. "503 Service Unavailable"
	Delay        time.Duration // the parsed Retry-After; 0 when absent or invalid
	RetriedBelow bool          // a retry loop below retried the response already
}

// CheckResponse returns nil for a response with a status below 400, and an
// *[Error] otherwise. It parses Retry-After relative to the response's Date
// header when that is a valid HTTP-date, and to the local clock when not. It
// does not read or close the body; that stays the caller's job. A nil resp is
// reported as a *[backoff.ParamError].
func CheckResponse(resp *http.Response) error {
	if resp == nil {
		return &backoff.ParamError{Param: "resp", Value: nil, Reason: "must not be nil"}
	}
	if resp.StatusCode < 400 {
		return nil
	}
	e := statusError(resp)
	return &e
}

// statusError describes resp's status as an Error.
func statusError(resp *http.Response) Error {
	return Error{StatusCode: resp.StatusCode, Status: resp.Status, Delay: retryAfter(resp.Header), RetriedBelow: backoff.Retried(GaveUp(resp)) || dontRetry(resp)}
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

func (e *Error) Error() string {
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
func (e *Error) Retryable() bool {
	return e != nil && RetryableStatus(e.StatusCode)
}

// Unwrap returns [backoff.ErrRetriedBelow] when the server said it retried
// already, and nil otherwise.
func (e *Error) Unwrap() error {
	if e == nil || !e.RetriedBelow {
		return nil
	}
	return backoff.ErrRetriedBelow
}

// RetryAfter returns the delay the server asked for, or 0.
func (e *Error) RetryAfter() time.Duration {
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
