package backoff

import (
	"net/http"
	"strconv"
	"time"
)

// HTTPError reports an HTTP response whose status is an error (400 or
// above). It is [Retryable] for the transient statuses (408 Request Timeout,
// 425 Too Early, 429 Too Many Requests, 500, 502, 503 and 504) and permanent
// for every other, and it carries the response's Retry-After as a [Hint].
type HTTPError struct {
	StatusCode int           // the response's status code
	Status     string        // the response's status line, e.g. "503 Service Unavailable"
	Delay      time.Duration // the parsed Retry-After; 0 when absent or invalid
}

// CheckResponse returns nil for a response with a status below 400, and an
// *[HTTPError] otherwise. It parses Retry-After relative to the response's
// Date header when that is valid, and to the local clock when not. It does
// not read or close the body; that stays the caller's job. A nil resp is
// reported as a *[ParamError].
func CheckResponse(resp *http.Response) error {
	if resp == nil {
		return &ParamError{Param: "resp", Value: nil, Reason: "must not be nil"}
	}
	if resp.StatusCode < 400 {
		return nil
	}
	now, err := http.ParseTime(resp.Header.Get("Date"))
	if err != nil {
		now = time.Now()
	}
	delay, _ := ParseRetryAfter(resp.Header.Get("Retry-After"), now)
	return &HTTPError{StatusCode: resp.StatusCode, Status: resp.Status, Delay: delay}
}

func (e *HTTPError) Error() string {
	status := e.Status
	if status == "" {
		status = strconv.Itoa(e.StatusCode)
	}
	return "backoff: HTTP " + status
}

// Retryable reports whether the status is one worth retrying.
func (e *HTTPError) Retryable() bool {
	switch e.StatusCode {
	case http.StatusRequestTimeout, http.StatusTooEarly, http.StatusTooManyRequests,
		http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// RetryAfter returns the delay the server asked for, or 0.
func (e *HTTPError) RetryAfter() time.Duration { return e.Delay }
