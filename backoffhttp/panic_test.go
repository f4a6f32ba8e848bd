package backoffhttp

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/backoffgo/backoff"
)

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
