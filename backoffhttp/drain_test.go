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

// TestTransportClosesOnce counts the Close calls of every response body,
// on the paths where the caller cancels during the wait or during the
// drain (where each body was closed twice) and on the others.
func TestTransportClosesOnce(t *testing.T) {
	tests := []struct {
		name     string
		faults   []fault
		cancelAt time.Duration // when the caller cancels; 0: never
		onRetry  bool          // the caller cancels in OnRetry
		bodies   int
		wantErr  error // nil: want a response
	}{
		{name: "cancel during the wait", faults: []fault{status(503)}, onRetry: true, bodies: 1, wantErr: context.Canceled},
		{name: "cancel during the drain and the wait", faults: []fault{stall(503)}, cancelAt: 100 * time.Millisecond, bodies: 1, wantErr: context.Canceled},
		{name: "retried twice, then 200", faults: []fault{status(503), status(500), ok("hi")}, bodies: 3},
		{name: "given up: the last 503 returned", faults: []fault{status(503)}, bodies: 3},
		{name: "not retried", faults: []fault{status(404)}, bodies: 1},
	}
	for _, tt := range tests {
		for _, timeout := range []time.Duration{0, time.Hour} {
			t.Run(tt.name+"/AttemptTimeout="+timeout.String(), func(t *testing.T) {
				var n atomic.Int32
				inBubble(t, playFaults(&n, tt.faults...), func(t *testing.T, base *http.Transport) {
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					if tt.cancelAt > 0 {
						time.AfterFunc(tt.cancelAt, cancel)
					}
					c := &counter{base: base}
					tr := &Transport{Base: c, Retrier: retrier(minute), AttemptTimeout: timeout}
					if tt.onRetry {
						tr.Retrier.OnRetry = func(context.Context, int, error, time.Duration) { cancel() }
					}
					req, _ := http.NewRequestWithContext(ctx, "GET", "http://pipe/", nil)
					resp, err := tr.RoundTrip(req)
					if tt.wantErr != nil {
						if resp != nil || !errors.Is(err, tt.wantErr) {
							t.Errorf("RoundTrip = %v, %v; want %v", resp, err, tt.wantErr)
						}
					} else if err != nil {
						t.Errorf("RoundTrip: %v", err)
					} else {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
					c.check(t, tt.bodies)
				})
			})
		}
	}
}

// TestTransportStalledBody: a retryable status whose body never comes
// does not hold the RoundTrip up, whatever AttemptTimeout is: each drain
// runs beside the wait and ends after drainTimeout, the waits are the
// policy's alone (each drain added drainTimeout to them), and the last 503
// is returned as a plain client would return it.
func TestTransportStalledBody(t *testing.T) {
	for _, timeout := range []time.Duration{0, time.Hour} {
		t.Run("AttemptTimeout="+timeout.String(), func(t *testing.T) {
			var n atomic.Int32
			inBubble(t, playFaults(&n, stall(503)), func(t *testing.T, base *http.Transport) {
				// A deadline far away, so that the old hang ends and fails.
				ctx, cancel := context.WithTimeout(context.Background(), 24*time.Hour)
				defer cancel()
				c := &counter{base: base}
				var doneErr error
				tr := &Transport{Base: c, AttemptTimeout: timeout, Retrier: &backoff.Retrier{Policy: minute,
					OnDone: func(_ context.Context, _ int, err error) { doneErr = err }}}
				req, _ := http.NewRequestWithContext(ctx, "GET", "http://pipe/", nil)
				start := time.Now()
				resp, err := tr.RoundTrip(req)
				elapsed := time.Since(start)
				if err != nil || resp == nil || resp.StatusCode != 503 || !errors.Is(doneErr, backoff.ErrExhausted) {
					t.Fatalf("RoundTrip = %v, %v (OnDone: %v) after %v; want the last 503", resp, err, doneErr, elapsed)
				}
				resp.Body.Close()
				if want := 2 * time.Minute; elapsed != want || n.Load() != 3 {
					t.Errorf("%d attempts in %v; want 3 in %v", n.Load(), elapsed, want)
				}
				c.check(t, 3)
			})
		})
	}
}

// TestTransportStalledBodyReal is TestTransportStalledBody on real sockets,
// over HTTP/1.1 and HTTP/2: the RoundTrip does not wait for the drain, and
// closing a body from the drain's timer ends the read that waits on it.
func TestTransportStalledBodyReal(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		name := "HTTP/1.1"
		if h2 {
			name = "HTTP/2"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var n atomic.Int32
			srv := startServer(t, h2, playFaults(&n, stall(503)))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c := &counter{base: srv.Client().Transport}
			two := backoff.Must(backoff.NewExponential(backoff.Config{Base: time.Millisecond, Cap: time.Millisecond, MaxAttempts: 2}))
			req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
			start := time.Now()
			resp, err := (&Transport{Base: c, Retrier: retrier(two)}).RoundTrip(req)
			if err != nil || resp.StatusCode != 503 || resp.ProtoMajor != map[bool]int{false: 1, true: 2}[h2] {
				t.Fatalf("RoundTrip = %v, %v after %v; want the last 503", resp, err, time.Since(start))
			}
			resp.Body.Close()
			if elapsed := time.Since(start); elapsed >= drainTimeout {
				t.Errorf("RoundTrip took %v; want less than the drain's %v", elapsed, drainTimeout)
			}
			c.check(t, 2)
		})
	}
}

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

