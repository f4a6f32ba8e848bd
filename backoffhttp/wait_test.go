package backoffhttp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
)

// TestTransportCancelWait: cancelling the request's context ends a long
// wait at once, and the response waiting to be retried is closed.
func TestTransportCancelWait(t *testing.T) {
	for _, tt := range []struct {
		fault  fault
		bodies int
	}{{status(503, "Retry-After", "3600"), 1}, {resetMidResponse, 0}} {
		srv := newServer(t, tt.fault)
		hour := backoff.PolicyFunc(func(int, error) (time.Duration, error) { return time.Hour, nil })
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
		base := &counter{base: srv.Client().Transport}
		tr := &Transport{Base: base, MaxRetryAfter: time.Hour, Retrier: &backoff.Retrier{Policy: hour,
			OnRetry: func(context.Context, int, error, time.Duration) { cancel() }}}
		start := time.Now()
		resp, err := tr.RoundTrip(req)
		if elapsed := time.Since(start); elapsed > 5*time.Second {
			t.Errorf("RoundTrip returned %v after the cancellation", elapsed)
		}
		if resp != nil || !errors.Is(err, context.Canceled) {
			t.Errorf("RoundTrip = %v, %v; want context.Canceled", resp, err)
		}
		if srv.attempts.Load() != 1 {
			t.Errorf("server saw %d attempts; want 1", srv.attempts.Load())
		}
		base.check(t, tt.bodies) // the response waiting to be retried, if any, is closed
	}
	// A cancellation during an attempt ends it at once, without a retry.
	srv0 := newServer(t, slow(time.Minute))
	ctx0, cancel0 := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel0)
	req0, _ := http.NewRequestWithContext(ctx0, "GET", srv0.URL, nil)
	start := time.Now()
	r0 := roundTrip(t, &Transport{Base: srv0.Client().Transport, Retrier: retrier(fast)}, req0)
	if elapsed := time.Since(start); elapsed > 5*time.Second || r0.resp != nil || !errors.Is(r0.err, context.Canceled) || r0.attempts != 1 {
		t.Errorf("after %v: %v, %v after %d attempts; want context.Canceled after 1", elapsed, r0.resp, r0.err, r0.attempts)
	}
	// A context done before the first attempt: nothing is sent.
	srv := newServer(t, ok("hi"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	body := &closeRecorder{Reader: strings.NewReader("x")}
	req, _ := http.NewRequestWithContext(ctx, "PUT", srv.URL, body)
	r := roundTrip(t, &Transport{Base: srv.Client().Transport}, req)
	if !errors.Is(r.err, context.Canceled) || r.attempts != 0 || srv.attempts.Load() != 0 || !body.closed {
		t.Errorf("RoundTrip = %v after %d attempts, body closed %v; want context.Canceled, none, closed", r.err, r.attempts, body.closed)
	}
}

// TestTransportDeadline: a retry that would start after the context's
// deadline is not waited for.
func TestTransportDeadline(t *testing.T) {
	for _, tt := range []struct {
		fault      fault
		wantStatus int
	}{{status(503, "Retry-After", "120"), 503}, {resetMidResponse, 0}} {
		srv := newServer(t, tt.fault)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
		slowPolicy := backoff.PolicyFunc(func(int, error) (time.Duration, error) { return 2 * time.Minute, nil })
		start := time.Now()
		r := roundTrip(t, &Transport{Base: srv.Client().Transport, Retrier: retrier(slowPolicy), MaxRetryAfter: time.Hour}, req)
		cancel()
		if time.Since(start) > 5*time.Second || !errors.Is(r.doneErr, backoff.ErrDeadline) || r.attempts != 1 {
			t.Errorf("after %v: %d attempts, OnDone %v; want ErrDeadline at once", time.Since(start), r.attempts, r.doneErr)
		}
		if tt.wantStatus != 0 && (r.err != nil || r.resp.StatusCode != tt.wantStatus) {
			t.Errorf("RoundTrip = %v, %v; want the 503", r.resp, r.err)
		}
		if tt.wantStatus == 0 && (r.resp != nil || !errors.Is(r.err, context.DeadlineExceeded)) {
			t.Errorf("RoundTrip = %v, %v; want ErrDeadline", r.resp, r.err)
		}
	}
}

// TestTransportLongRetryAfter: a Retry-After longer than MaxRetryAfter
// gives up by default and returns the response (RFC 9110, section 10.2.3:
// the client ought to wait that long); ClampRetryAfter waits MaxRetryAfter
// instead.
func TestTransportLongRetryAfter(t *testing.T) {
	tests := []struct {
		name     string
		tr       *Transport
		want     error
		attempts int32
		elapsed  time.Duration
	}{
		{"default: give up", &Transport{}, backoff.ErrHintTooLong, 1, 0},
		{"over MaxRetryAfter: give up", &Transport{Retrier: retrier(minute), MaxRetryAfter: 10 * time.Minute}, backoff.ErrHintTooLong, 1, 0},
		{"within MaxRetryAfter: wait", &Transport{Retrier: retrier(minute), MaxRetryAfter: 2 * time.Hour}, backoff.ErrExhausted, 3, 2 * time.Hour},
		{"ClampRetryAfter: wait the cap", &Transport{Retrier: retrier(minute), ClampRetryAfter: true}, backoff.ErrExhausted, 3, 2 * DefaultMaxRetryAfter},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n atomic.Int32
			inBubble(t, playFaults(&n, status(503, "Retry-After", "3600")), func(t *testing.T, base *http.Transport) {
				tr := tt.tr
				tr.Base = base
				req, _ := http.NewRequest("GET", "http://pipe/", nil)
				start := time.Now()
				r := roundTrip(t, tr, req)
				if r.err != nil || r.resp.StatusCode != 503 || r.body != "status Service Unavailable" || !errors.Is(r.doneErr, tt.want) {
					t.Errorf("RoundTrip = %v, %v (OnDone: %v); want the 503 and %v", r.resp, r.err, r.doneErr, tt.want)
				}
				if elapsed := time.Since(start); n.Load() != tt.attempts || elapsed != tt.elapsed {
					t.Errorf("%d attempts in %v; want %d in %v", n.Load(), elapsed, tt.attempts, tt.elapsed)
				}
			})
		})
	}
}

