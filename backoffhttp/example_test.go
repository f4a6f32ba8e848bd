package backoffhttp_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
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

// A client that retries: the server answers 503 with "Retry-After: 1"
// once, then 200. The Transport waits as the server asks, drains and
// closes the 503's body, and sends the request again. A Retry-After over
// MaxRetryAfter makes it give up and return the 503, unless
// ClampRetryAfter is set: then it waits MaxRetryAfter.
func ExampleTransport() {
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

	client := backoffhttp.NewClient(&backoffhttp.Transport{
		// The longest Retry-After obeyed (by default 30s), and a longer
		// one waits that long rather than giving up: here so that the
		// example runs fast.
		MaxRetryAfter:   10 * time.Millisecond,
		ClampRetryAfter: true,
	})
	resp, err := client.Get(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.Status, string(body), calls.Load())
	// Output: 200 OK hello 2
}

// A Transport for a fleet: a Retrier with one retry budget shared by every
// request to a service, and a hook that logs each retry, called with the
// request's context. A POST is retried because it carries an
// Idempotency-Key; without one it would be sent once.
func ExampleTransport_fleet() {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 2 {
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		io.WriteString(w, "created")
	}))
	defer srv.Close()

	budget, err := backoff.NewBudget(backoff.BudgetConfig{}) // the recommended budget (see backoff.Budget)
	if err != nil {
		panic(err)
	}
	policy := backoff.Must(backoff.NewFullJitter(backoff.Config{
		Base: 10 * time.Millisecond, Cap: time.Second, MaxAttempts: 4,
	}, backoff.RuntimeRng{}))
	client := backoffhttp.NewClient(&backoffhttp.Transport{
		Retrier: &backoff.Retrier{
			Policy: policy,
			Budget: budget,
			OnRetry: func(ctx context.Context, attempt int, err error, delay time.Duration) {
				fmt.Printf("attempt %d: %v, retrying\n", attempt, err)
			},
		},
		AttemptTimeout: 5 * time.Second,
	})

	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{"order": 1}`))
	req.Header.Set("Idempotency-Key", "order-1")
	resp, err := client.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.Status, string(body))
	// Output:
	// attempt 1: HTTP 429 Too Many Requests, retrying
	// attempt 2: HTTP 429 Too Many Requests, retrying
	// 200 OK created
}

// Why the Transport gave up on a status: the client returns the last 503
// and a nil error, as http.Client does for any status, and CheckResponse
// returns the *backoff.Error that the Retrier's OnDone receives, with the
// *StatusError inside. The Retrier starts from the Transport's defaults,
// with waits short enough for the example.
func ExampleCheckResponse_gaveUp() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()

	r := backoffhttp.DefaultRetrier()
	r.Policy = backoff.Must(backoff.NewFullJitter(backoff.Config{
		Base: time.Millisecond, Cap: 10 * time.Millisecond, MaxAttempts: 5,
	}, backoff.RuntimeRng{}))
	client := backoffhttp.NewClient(&backoffhttp.Transport{Retrier: r})
	resp, err := client.Get(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.Status)
	err = backoffhttp.CheckResponse(resp)
	var gaveUp *backoff.Error
	var status *backoffhttp.StatusError
	if errors.As(err, &gaveUp) && errors.As(err, &status) {
		fmt.Println(gaveUp.Attempts, errors.Is(err, backoff.ErrExhausted), status.StatusCode)
		fmt.Println(err)
	}
	// Output:
	// 503 Service Unavailable
	// 5 true 503
	// backoff: stopped after 5 attempts (attempts exhausted): HTTP 503 Service Unavailable
}

// The Transport's defaults, with hooks: DefaultRetrier returns a new
// Retrier at each call, so setting its hooks (or a Budget) changes no other
// client. The server answers 503 once, then 200; the wait between is full
// jitter under 200 ms.
func ExampleDefaultRetrier() {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "hello")
	}))
	defer srv.Close()

	r := backoffhttp.DefaultRetrier()
	r.OnRetry = func(ctx context.Context, attempt int, err error, delay time.Duration) {
		fmt.Printf("attempt %d: %v\n", attempt, err)
	}
	r.OnDone = func(ctx context.Context, attempts int, err error) {
		fmt.Printf("done after %d attempts: %v\n", attempts, err)
	}
	resp, err := backoffhttp.NewClient(&backoffhttp.Transport{Retrier: r}).Get(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.Status, string(body))
	// Output:
	// attempt 1: HTTP 503 Service Unavailable
	// done after 2 attempts: <nil>
	// 200 OK hello
}

// A service whose call to its dependency gave up after retrying tells its
// own callers not to retry: MarkFailure marks the failure with
// DontRetryHeader, and a caller's Transport returns it at once. Handler,
// with a Share of its own, also marks every failure while too many of the
// requests it serves are retries.
func ExampleHandler() {
	dependency := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer dependency.Close()
	client := backoffhttp.NewClient(&backoffhttp.Transport{Retrier: &backoff.Retrier{
		Policy: backoff.Must(backoff.NewExponential(backoff.Config{Base: time.Millisecond, Cap: time.Millisecond, MaxAttempts: 3})),
	}})

	srv := httptest.NewServer(backoffhttp.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodGet, dependency.URL, nil)
		resp, err := client.Do(req)
		if err != nil {
			backoffhttp.MarkFailure(w, err)
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		resp.Body.Close()
		backoffhttp.MarkFailure(w, backoffhttp.CheckResponse(resp)) // the Transport's give-up after 3 attempts
		w.WriteHeader(resp.StatusCode)
	}), backoffhttp.ServerConfig{}))
	defer srv.Close()

	resp, err := http.Get(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.Status, resp.Header.Get(backoffhttp.DontRetryHeader))
	// Output: 503 Service Unavailable true
}

func ExampleParseRetryAfter() {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, v := range []string{"120", "Mon, 30 Nov 2026 12:00:30 GMT", "Mon, 30 Nov 2026 11:00:00 GMT", "1000000000000", "soon"} {
		fmt.Println(backoffhttp.ParseRetryAfter(v, now))
	}
	// Output:
	// 2m0s true
	// 30s true
	// 0s true
	// 2562047h47m16.854775807s true
	// 0s false
}