// TestTransportDrainDoesNotHoldTheRetry: a base transport that may open
// one connection per host (MaxConnsPerHost 1) has no other connection for
// a retry while the drain of the last 503 holds its own: the retry closes
// that body first, and the 4 attempts of a stalled 503 with waits of
// 10 ms take 30 ms, where each retry used to wait for the drain's second
// (3 s). Each body is closed exactly once.
func TestTransportDrainDoesNotHoldTheRetry(t *testing.T) {
	every10ms := backoff.Must(backoff.NewExponential(backoff.Config{Base: 10 * time.Millisecond, Cap: 10 * time.Millisecond, MaxAttempts: 4}))
	for _, timeout := range []time.Duration{0, time.Hour} {
		t.Run("AttemptTimeout="+timeout.String(), func(t *testing.T) {
			var n atomic.Int32
			inBubble(t, playFaults(&n, stall(503)), func(t *testing.T, base *http.Transport) {
				base.MaxConnsPerHost = 1
				c := &counter{base: base}
				tr := &Transport{Base: c, Retrier: retrier(every10ms), AttemptTimeout: timeout}
				req, _ := http.NewRequest("GET", "http://pipe/", nil)
				start := time.Now()
				resp, err := tr.RoundTrip(req)
				elapsed := time.Since(start)
				if err != nil || resp.StatusCode != 503 {
					t.Fatalf("RoundTrip = %v, %v; want the last 503", resp, err)
				}
				resp.Body.Close()
				if n.Load() != 4 || elapsed != 30*time.Millisecond {
					t.Errorf("%d attempts in %v; want 4 in 30ms", n.Load(), elapsed)
				}
				c.check(t, 4)
			})
		})
	}
}

// TestTransportGivesBack: with AttemptTimeout set, every attempt's context
// is done once its failure is known, once its response has been discarded
// (drained and closed, or an http.NoBody), and once the caller closes the
// body of the response returned, and not before; every body is closed
// exactly once, the response held when the context ends after a give-up
// included; the connection of every response that ended goes back to the
// pool: a request made afterwards over the same transport opens no
// connection. (No goroutine is left: synctest.Test fails when one outlives
// the bubble's server and transport.)
func TestTransportGivesBack(t *testing.T) {
	empty := func(code int) fault { return func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(code) } }
	tests := []struct {
		name     string
		faults   []fault
		cancelAt int  // the caller cancels when this attempt's response is in; 0: never
		returned bool // RoundTrip returns a response
		bodies   int  // bodies other than http.NoBody
		dials    int  // connections opened, the request made afterwards included; 0: either 1 or 2
	}{
		{name: "200", faults: []fault{ok("hi")}, returned: true, bodies: 1, dials: 1},
		{name: "503 discarded, then 200", faults: []fault{status(503), ok("hi")}, returned: true, bodies: 2, dials: 1},
		{name: "empty 503 (http.NoBody) discarded, then 200", faults: []fault{empty(503), ok("hi")}, returned: true, bodies: 1, dials: 1},
		{name: "connection reset, then 200", faults: []fault{resetMidResponse, ok("hi")}, returned: true, bodies: 1, dials: 2},
		{name: "gave up: the last 503 returned", faults: []fault{status(503)}, returned: true, bodies: 3, dials: 1},
		{name: "gave up: the last empty 503 returned", faults: []fault{empty(503)}, returned: true, bodies: 0, dials: 1},
		// net/http closes a connection whose request's context ends
		// while its body is read, unless it has just read it to its end.
		{name: "the context ends as the 503 arrives", faults: []fault{status(503)}, cancelAt: 1, bodies: 1},
		{name: "the context ends as the last 503 arrives", faults: []fault{status(503)}, cancelAt: 3, bodies: 3},
	}
	for _, tt := range tests {
		for _, timeout := range []time.Duration{0, time.Hour} {
			t.Run(tt.name+"/AttemptTimeout="+timeout.String(), func(t *testing.T) {
				var n atomic.Int32
				inBubble(t, playFaults(&n, tt.faults...), func(t *testing.T, base *http.Transport) {
					dials := countDials(base)
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					a := &attempts{counter: counter{base: base}, afterAttempt: tt.cancelAt, then: cancel}
					tr := &Transport{Base: a, Retrier: retrier(minute), AttemptTimeout: timeout}
					req, _ := http.NewRequestWithContext(ctx, "GET", "http://pipe/", nil)
					resp, err := tr.RoundTrip(req)
					if tt.returned != (resp != nil) || tt.returned != (err == nil) {
						t.Fatalf("RoundTrip = %v, %v; want a response: %v", resp, err, tt.returned)
					}
					if tt.cancelAt > 0 && !errors.Is(err, context.Canceled) {
						t.Errorf("RoundTrip: %v; want context.Canceled", err)
					}
					synctest.Wait()
					last := len(a.ctxs) - 1
					if resp != nil {
						if timeout > 0 && a.ctxs[last].Err() != nil {
							t.Errorf("the returned response's attempt context is done before its body is closed: %v", context.Cause(a.ctxs[last]))
						}
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
					a.check(t, tt.bodies) // waits for the drains
					synctest.Wait()
					if timeout > 0 {
						a.checkDone(t)
					}
					// A request made afterwards finds the connection idle.
					after, err := base.RoundTrip(must(http.NewRequest("GET", "http://pipe/", nil)))
					if err != nil {
						t.Fatal(err)
					}
					io.Copy(io.Discard, after.Body)
					after.Body.Close()
					if got := dials.Load(); got != int32(tt.dials) && (tt.dials != 0 || got > 2) {
						t.Errorf("%d connections opened; want %d", got, tt.dials)
					}
				})
			})
		}
	}
}
