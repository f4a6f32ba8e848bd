// Command hello retries a flaky call, then a flaky HTTP server, with package
// backoff, and prints what happened.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/backoffhttp"
)

func main() {
	// A policy: full jitter, at most 100ms before the first retry, never
	// more than 2s, four calls in all. Build it once and share it.
	policy := backoff.Must(backoff.NewFullJitter(backoff.Config{
		Base: 100 * time.Millisecond, Cap: 2 * time.Second, MaxAttempts: 4,
	}, backoff.RuntimeRng{}))

	// A call that fails twice, then succeeds.
	calls := 0
	err := backoff.Do(context.Background(), func(ctx context.Context) error {
		calls++
		if calls < 3 {
			return errors.New("connection refused")
		}
		return nil
	}, policy)
	fmt.Printf("Do: %d calls, err = %v\n", calls, err)

	// A call that always fails: Do says why it stopped and what failed.
	err = backoff.Do(context.Background(), func(ctx context.Context) error {
		return errors.New("disk full")
	}, policy)
	fmt.Println("Do:", err)

	// An HTTP server that answers 503 twice, asking for a 50ms pause.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	var hits atomic.Int32
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) <= 2 {
			w.Header().Set("Retry-After", "0") // a hint of 0 falls back to the policy's delay
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "hello, retried world")
	}))

	// A client that retries what is safe to retry, and logs each retry.
	client := backoffhttp.NewClient(&backoffhttp.Transport{
		Policy: policy,
		OnRetry: func(req *http.Request, attempt int, err error, delay time.Duration) {
			fmt.Printf("GET: attempt %d failed (%v), retrying\n", attempt, err)
		},
	})
	resp, err := client.Get("http://" + ln.Addr().String())
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Printf("GET: %s %q\n", resp.Status, body)
}
