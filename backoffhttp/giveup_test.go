package backoffhttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/backoffgo/backoff"
)

// TestCheckResponseNilHeader: a Base that builds its responses without a Header
// (as a hand-made RoundTripper may) gets, on the response given up on, a
// Header of its own, which tells it from another response to the same
// request: CheckResponse returns the give-up for it and not for a copy with another Header.
func TestCheckResponseNilHeader(t *testing.T) {
	srv := newServer(t, status(503))
	headerless := roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := srv.Client().Transport.RoundTrip(req)
		if resp != nil {
			resp.Header = nil
		}
		return resp, err
	})
	req, _ := http.NewRequest("GET", srv.URL, nil)
	r := roundTrip(t, &Transport{Base: headerless, Retrier: retrier(fast)}, req)
	if r.err != nil || r.resp.StatusCode != 503 || r.resp.Header == nil {
		t.Fatalf("RoundTrip = %v, %v; want the 503, with a Header", r.resp, r.err)
	}
	if g := gaveUpOf(r.resp); g == nil || !errors.Is(g, backoff.ErrExhausted) {
		t.Errorf("CheckResponse = %v; want ErrExhausted", g)
	}
	other := *r.resp
	other.Header = nil
	if g := gaveUpOf(&other); g != nil {
		t.Errorf("CheckResponse of another response to the request, without a Header: %v; want no give-up", g)
	}
}

// wrapBodies is a middleware between a client and its transport that
// wraps every response body, as tracing and metrics middleware do.
type wrapBodies struct{ base http.RoundTripper }

type wrappedBody struct{ io.ReadCloser }

func (w wrapBodies) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := w.base.RoundTrip(req)
	if resp != nil {
		resp.Body = wrappedBody{resp.Body}
	}
	return resp, err
}

// TestLoopAroundTransportStandsBackThroughWrappers: a 3-attempt loop
// around CheckResponse, around a client whose Transport gave up after 3
// attempts, stands back however the body is wrapped on the way: by
// http.Client's Timeout, or by a middleware between the client and the
// Transport. 3 requests reach the server, not 9, which they did when the
// mark was the body's type.
func TestLoopAroundTransportStandsBackThroughWrappers(t *testing.T) {
	url, hits := unavailable(t)
	tr := &Transport{Retrier: retrier(threeAttempts)}
	for _, tt := range []struct {
		name   string
		client *http.Client
	}{
		{"http.Client.Timeout", &http.Client{Transport: tr, Timeout: time.Minute}},
		{"a body-wrapping RoundTripper", &http.Client{Transport: wrapBodies{tr}}},
		{"both", &http.Client{Transport: wrapBodies{tr}, Timeout: time.Minute}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			hits.Store(0)
			var gaveUp *backoff.Error
			err := backoff.Do(context.Background(), func(ctx context.Context) error {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
				resp, err := tt.client.Do(req)
				if err != nil {
					return err
				}
				resp.Body.Close()
				gaveUp = gaveUpOf(resp)
				return CheckResponse(resp)
			}, threeAttempts)
			if hits.Load() != 3 || !errors.Is(err, backoff.ErrRetriedBelow) {
				t.Errorf("%d requests, %v; want 3 and ErrRetriedBelow", hits.Load(), err)
			}
			if gaveUp == nil || gaveUp.Attempts != 3 || !errors.Is(gaveUp, backoff.ErrExhausted) {
				t.Errorf("CheckResponse = %v; want 3 attempts exhausted", gaveUp)
			}
		})
	}
}

