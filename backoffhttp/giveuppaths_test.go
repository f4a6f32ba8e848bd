package backoffhttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/backoffgo/backoff"
)

// TestTransportGiveUpPaths goes through every way a Transport stops
// retrying a 503 and checks what "What RoundTrip returns" promises for it:
// exactly one of a response and an error, the last response (body unread,
// CheckResponse saying why) for a give-up on a status, every body closed exactly
// once, every attempt's context done once its response is closed or
// discarded, the connection back in the pool (a request made afterwards
// opens none), and no goroutine left (the bubble).
func TestTransportGiveUpPaths(t *testing.T) {
	breaker := errors.New("breaker open")
	withReason := backoff.PolicyFunc(func(attempt int, err error) (time.Duration, error) {
		if attempt >= 2 {
			return 0, breaker
		}
		return time.Minute, nil
	})
	both := errors.New("base: a response and an error")
	tests := []struct {
		name     string
		faults   []fault
		policy   backoff.Policy // nil: minute
		budget   func() *backoff.Budget
		deadline time.Duration // the request's timeout; 0: none
		cancelAt time.Duration // the caller cancels then; 0: never
		onRetry  time.Duration // how long OnRetry takes; 0: no OnRetry
		base     func(http.RoundTripper) http.RoundTripper
		wantResp bool
		reason   error // OnDone's reason (and CheckResponse's for a response)
		bodies   int
		dials    int // connections opened, the request made afterwards included; 0: not checked
	}{
		{name: "exhausted", faults: []fault{status(503)}, wantResp: true, reason: backoff.ErrExhausted, bodies: 3, dials: 1},
		{name: "policy's own reason", faults: []fault{status(503)}, policy: withReason, wantResp: true, reason: breaker, bodies: 2, dials: 1},
		{name: "Retry-After too long", faults: []fault{status(503, "Retry-After", "3600")}, wantResp: true, reason: backoff.ErrHintTooLong, bodies: 1, dials: 1},
		{name: "budget refuses", faults: []fault{status(503)}, budget: func() *backoff.Budget {
			return backoff.Must(backoff.NewBudget(backoff.BudgetConfig{Burst: 1, Reserve: 0.001, Ratio: 0.001}))
		}, wantResp: true, reason: backoff.ErrBudget, bodies: 2, dials: 1},
		{name: "deadline before OnRetry", faults: []fault{status(503)}, deadline: 30 * time.Second, onRetry: time.Second,
			wantResp: true, reason: backoff.ErrDeadline, bodies: 1, dials: 1},
		{name: "deadline during OnRetry, time left", faults: []fault{status(503)}, deadline: 90 * time.Second, onRetry: 40 * time.Second,
			wantResp: true, reason: backoff.ErrDeadline, bodies: 1, dials: 1},
		// The context has ended: the 503 is discarded, its connection with it.
		{name: "deadline passes during OnRetry", faults: []fault{status(503)}, deadline: 90 * time.Second, onRetry: 100 * time.Second,
			reason: backoff.ErrDeadline, bodies: 1, dials: 2},
		{name: "cancel during the wait", faults: []fault{status(503)}, cancelAt: 10 * time.Second, reason: context.Canceled, bodies: 1, dials: 1},
		// The 503 is drained once OnRetry returns, after the cancel: net/http
		// closes a connection whose request's context ends before its body
		// is read to its end.
		{name: "cancel during OnRetry", faults: []fault{status(503)}, cancelAt: 10 * time.Second, onRetry: 20 * time.Second,
			reason: context.Canceled, bodies: 1, dials: 2},
		{name: "a stalled body drained, then exhausted", faults: []fault{stall(503), status(503)}, wantResp: true, reason: backoff.ErrExhausted, bodies: 3},
		{name: "a stalled body, cancel during the wait", faults: []fault{stall(503)}, cancelAt: 10 * time.Second, reason: context.Canceled, bodies: 1},
		{name: "a stalled body, cancel during the drain", faults: []fault{stall(503)}, cancelAt: 100 * time.Millisecond, reason: context.Canceled, bodies: 1},
		{name: "Base returns a response and an error", faults: []fault{status(503)}, base: func(rt http.RoundTripper) http.RoundTripper {
			return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
				resp, _ := rt.RoundTrip(req)
				return resp, both
			})
		}, reason: both, bodies: 3},
		{name: "Base returns a response without a body and an error", faults: []fault{status(503)}, base: func(rt http.RoundTripper) http.RoundTripper {
			return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
				return &http.Response{StatusCode: 503, Header: http.Header{}, Request: req}, both
			})
		}, reason: both, bodies: 0},
		{name: "Base returns nil, nil", faults: []fault{status(503)}, base: func(rt http.RoundTripper) http.RoundTripper {
			return roundTripperFunc(func(*http.Request) (*http.Response, error) { return nil, nil })
		}, reason: backoff.ErrPermanent, bodies: 0},
	}
	for _, tt := range tests {
		for _, timeout := range []time.Duration{0, time.Hour} {
			t.Run(tt.name+"/AttemptTimeout="+timeout.String(), func(t *testing.T) {
				var n atomic.Int32
				inBubble(t, playFaults(&n, tt.faults...), func(t *testing.T, base *http.Transport) {
					dials := countDials(base)
					ctx, cancel := context.WithCancel(context.Background())
					if tt.deadline > 0 {
						ctx, cancel = context.WithTimeout(context.Background(), tt.deadline)
					}
					defer cancel()
					if tt.cancelAt > 0 {
						time.AfterFunc(tt.cancelAt, cancel)
					}
					a := &attempts{counter: counter{base: base}}
					var rt http.RoundTripper = a
					if tt.base != nil {
						rt = tt.base(a)
					}
					var doneErr error
					dones := 0
					tr := &Transport{Base: rt, AttemptTimeout: timeout, Retrier: &backoff.Retrier{Policy: tt.policy,
						OnDone: func(_ context.Context, _ int, err error) { dones++; doneErr = err }}}
					if tr.Retrier.Policy == nil {
						tr.Retrier.Policy = minute
					}
					if tt.budget != nil {
						tr.Retrier.Budget = tt.budget()
					}
					if tt.onRetry > 0 {
						tr.Retrier.OnRetry = func(context.Context, int, error, time.Duration) { time.Sleep(tt.onRetry) }
					}
					req, _ := http.NewRequestWithContext(ctx, "GET", "http://pipe/", nil)
					resp, err := tr.RoundTrip(req)
					if (resp == nil) == (err == nil) {
						t.Fatalf("RoundTrip = %v, %v; want exactly one of them", resp, err)
					}
					if tt.wantResp != (resp != nil) {
						t.Fatalf("RoundTrip = %v, %v; want a response: %v", resp, err, tt.wantResp)
					}
					if dones != 1 || !errors.Is(doneErr, tt.reason) {
						t.Errorf("OnDone called %d times with %v; want once with %v", dones, doneErr, tt.reason)
					}
					if err != nil && !errors.Is(err, tt.reason) {
						t.Errorf("RoundTrip: %v; want %v", err, tt.reason)
					}
					synctest.Wait()
					if resp != nil {
						if g := gaveUpOf(resp); g == nil || !errors.Is(g, tt.reason) {
							t.Errorf("CheckResponse = %v; want %v", g, tt.reason)
						}
						if last := a.ctxs[len(a.ctxs)-1]; timeout > 0 && last.Err() != nil {
							t.Errorf("the returned response's attempt context is done before its body is closed: %v", context.Cause(last))
						}
						b, rerr := io.ReadAll(resp.Body)
						resp.Body.Close()
						if resp.StatusCode != 503 || string(b) != "status Service Unavailable" || rerr != nil {
							t.Errorf("returned %s %q (%v); want the 503, body unread", resp.Status, b, rerr)
						}
					}
					a.check(t, tt.bodies)
					synctest.Wait()
					if timeout > 0 {
						for i, ctx := range a.ctxs {
							if ctx.Err() == nil {
								t.Errorf("attempt %d of %d: its context is not done", i+1, len(a.ctxs))
							}
						}
					}
					after, err := base.RoundTrip(must(http.NewRequest("GET", "http://pipe/", nil)))
					if err != nil {
						t.Fatal(err)
					}
					after.Body.Close() // the connection is counted; a stall's body would never end
					if got := dials.Load(); tt.dials != 0 && got != int32(tt.dials) {
						t.Errorf("%d connections opened; want %d", got, tt.dials)
					}
				})
			})
		}
	}
}