// TestTransportWaits checks the waits between attempts to the nanosecond:
// Retry-After in seconds and as a date, clamped with ClampRetryAfter,
// measured from the response's Date, and ignored when invalid or zero.
func TestTransportWaits(t *testing.T) {
	tests := []struct {
		name          string
		retryAfter    func(now time.Time) string
		serverBehind  time.Duration // the server's clock runs this much late, in its Date header
		maxRetryAfter time.Duration
		want          time.Duration
		clamp         bool // ClampRetryAfter
	}{
		{"seconds", func(time.Time) string { return "7" }, 0, 0, 7 * time.Second, false},
		{"seconds at the default cap", func(time.Time) string { return "30" }, 0, 0, DefaultMaxRetryAfter, false},
		{"seconds over the default cap, clamped", func(time.Time) string { return "3600" }, 0, 0, DefaultMaxRetryAfter, true},
		{"seconds over MaxRetryAfter, clamped", func(time.Time) string { return "10" }, 0, 3 * time.Second, 3 * time.Second, true},
		{"a date", func(now time.Time) string { return now.Add(12 * time.Second).Format(http.TimeFormat) }, 0, 0, 12 * time.Second, false},
		{"a date a day ahead, clamped", func(now time.Time) string { return now.Add(24 * time.Hour).Format(http.TimeFormat) }, 0, 0, DefaultMaxRetryAfter, true},
		{"a date from a server an hour late", func(now time.Time) string { return now.Add(5 * time.Second).Format(http.TimeFormat) },
			time.Hour, 0, 5 * time.Second, false},
		{"zero: the policy's wait", func(time.Time) string { return "0" }, 0, 0, time.Minute, false},
		{"invalid: the policy's wait", func(time.Time) string { return "soon" }, 0, 0, time.Minute, false},
		{"none: the policy's wait", nil, 0, 0, time.Minute, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen []time.Time
			handler := func(w http.ResponseWriter, r *http.Request) {
				seen = append(seen, time.Now())
				if len(seen) == 2 {
					io.WriteString(w, "ok")
					return
				}
				serverNow := time.Now().Add(-tt.serverBehind)
				w.Header().Set("Date", serverNow.UTC().Format(http.TimeFormat))
				if tt.retryAfter != nil {
					w.Header().Set("Retry-After", tt.retryAfter(serverNow.UTC()))
				}
				w.WriteHeader(http.StatusServiceUnavailable)
			}
			inBubble(t, handler, func(t *testing.T, base *http.Transport) {
				req, _ := http.NewRequest("GET", "http://pipe/", nil)
				r := roundTrip(t, &Transport{Base: base, Retrier: retrier(minute), MaxRetryAfter: tt.maxRetryAfter, ClampRetryAfter: tt.clamp}, req)
				if r.err != nil || r.body != "ok" || len(seen) != 2 {
					t.Fatalf("RoundTrip = %q, %v after %d attempts", r.body, r.err, len(seen))
				}
				if got := seen[1].Sub(seen[0]); got != tt.want {
					t.Errorf("waited %v; want %v", got, tt.want)
				}
			})
		})
	}
}

// TestTransportWaitEnds checks when a wait ends early: at once when the
// next attempt could not start before the deadline, at the moment the
// request's context is cancelled.
func TestTransportWaitEnds(t *testing.T) {
	unavailable := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "20")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, "busy")
	}
	t.Run("deadline", func(t *testing.T) {
		inBubble(t, unavailable, func(t *testing.T, base *http.Transport) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", "http://pipe/", nil)
			start := time.Now()
			r := roundTrip(t, &Transport{Base: base, Retrier: retrier(minute)}, req)
			if time.Since(start) != 0 || r.err != nil || r.resp.StatusCode != 503 || r.body != "busy" || !errors.Is(r.doneErr, backoff.ErrDeadline) {
				t.Errorf("after %v: %v, %q, %v (OnDone: %v); want the 503 at once, ErrDeadline", time.Since(start), r.resp, r.body, r.err, r.doneErr)
			}
		})
	})
	t.Run("cancel", func(t *testing.T) {
		inBubble(t, unavailable, func(t *testing.T, base *http.Transport) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(3*time.Second, cancel)
			req, _ := http.NewRequestWithContext(ctx, "GET", "http://pipe/", nil)
			start := time.Now()
			r := roundTrip(t, &Transport{Base: base, Retrier: retrier(minute)}, req)
			if time.Since(start) != 3*time.Second || r.resp != nil || !errors.Is(r.err, context.Canceled) {
				t.Errorf("after %v: %v, %v; want context.Canceled after 3s", time.Since(start), r.resp, r.err)
			}
		})
	})
}