// TestCheckResponseGaveUp: CheckResponse returns the error OnDone received
// for a response the Transport gave up on, for every reason, with the
// response's *StatusError inside, and no *backoff.Error for any other
// response; a request made later with the same context, or a copy of a
// response that keeps its Request, are not confused.
func TestCheckResponseGaveUp(t *testing.T) {
	var pe *backoff.ParamError
	if err := CheckResponse(nil); !errors.As(err, &pe) || pe.Param != "resp" {
		t.Errorf("CheckResponse(nil) = %v; want a *backoff.ParamError naming resp", err)
	}
	if err := CheckResponse(&http.Response{StatusCode: 200}); err != nil {
		t.Errorf("CheckResponse of a 200 without a Request = %v; want nil", err)
	}
	budget := backoff.Must(backoff.NewBudget(backoff.BudgetConfig{Ratio: 0.1, Reserve: 0.001, Burst: 1}))
	var n atomic.Int32
	for _, tt := range []struct {
		name  string
		codes []int
		tr    *Transport
		want  error // nil: CheckResponse is no give-up
	}{
		{"success", []int{200}, &Transport{Retrier: retrier(threeAttempts)}, nil},
		{"success after retries", []int{503, 503, 200}, &Transport{Retrier: retrier(threeAttempts)}, nil},
		{"a status not retried", []int{404}, &Transport{Retrier: retrier(threeAttempts)}, nil},
		{"a status after retries", []int{503, 404}, &Transport{Retrier: retrier(threeAttempts)}, nil},
		{"exhausted", []int{503}, &Transport{Retrier: retrier(threeAttempts)}, backoff.ErrExhausted},
		{"deadline", []int{503}, &Transport{Retrier: retrier(minute), MaxRetryAfter: time.Hour}, backoff.ErrDeadline},
		{"budget", []int{503}, &Transport{Retrier: &backoff.Retrier{Policy: threeAttempts, Budget: budget}}, backoff.ErrBudget},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n.Store(0)
			var doneErr error
			tt.tr.Base = nilBodies(&n, tt.codes...)
			tt.tr.Retrier.OnDone = func(_ context.Context, _ int, err error) { doneErr = err }
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", "http://example.test/", nil)
			resp, err := tt.tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			got := gaveUpOf(resp)
			if tt.want == nil {
				if got != nil {
					t.Errorf("CheckResponse = %v; want no give-up", got)
				}
				return
			}
			var se *StatusError
			if got == nil || error(got) != doneErr || !errors.Is(got, tt.want) || !errors.As(got, &se) || se.StatusCode != 503 {
				t.Fatalf("CheckResponse = %v; want OnDone's %v, matching %v, with the 503's *StatusError", got, doneErr, tt.want)
			}
			if resp.Request.Context().Err() != nil || resp.Request.URL != req.URL {
				t.Errorf("resp.Request: %v, %v; want the request sent, its context live", resp.Request.URL, resp.Request.Context().Err())
			}
			copied := *resp
			if gaveUpOf(&copied) != got {
				t.Error("CheckResponse of a copy of the response differs")
			}
			later, _ := http.NewRequestWithContext(resp.Request.Context(), "GET", "http://example.test/", nil)
			if gaveUpOf(&http.Response{Request: later}) != nil {
				t.Error("CheckResponse of a later request's response, made with the same context, is a give-up")
			}
		})
	}
}

// TestCheckResponseKeepsTheRequestSent: the response's Request stays the one its
// base transport reported (the request sent), with the reason in its
// context; when the base reported none, it is the caller's.
func TestCheckResponseKeepsTheRequestSent(t *testing.T) {
	for _, reported := range []bool{true, false} {
		var n atomic.Int32
		base := roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := nilBodies(&n, 503).RoundTrip(req)
			resp.Request = nil
			if reported {
				resp.Request = req.Clone(req.Context())
				resp.Request.Header.Set("X-Sent", "yes")
			}
			return resp, err
		})
		req, _ := http.NewRequest("GET", "http://example.test/", nil)
		resp, err := (&Transport{Base: base, Retrier: retrier(threeAttempts)}).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		if gaveUpOf(resp) == nil || resp.Request.URL.String() != req.URL.String() || (resp.Request.Header.Get("X-Sent") == "yes") != reported {
			t.Errorf("reported %v: CheckResponse %v, Request %v %v; want the reason and the request sent", reported, gaveUpOf(resp), resp.Request.URL, resp.Request.Header)
		}
	}
}

// gaveUpOf returns CheckResponse(resp) when it is the *backoff.Error of a
// Transport that gave up on resp, and nil otherwise.
func gaveUpOf(resp *http.Response) *backoff.Error {
	if resp == nil {
		return nil
	}
	e, _ := CheckResponse(resp).(*backoff.Error)
	return e
}

