package backoffhttp

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
)

// every800ms waits 800 ms before each retry, for up to 5 attempts.
var every800ms = backoff.Must(backoff.NewExponential(backoff.Config{Base: 800 * time.Millisecond, Cap: 800 * time.Millisecond, MaxAttempts: 5}))

// TestTransportDrainDoesNotDelay: a 503 whose body stalls (Content-Length
// 10, no byte sent) does not delay the retry, nor the decision that a
// retry could not start before the deadline, which returns the last 503.
// With a deadline of 1.5 s and waits of 800 ms, the second 503 comes back
// at 800 ms, since a third attempt could not start before 1.6 s; when the
// drain held the RoundTrip up for its second, the caller got a nil
// response and the deadline's error at 1.5 s. The default Transport under
// a 2 s deadline returns a 503 before the deadline too, where it took the
// whole 2 s and returned nil.
func TestTransportDrainDoesNotDelay(t *testing.T) {
	tests := []struct {
		name     string
		policy   backoff.Policy
		deadline time.Duration
		attempts int32         // 0: any
		elapsed  time.Duration // 0: any below the deadline
	}{
		{"waits of 800 ms, deadline 1.5 s", every800ms, 1500 * time.Millisecond, 2, 800 * time.Millisecond},
		{"the default policy, deadline 2 s", defaultPolicy, 2 * time.Second, 0, 0},
	}
	for _, tt := range tests {
		for _, timeout := range []time.Duration{0, time.Hour} {
			t.Run(tt.name+"/AttemptTimeout="+timeout.String(), func(t *testing.T) {
				var n atomic.Int32
				inBubble(t, playFaults(&n, stall(503)), func(t *testing.T, base *http.Transport) {
					ctx, cancel := context.WithTimeout(context.Background(), tt.deadline)
					defer cancel()
					c := &counter{base: base}
					var doneErr error
					tr := &Transport{Base: c, AttemptTimeout: timeout, Retrier: &backoff.Retrier{Policy: tt.policy,
						OnDone: func(_ context.Context, _ int, err error) { doneErr = err }}}
					req, _ := http.NewRequestWithContext(ctx, "GET", "http://pipe/", nil)
					start := time.Now()
					resp, err := tr.RoundTrip(req)
					elapsed := time.Since(start)
					if err != nil || resp == nil || resp.StatusCode != 503 || !errors.Is(doneErr, backoff.ErrDeadline) && !errors.Is(doneErr, backoff.ErrExhausted) {
						t.Fatalf("RoundTrip = %v, %v (OnDone: %v) after %v; want the last 503", resp, err, doneErr, elapsed)
					}
					resp.Body.Close()
					if tt.attempts > 0 && (n.Load() != tt.attempts || elapsed != tt.elapsed || !errors.Is(doneErr, backoff.ErrDeadline)) {
						t.Errorf("%d attempts in %v, %v; want %d in %v, ErrDeadline", n.Load(), elapsed, doneErr, tt.attempts, tt.elapsed)
					}
					if elapsed >= tt.deadline {
						t.Errorf("returned after %v, at the deadline", elapsed)
					}
					c.check(t, int(n.Load()))
				})
			})
		}
	}
}

// TestTransportDrainDoesNotDelayReal is the first case of
// TestTransportDrainDoesNotDelay on real sockets, over HTTP/1.1 and
// HTTP/2.
func TestTransportDrainDoesNotDelayReal(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		t.Run(map[bool]string{false: "HTTP/1.1", true: "HTTP/2"}[h2], func(t *testing.T) {
			t.Parallel()
			var n atomic.Int32
			srv := startServer(t, h2, playFaults(&n, stall(503)))
			ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
			defer cancel()
			c := &counter{base: srv.Client().Transport}
			var doneErr error
			tr := &Transport{Base: c, Retrier: &backoff.Retrier{Policy: every800ms, OnDone: func(_ context.Context, _ int, err error) { doneErr = err }}}
			req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
			resp, err := tr.RoundTrip(req)
			if err != nil || resp.StatusCode != 503 || n.Load() != 2 || !errors.Is(doneErr, backoff.ErrDeadline) {
				t.Fatalf("RoundTrip = %v, %v after %d attempts (OnDone: %v); want the second 503, ErrDeadline", resp, err, n.Load(), doneErr)
			}
			resp.Body.Close()
			c.check(t, 2)
		})
	}
}