// TestTransportGiveUpConnections: over real sockets, HTTP/1 and HTTP/2,
// the give-ups on a 503 (the attempts spent, the budget's refusal, a
// Retry-After too long, a deadline that OnRetry used up) open one
// connection in all, however many attempts they make, the request made
// afterwards included: each discarded response gave its connection back.
// The server counts its new connections with ConnState.
func TestTransportGiveUpConnections(t *testing.T) {
	ms := backoff.PolicyFunc(func(attempt int, _ error) (time.Duration, error) {
		if attempt >= 3 {
			return 0, backoff.ErrExhausted
		}
		return 400 * time.Millisecond, nil
	})
	spent := func() *backoff.Budget {
		b := backoff.Must(backoff.NewBudget(backoff.BudgetConfig{Burst: 1, Reserve: 0.001, Ratio: 0.001}))
		b.Withdraw()
		return b
	}
	for _, h2 := range []bool{false, true} {
		for _, tt := range []struct {
			name       string
			retryAfter string
			budget     bool
			onRetry    time.Duration // with a 1 s deadline (10 s otherwise): OnRetry leaves too little
			reason     error
			attempts   int32
		}{
			{name: "exhausted", reason: backoff.ErrExhausted, attempts: 3},
			{name: "budget", budget: true, reason: backoff.ErrBudget, attempts: 1},
			{name: "Retry-After too long", retryAfter: "3600", reason: backoff.ErrHintTooLong, attempts: 1},
			{name: "OnRetry used the deadline", onRetry: 800 * time.Millisecond, reason: backoff.ErrDeadline, attempts: 1},
		} {
			t.Run(fmt.Sprintf("%s/HTTP2=%v", tt.name, h2), func(t *testing.T) {
				var conns, seen atomic.Int32
				srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					seen.Add(1)
					if tt.retryAfter != "" {
						w.Header().Set("Retry-After", tt.retryAfter)
					}
					w.WriteHeader(http.StatusServiceUnavailable)
					io.WriteString(w, strings.Repeat("busy ", 1000))
				}))
				countConns(srv, &conns)
				srv.EnableHTTP2 = h2
				srv.StartTLS()
				defer srv.Close()
				base := srv.Client().Transport
				tr := &Transport{Base: base, Retrier: retrier(ms)}
				if tt.budget {
					tr.Retrier.Budget = spent()
				}
				deadline := 10 * time.Second
				if tt.onRetry > 0 {
					deadline = time.Second // 200 ms left after OnRetry, less the attempt's time
				}
				ctx, cancel := context.WithTimeout(context.Background(), deadline)
				defer cancel()
				if tt.onRetry > 0 {
					tr.Retrier.OnRetry = func(context.Context, int, error, time.Duration) { time.Sleep(tt.onRetry) }
				}
				var doneErr error
				tr.Retrier.OnDone = func(_ context.Context, _ int, err error) { doneErr = err }
				req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
				resp, err := tr.RoundTrip(req)
				if err != nil || resp == nil || resp.StatusCode != 503 {
					t.Fatalf("RoundTrip = %v, %v; want the 503", resp, err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if !errors.Is(doneErr, tt.reason) || seen.Load() != tt.attempts {
					t.Errorf("OnDone %v after %d attempts; want %v after %d", doneErr, seen.Load(), tt.reason, tt.attempts)
				}
				if want := h2; resp.ProtoMajor == 2 != want {
					t.Fatalf("%s; want HTTP/2: %v", resp.Proto, want)
				}
				after, err := base.RoundTrip(must(http.NewRequest("GET", srv.URL, nil)))
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, after.Body)
				after.Body.Close()
				if got := conns.Load(); got != 1 {
					t.Errorf("%d connections opened; want 1", got)
				}
			})
		}
	}
}

// countConns counts in conns the connections srv accepts, with ConnState.
func countConns(srv *httptest.Server, conns *atomic.Int32) {
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
}
