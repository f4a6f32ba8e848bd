package backoff_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/backoffgo/backoff"
)

// An HTTP call that honours Retry-After. The server answers 503 with
// "Retry-After: 1" once, then 200. The policy obeys the hint up to MaxWait
// and otherwise falls back to full jitter.
func ExampleDo_http() {
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
		MaxAttempts: 5,
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
		if err := backoff.CheckResponse(resp); err != nil {
			return "", err // 429, 503 & co. retried with their Retry-After; other 4xx are permanent
		}
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}, policy)

	fmt.Println(body, err, calls.Load())
	// Output: hello <nil> 2
}

// queryUser stands for a database call that fails twice with a broken
// connection before it succeeds.
func queryUser(failures *int) (string, error) {
	if *failures > 0 {
		*failures--
		return "", driver.ErrBadConn
	}
	return "ada", nil
}

// A database call: a lost connection is retried, "no rows" is an answer, not
// a failure worth retrying, and is marked Permanent.
func ExampleDoValue_database() {
	policy := backoff.Must(backoff.NewEqualJitter(backoff.Config{
		Base:        time.Millisecond, // 50 * time.Millisecond in a real service
		Cap:         time.Second,
		MaxAttempts: 4,
	}, backoff.RuntimeRng{}))

	failures := 2
	name, err := backoff.DoValue(context.Background(), func(ctx context.Context) (string, error) {
		name, err := queryUser(&failures)
		if errors.Is(err, sql.ErrNoRows) {
			return "", backoff.Permanent(err)
		}
		return name, err
	}, policy)
	fmt.Println(name, err)

	_, err = backoff.DoValue(context.Background(), func(ctx context.Context) (string, error) {
		return "", backoff.Permanent(sql.ErrNoRows)
	}, policy)
	fmt.Println(errors.Is(err, backoff.ErrPermanent), errors.Is(err, sql.ErrNoRows))
	// Output:
	// ada <nil>
	// true true
}

var errNotFound = errors.New("not found")

// A custom policy: a constant 50ms pause, three attempts in all, and never a
// retry for "not found". Any function with this signature is a Policy.
func ExamplePolicyFunc() {
	policy := backoff.PolicyFunc(func(attempt int, err error) (time.Duration, bool) {
		if errors.Is(err, errNotFound) || !backoff.Retryable(err) || attempt >= 3 {
			return 0, false
		}
		return 50 * time.Millisecond, true
	})
	timeout := errors.New("timeout")
	for attempt := 1; attempt <= 3; attempt++ {
		fmt.Println(policy.NextDelay(attempt, timeout))
	}
	fmt.Println(policy.NextDelay(1, errNotFound))
	// Output:
	// 50ms true
	// 50ms true
	// 0s false
	// 0s false
}

// A seeded source makes a jittered sequence reproducible, for tests and
// simulations. Attempt 8 gives up: MaxAttempts counts the first call.
func ExampleNewSeededRng() {
	policy := backoff.Must(backoff.NewFullJitter(backoff.Config{
		Base:        100 * time.Millisecond,
		Cap:         10 * time.Second,
		MaxAttempts: 8,
	}, backoff.NewSeededRng(1)))
	failure := errors.New("unavailable")
	for attempt := 1; attempt <= 8; attempt++ {
		d, ok := policy.NextDelay(attempt, failure)
		fmt.Println(attempt, d.Round(time.Millisecond), ok)
	}
	// Output:
	// 1 53ms true
	// 2 6ms true
	// 3 273ms true
	// 4 121ms true
	// 5 1.462s true
	// 6 535ms true
	// 7 4.124s true
	// 8 0s false
}

// Why Do stopped, and the last error, are both reachable with errors.Is and
// errors.As.
func ExampleError() {
	policy := backoff.Must(backoff.NewExponential(backoff.Config{
		Base: time.Microsecond, Cap: time.Millisecond, MaxAttempts: 3,
	}))
	errDown := errors.New("service down")
	err := backoff.Do(context.Background(), func(context.Context) error { return errDown }, policy)

	var e *backoff.Error
	fmt.Println(errors.Is(err, backoff.ErrExhausted), errors.Is(err, errDown))
	if errors.As(err, &e) {
		fmt.Println(e.Attempts, e.Err)
	}
	fmt.Println(err)
	// Output:
	// true true
	// 3 service down
	// backoff: attempts exhausted after 3 attempts: service down
}

func ExampleParseRetryAfter() {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, v := range []string{"120", "Mon, 30 Nov 2026 12:00:30 GMT", "Mon, 30 Nov 2026 11:00:00 GMT", "1000000000000", "soon"} {
		fmt.Println(backoff.ParseRetryAfter(v, now))
	}
	// Output:
	// 2m0s true
	// 30s true
	// 0s true
	// 2562047h47m16.854775807s true
	// 0s false
}
