package backoffhttp

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
)

var raNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func TestCheckResponse(t *testing.T) {
	serverNow := raNow.Add(-time.Hour) // the local clock is an hour ahead of the server
	tests := []struct {
		name      string
		status    int
		header    http.Header
		wantNil   bool
		wantRetry bool
		wantDelay time.Duration
	}{
		{"ok", 200, nil, true, false, 0},
		{"redirect", 304, nil, true, false, 0},
		{"503 seconds", 503, http.Header{"Retry-After": {"3"}}, false, true, 3 * time.Second},
		{"429 date against server clock", 429, http.Header{
			"Retry-After": {serverNow.Add(20 * time.Second).Format(http.TimeFormat)},
			"Date":        {serverNow.Format(http.TimeFormat)},
		}, false, true, 20 * time.Second},
		{"503 garbage", 503, http.Header{"Retry-After": {"soon"}}, false, true, 0},
		{"399", 399, nil, true, false, 0},
		{"400", 400, nil, false, false, 0},
		{"404", 404, nil, false, false, 0},
		{"503 date, invalid Date header", 503, http.Header{
			"Retry-After": {"Mon, 01 Jan 2001 00:00:00 GMT"},
			"Date":        {"yesterday"},
		}, false, true, 0},
	}
	for _, tt := range tests {
		resp := &http.Response{StatusCode: tt.status, Status: http.StatusText(tt.status), Header: tt.header}
		if resp.Header == nil {
			resp.Header = http.Header{}
		}
		err := CheckResponse(resp)
		if tt.wantNil {
			if err != nil {
				t.Errorf("%s: CheckResponse = %v", tt.name, err)
			}
			continue
		}
		var he *StatusError
		if !errors.As(err, &he) || backoff.Retryable(err) != tt.wantRetry || he.RetryAfter() != tt.wantDelay {
			t.Errorf("%s: CheckResponse = %#v, retryable %v", tt.name, err, backoff.Retryable(err))
		}
		if !strings.Contains(err.Error(), http.StatusText(tt.status)) {
			t.Errorf("%s: message %q", tt.name, err)
		}
	}
	var pe *backoff.ParamError
	if err := CheckResponse(nil); !errors.As(err, &pe) || pe.Param != "resp" {
		t.Errorf("CheckResponse(nil) = %v", err)
	}
	if got := (&StatusError{StatusCode: 503}).Error(); got != "HTTP 503" {
		t.Errorf("message without status line: %q", got)
	}
	var nilErr *StatusError
	if nilErr.Retryable() || nilErr.RetryAfter() != 0 || nilErr.Error() == "" || backoff.Retryable(nilErr) {
		t.Error("a nil *StatusError must be safe and not retryable")
	}
}

func TestCheckResponseFromServer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "2")
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var h interface{ RetryAfter() time.Duration }
	if err := CheckResponse(resp); !errors.As(err, &h) || h.RetryAfter() != 2*time.Second {
		t.Errorf("CheckResponse = %v", err)
	}
}

func TestRetryableStatus(t *testing.T) {
	for code, want := range map[int]bool{
		200: false, 400: false, 401: false, 403: false, 404: false, 408: true, 409: false, 425: true, 429: true,
		500: true, 501: false, 502: true, 503: true, 504: true, 505: false,
	} {
		if got := RetryableStatus(code); got != want {
			t.Errorf("status %d retryable = %v, want %v", code, got, want)
		}
		if got := (&StatusError{StatusCode: code}).Retryable(); got != want {
			t.Errorf("StatusError{%d}.Retryable() = %v, want %v", code, got, want)
		}
	}
}
