package backoffhttp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/backoffgo/backoff"
)

// nilBodies is a base transport that answers codes[i] to attempt i (the
// last one to every later attempt), each response with a nil Body, as
// RoundTrippers written for tests often do, and counts the attempts.
func nilBodies(n *atomic.Int32, codes ...int) roundTripperFunc {
	return func(req *http.Request) (*http.Response, error) {
		i := int(n.Add(1))
		code := codes[min(i, len(codes))-1]
		return &http.Response{StatusCode: code, Status: http.StatusText(code), Header: http.Header{}, Request: req}, nil
	}
}

// TestTransportNilBody: a base transport may return a response with a nil
// Body, which http.Client takes for an empty one; the Transport does too,
// on every path: retried, returned, returned after AttemptTimeout fired,
// discarded when the caller cancels. Each used to panic, in the drain or
// on the first Read or Close, and the drain's timer called Close on nil on
// a goroutine of its own, which no recover reaches. In a bubble, any
// goroutine left behind would fail the test.
func TestTransportNilBody(t *testing.T) {
	tests := []struct {
		name     string
		codes    []int
		timeout  time.Duration
		late     time.Duration // the base returns this long after AttemptTimeout began
		cancel   bool          // the caller cancels in OnRetry
		cancelAs bool          // the caller cancels as the response comes
		attempts int32
		want     int // the status returned, unless the caller cancels
	}{
		{name: "503, then 200", codes: []int{503, 200}, attempts: 2, want: 200},
		{name: "503, then 200, AttemptTimeout", codes: []int{503, 200}, timeout: time.Hour, attempts: 2, want: 200},
		{name: "200, AttemptTimeout", codes: []int{200}, timeout: time.Hour, attempts: 1, want: 200},
		{name: "200 after AttemptTimeout fired", codes: []int{200}, timeout: time.Second, late: 2 * time.Second, attempts: 1, want: 200},
		{name: "503 given up", codes: []int{503}, attempts: 3, want: 503},
		{name: "503 given up, AttemptTimeout", codes: []int{503}, timeout: time.Hour, attempts: 3, want: 503},
		{name: "503 discarded on cancel", codes: []int{503}, cancel: true, attempts: 1},
		{name: "503 discarded on cancel, AttemptTimeout", codes: []int{503}, timeout: time.Hour, cancel: true, attempts: 1},
		{name: "503 discarded on a cancel as it comes", codes: []int{503}, cancelAs: true, attempts: 1},
		{name: "503 discarded on a cancel as it comes, AttemptTimeout", codes: []int{503}, timeout: time.Hour, cancelAs: true, attempts: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var n atomic.Int32
				var base http.RoundTripper = nilBodies(&n, tt.codes...)
				if tt.late > 0 {
					base = lateBy(base, tt.late)
				}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if tt.cancelAs {
					inner := base
					base = roundTripperFunc(func(req *http.Request) (*http.Response, error) {
						defer cancel()
						return inner.RoundTrip(req)
					})
				}
				tr := &Transport{Base: base, Retrier: retrier(minute), AttemptTimeout: tt.timeout}
				if tt.cancel {
					tr.Retrier.OnRetry = func(context.Context, int, error, time.Duration) { cancel() }
				}
				req, _ := http.NewRequestWithContext(ctx, "GET", "http://example.test/", nil)
				resp, err := tr.RoundTrip(req)
				if tt.cancel || tt.cancelAs {
					if resp != nil || !errors.Is(err, context.Canceled) {
						t.Errorf("RoundTrip = %v, %v; want context.Canceled", resp, err)
					}
				} else {
					if err != nil || resp == nil || resp.StatusCode != tt.want {
						t.Fatalf("RoundTrip = %v, %v; want %d", resp, err, tt.want)
					}
					if b, err := io.ReadAll(resp.Body); err != nil || len(b) != 0 {
						t.Errorf("reading the body: %q, %v; want it empty", b, err)
					}
					if err := resp.Body.Close(); err != nil {
						t.Errorf("closing the body: %v", err)
					}
				}
				if n.Load() != tt.attempts {
					t.Errorf("%d attempts; want %d", n.Load(), tt.attempts)
				}
				time.Sleep(2 * drainTimeout) // a drain's timer would fire by then
			})
		})
	}
}

// TestTransportNilResponse: a base transport that returns neither a
// response nor an error (http.Client reports it as an error) fails the
// attempt, which is not retried, instead of a panic; also when it comes
// after AttemptTimeout fired.
func TestTransportNilResponse(t *testing.T) {
	for _, tt := range []struct{ timeout, late time.Duration }{{0, 0}, {time.Hour, 0}, {time.Second, 2 * time.Second}} {
		synctest.Test(t, func(t *testing.T) {
			var n atomic.Int32
			base := lateBy(roundTripperFunc(func(*http.Request) (*http.Response, error) { n.Add(1); return nil, nil }), tt.late)
			req, _ := http.NewRequest("GET", "http://example.test/", nil)
			resp, err := (&Transport{Base: base, Retrier: retrier(minute), AttemptTimeout: tt.timeout}).RoundTrip(req)
			want := "backoff: stopped after 1 attempt (error is not retryable): backoffhttp: Transport.Base returned a nil *http.Response and a nil error"
			if resp != nil || !errors.Is(err, backoff.ErrPermanent) || err.Error() != want || n.Load() != 1 {
				t.Errorf("RoundTrip = %v, %v after %d attempts; want %q", resp, err, n.Load(), want)
			}
		})
	}
}
