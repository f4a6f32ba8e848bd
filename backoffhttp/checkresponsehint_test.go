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

// TestLoopAroundCheckResponseHonoursRetryAfterOverTwoTransports: a loop
// around CheckResponse (docs/http.md: "A loop around CheckResponse stands
// back from a Transport that retried") retries, with backoff.RetryAfter,
// a status that the Transports below gave up on without retrying; here a
// 503 whose Retry-After (5s) is over the MaxRetryAfter of both the inner
// Transport (1s) and the outer one, its Base (2s). StatusError "carries
// the response's Retry-After for backoff.RetryAfter", and CheckResponse's
// *backoff.Error wraps it (errors.As finds it), yet the loop waits its
// policy's minute, not the 5s the server asked for: the status lies two
// *backoff.Errors deep, where RetryAfter does not look (see the root's
// TestRetryAfterFindsHintUnderNestedLoops). Before issue 28 CheckResponse
// returned the status error itself, and the loop waited 5s.
func TestLoopAroundCheckResponseHonoursRetryAfterOverTwoTransports(t *testing.T) {
	var n atomic.Int32
	inBubble(t, playFaults(&n, status(503, "Retry-After", "5"), ok("fine")), func(t *testing.T, base *http.Transport) {
		inner := &Transport{Base: base, MaxRetryAfter: time.Second, Retrier: retrier(minute)}
		client := NewClient(&Transport{Base: inner, MaxRetryAfter: 2 * time.Second, Retrier: retrier(minute)})
		loop := backoff.Must(backoff.NewRetryAfter(minute, backoff.RetryAfterConfig{MaxWait: time.Hour}))
		start := time.Now()
		var calls []time.Duration
		err := backoff.Do(context.Background(), func(ctx context.Context) error {
			calls = append(calls, time.Since(start))
			resp, err := client.Do(must(http.NewRequestWithContext(ctx, "GET", "http://pipe/", nil)))
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if err := CheckResponse(resp); err != nil {
				var se *StatusError
				if !errors.As(err, &se) || se.RetryAfter() != 5*time.Second {
					t.Errorf("CheckResponse = %v; want it to wrap the 503's *StatusError, Retry-After 5s", err)
				}
				return err
			}
			return nil
		}, loop)
		if err != nil || len(calls) != 2 {
			t.Fatalf("the loop returned %v after %d calls; want a retry that gets the 200", err, len(calls))
		}
		if calls[1] != 5*time.Second {
			t.Errorf("the loop retried after %v; want the Retry-After's 5s (its policy's own delay is 1m)", calls[1])
		}
	})
}
