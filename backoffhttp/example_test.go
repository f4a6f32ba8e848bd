package backoffhttp_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/backoffhttp"
)

// An HTTP call written by hand with backoff.DoValue and CheckResponse. The
// server answers 503 with "Retry-After: 1" once, then 200. The policy obeys
// the hint up to MaxWait and otherwise falls back to full jitter. A failed
// response's body is drained before it is closed, so the connection is
// reused.
func ExampleCheckResponse() {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "hello")
	}))
	defer srv.Close()

	jitter := backoff.Must(backoff.NewFullJitter(backoff.Config{
		Base:        100 * time.Millisecond,
		Cap:         10 * time.Second,
		MaxAttempts: 5,
	}, backoff.RuntimeRng{}))
	policy := backoff.Must(backoff.NewRetryAfter(jitter, backoff.RetryAfterConfig{
		// The longest hint obeyed. In production this is the most you are
		// willing to wait, say 30 * time.Second; it is short here so the
		// example runs fast, and the server's 1s is clamped to it.
		MaxWait: 10 * time.Millisecond,
	}))

	body, err := backoff.DoValue(context.Background(), func(ctx context.Context) (string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		if err != nil {
			return "", backoff.Permanent(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return "", err // network errors are retried
		}
		defer resp.Body.Close()
		if err := backoffhttp.CheckResponse(resp); err != nil {
			io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // reuse the connection
			return "", err                                         // 429, 503 & co. retried with their Retry-After; other 4xx are permanent
		}
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}, policy)

	fmt.Println(body, err, calls.Load())
	// Output: hello <nil> 2
}