// TestCheckResponseNotForAResend: a response got by sending resp.Request
// again, of a response the Transport gave up on, is another response:
// CheckResponse of it is no give-up, nor does it say retried below,
// whether it went through the Transport or a plain http.Transport. Both
// used to report the first response's reason (a 200 "stopped after 4
// attempts", a fresh 503 retried below), as the resent request is
// resp.Request itself.
func TestCheckResponseNotForAResend(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) {
		case 1, 2, 3, 4, 6:
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			io.WriteString(w, "ok")
		}
	}))
	defer srv.Close()
	tr := &Transport{Retrier: retrier(fast)}
	defer tr.CloseIdleConnections()
	resp, err := NewClient(tr).Get(srv.URL)
	if err != nil || resp.StatusCode != 503 || gaveUpOf(resp) == nil {
		t.Fatalf("Get = %v, %v, CheckResponse %v; want a 503 given up on", resp, err, CheckResponse(resp))
	}
	resp.Body.Close()
	plain := &http.Client{Transport: &http.Transport{}}
	defer plain.CloseIdleConnections()
	for i, c := range []*http.Client{NewClient(tr), plain, plain} {
		again, err := c.Do(resp.Request)
		if err != nil {
			t.Fatal(err)
		}
		again.Body.Close()
		if err := CheckResponse(again); gaveUpOf(again) != nil || backoff.Retried(err) {
			t.Errorf("send %d: CheckResponse of a %d sent again = %v; want no give-up, not retried below", i+2, again.StatusCode, err)
		}
	}
}

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
						a.checkDone(t)
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

// TestTransportLateAfterOnRetry: when an OnRetry
// that takes 150 ms leaves too little of a 300 ms deadline for the next
// wait of 200 ms, the Transport gives up because of the deadline, and it
// returns the last 503, body unread, with a nil error, as when the wait
// was too long before OnRetry ran.
func TestTransportLateAfterOnRetry(t *testing.T) {
	unavailable := func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, "busy")
	}
	wait200ms := backoff.PolicyFunc(func(int, error) (time.Duration, error) { return 200 * time.Millisecond, nil })
	inBubble(t, unavailable, func(t *testing.T, base *http.Transport) {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		c := &counter{base: base}
		var doneErr error
		tr := &Transport{Base: c, Retrier: &backoff.Retrier{Policy: wait200ms,
			OnRetry: func(context.Context, int, error, time.Duration) { time.Sleep(150 * time.Millisecond) },
			OnDone:  func(_ context.Context, _ int, err error) { doneErr = err }}}
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://pipe/", nil)
		resp, err := tr.RoundTrip(req)
		if err != nil || resp == nil {
			t.Fatalf("RoundTrip = %v, %v; want the 503 and a nil error", resp, err)
		}
		body, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 503 || string(body) != "busy" || rerr != nil {
			t.Errorf("RoundTrip = %s %q (%v); want 503 busy", resp.Status, body, rerr)
		}
		if g := gaveUpOf(resp); !errors.Is(doneErr, backoff.ErrDeadline) || g == nil || !errors.Is(g, backoff.ErrDeadline) || g.Attempts != 1 {
			t.Errorf("OnDone %v, CheckResponse %v; want ErrDeadline after 1 attempt", doneErr, g)
		}
		c.check(t, 1)
	})
}

// TestLoopAroundTransportStandsBack: a loop around a Transport that gave
// up after retrying does not retry again, through CheckResponse or through
// a second Transport, nor does a chain through a non-idempotent hop.
func TestLoopAroundTransportStandsBack(t *testing.T) {
	url, hits := unavailable(t)
	policy := threeAttempts
	client := NewClient(&Transport{Retrier: retrier(policy)})
	err := backoff.Do(context.Background(), func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		return CheckResponse(resp)
	}, policy)
	if hits.Load() != 3 || !errors.Is(err, backoff.ErrRetriedBelow) {
		t.Errorf("Do around a Transport: %d requests, %v; want 3 and ErrRetriedBelow", hits.Load(), err)
	}

	hits.Store(0)
	var stop error
	outer := NewClient(&Transport{Base: &Transport{Retrier: retrier(policy)}, Retrier: &backoff.Retrier{Policy: policy, OnDone: func(_ context.Context, _ int, err error) { stop = err }}})
	resp, err := outer.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if hits.Load() != 3 || !errors.Is(stop, backoff.ErrRetriedBelow) {
		t.Errorf("Transport over Transport: %d requests, stopped with %v; want 3 and ErrRetriedBelow", hits.Load(), stop)
	}
}
