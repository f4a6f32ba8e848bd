package backoffhttp

import (
	"context"
	"net/http"
	"testing"

	"github.com/backoffgo/backoff"
)

// TestOnDoneCalledOncePerRoundTrip: the Transport's Retrier field promises
// "OnDone is called once per RoundTrip". A RoundTrip that returns a
// *backoff.ParamError for a request that could never be sent (a URL
// without a scheme and host, or a nil URL), or for an invalid field,
// returns without calling OnDone: a hook that counts requests, or
// backoffotel's give-up metrics, never hear of them.
func TestOnDoneCalledOncePerRoundTrip(t *testing.T) {
	for _, tt := range []struct {
		name string
		tr   func(r *backoff.Retrier) *Transport
		req  func() *http.Request
	}{
		{"relative URL", func(r *backoff.Retrier) *Transport { return &Transport{Retrier: r} },
			func() *http.Request { return must(http.NewRequest("GET", "/relative", nil)) }},
		{"nil URL", func(r *backoff.Retrier) *Transport { return &Transport{Retrier: r} },
			func() *http.Request {
				req := must(http.NewRequest("GET", "http://example.invalid/", nil))
				req.URL = nil
				return req
			}},
		{"invalid field", func(r *backoff.Retrier) *Transport { return &Transport{Retrier: r, MaxRetryAfter: -1} },
			func() *http.Request { return must(http.NewRequest("GET", "http://example.invalid/", nil)) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			r := &backoff.Retrier{Policy: fast, OnDone: func(context.Context, int, error) { calls++ }}
			_, err := tt.tr(r).RoundTrip(tt.req())
			if err == nil {
				t.Fatal("RoundTrip succeeded; want its ParamError")
			}
			if calls != 1 {
				t.Errorf("RoundTrip returned %v and OnDone was called %d times; want once per RoundTrip", err, calls)
			}
		})
	}
}
