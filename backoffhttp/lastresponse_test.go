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

// TestTransportLateAfterOnRetry (issue 32, section 2): when an OnRetry
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

// TestTransportOnRetryPanics: when OnRetry panics, the panic goes on to
// RoundTrip's caller unchanged, and the response being retried is still
// drained and closed, once, and its attempt's context ended.
func TestTransportOnRetryPanics(t *testing.T) {
	for _, timeout := range []time.Duration{0, time.Hour} {
		t.Run("AttemptTimeout="+timeout.String(), func(t *testing.T) {
			var n atomic.Int32
			inBubble(t, playFaults(&n, status(503)), func(t *testing.T, base *http.Transport) {
				a := &attempts{counter: counter{base: base}}
				tr := &Transport{Base: a, AttemptTimeout: timeout, Retrier: &backoff.Retrier{Policy: minute,
					OnRetry: func(context.Context, int, error, time.Duration) { panic("hook") }}}
				req, _ := http.NewRequest("GET", "http://pipe/", nil)
				func() {
					defer func() {
						if p := recover(); p != "hook" {
							t.Errorf("recovered %v; want the hook's panic", p)
						}
					}()
					tr.RoundTrip(req)
				}()
				a.check(t, 1)
				synctest.Wait()
				if timeout > 0 && a.ctxs[0].Err() == nil {
					t.Error("the attempt's context is not done")
				}
			})
		})
	}
}

// TestTransportPanicsGiveBack: when a hook the Transport calls with a
// response in hand panics (the Policy deciding the wait, ShouldRetry, as
// OnRetry in TestTransportOnRetryPanics), the panic goes on to RoundTrip's
// caller unchanged, and that response is still drained and closed, once,
// and its attempt's context ended.
func TestTransportPanicsGiveBack(t *testing.T) {
	panicky := backoff.PolicyFunc(func(int, error) (time.Duration, error) { panic("policy") })
	for _, tt := range []struct {
		name        string
		policy      backoff.Policy
		shouldRetry func(*http.Response, error) bool
		want        string
	}{
		{"Policy", panicky, nil, "policy"},
		{"ShouldRetry", defaultPolicy, func(*http.Response, error) bool { panic("ShouldRetry") }, "ShouldRetry"},
	} {
		for _, timeout := range []time.Duration{0, time.Hour} {
			t.Run(tt.name+"/AttemptTimeout="+timeout.String(), func(t *testing.T) {
				var n atomic.Int32
				inBubble(t, playFaults(&n, status(503)), func(t *testing.T, base *http.Transport) {
					a := &attempts{counter: counter{base: base}}
					tr := &Transport{Base: a, Retrier: retrier(tt.policy), ShouldRetry: tt.shouldRetry, AttemptTimeout: timeout}
					req, _ := http.NewRequest("GET", "http://pipe/", nil)
					func() {
						defer func() {
							if p := recover(); p != tt.want {
								t.Errorf("recovered %v; want %q", p, tt.want)
							}
						}()
						tr.RoundTrip(req)
					}()
					a.check(t, 1)
					synctest.Wait()
					if timeout > 0 && a.ctxs[0].Err() == nil {
						t.Error("the attempt's context is not done")
					}
				})
			})
		}
	}
}
