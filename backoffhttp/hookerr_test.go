package backoffhttp

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
)

// TestOnRetryErrIsStatusErrorOverTransportBase: the Transport's Retrier
// field promises that OnRetry's err is "the attempt's failure: a
// *StatusError for a status". A Transport whose Base is another Transport
// (docs/http.md: "A Transport whose Base is another Transport does the
// same") retries a status that the inner one gave up on without retrying
// (a Retry-After over its MaxRetryAfter), or, with RetryInner, one it gave
// up on after retrying. Its OnRetry must still see the *StatusError of the
// 503; since issue 28 (attempt.go: ae.err = gaveUpOn(resp)) it gets the
// inner Transport's *backoff.Error, which a hook that type-switches on
// *StatusError (as the doc invites) does not recognise. Before issue 28
// the hook got the status error.
func TestOnRetryErrIsStatusErrorOverTransportBase(t *testing.T) {
	for _, tt := range []struct {
		name       string
		faults     []fault
		inner      func(base http.RoundTripper) *Transport
		retryInner bool
	}{
		{"inner gave up at a long Retry-After, outer retries it",
			[]fault{status(503, "Retry-After", "5"), ok("fine")},
			func(base http.RoundTripper) *Transport {
				return &Transport{Base: base, MaxRetryAfter: time.Second, Retrier: retrier(minute)}
			}, false},
		{"inner exhausted, outer has RetryInner",
			[]fault{status(503), status(503), status(503), ok("fine")},
			func(base http.RoundTripper) *Transport { return &Transport{Base: base, Retrier: retrier(minute)} },
			true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var n atomic.Int32
			inBubble(t, playFaults(&n, tt.faults...), func(t *testing.T, base *http.Transport) {
				var seen []error
				outer := &Transport{Base: tt.inner(base), MaxRetryAfter: time.Minute, Retrier: &backoff.Retrier{
					Policy: minute, RetryInner: tt.retryInner,
					OnRetry: func(_ context.Context, _ int, err error, _ time.Duration) { seen = append(seen, err) },
				}}
				resp, err := outer.RoundTrip(must(http.NewRequest("GET", "http://pipe/", nil)))
				if err != nil || resp.StatusCode != 200 {
					t.Fatalf("RoundTrip = %v, %v; want the 200 of the retry", resp, err)
				}
				resp.Body.Close()
				if len(seen) != 1 {
					t.Fatalf("OnRetry called %d times; want once", len(seen))
				}
				if se, ok := seen[0].(*StatusError); !ok || se.StatusCode != 503 {
					t.Errorf("OnRetry's err is %T (%v); want the 503's *StatusError, as Transport.Retrier's doc says", seen[0], seen[0])
				}
			})
		})
	}
}
