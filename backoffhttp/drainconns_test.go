package backoffhttp

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
)

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
