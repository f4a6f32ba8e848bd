package backoff_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/backoffgo/backoff"
)

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
// retry for "not found". Any function with this signature is a Policy; the
// error it returns is the reason Do reports.
func ExamplePolicyFunc() {
	policy := backoff.PolicyFunc(func(attempt int, err error) (time.Duration, error) {
		switch {
		case errors.Is(err, errNotFound):
			return 0, errNotFound
		case attempt >= 3:
			return 0, backoff.ErrExhausted
		}
		return 50 * time.Millisecond, nil
	})
	timeout := errors.New("timeout")
	for attempt := 1; attempt <= 3; attempt++ {
		fmt.Println(policy.NextDelay(attempt, timeout))
	}
	fmt.Println(policy.NextDelay(1, errNotFound))

	calls := 0
	err := backoff.Do(context.Background(), func(context.Context) error {
		calls++
		return timeout
	}, policy)
	fmt.Println(calls, errors.Is(err, backoff.ErrExhausted))
	fmt.Println(err)
	// Output:
	// 50ms <nil>
	// 50ms <nil>
	// 0s backoff: attempts exhausted
	// 0s not found
	// 3 true
	// backoff: stopped after 3 attempts (attempts exhausted): timeout
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
		d, stop := policy.NextDelay(attempt, failure)
		fmt.Println(attempt, d.Round(time.Millisecond), stop)
	}
	// Output:
	// 1 53ms <nil>
	// 2 6ms <nil>
	// 3 273ms <nil>
	// 4 121ms <nil>
	// 5 1.462s <nil>
	// 6 535ms <nil>
	// 7 4.124s <nil>
	// 8 0s backoff: attempts exhausted
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
	// backoff: stopped after 3 attempts (attempts exhausted): service down
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

// Logging every retry with log/slog, and the end of the loop. OnRetry is
// called just before Do waits, so it never announces a retry that a stop
// reason (a deadline too close, a budget refusal) cancels.
func ExampleLoop_slog() {
	// Drop the time so that the output is reproducible.
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	loop := &backoff.Loop{
		Policy: backoff.Must(backoff.NewExponential(backoff.Config{
			Base: time.Millisecond, Cap: 10 * time.Millisecond, MaxAttempts: 3,
		})),
		OnRetry: func(ctx context.Context, attempt int, err error, delay time.Duration) {
			logger.InfoContext(ctx, "retrying", "attempt", attempt, "err", err, "delay", delay)
		},
		OnDone: func(ctx context.Context, attempts int, err error) {
			if err != nil {
				logger.WarnContext(ctx, "gave up", "attempts", attempts, "err", err)
			}
		},
	}
	err := backoff.Do(context.Background(), func(context.Context) error {
		return errors.New("connection refused")
	}, loop)
	fmt.Println(errors.Is(err, backoff.ErrExhausted))
	// Output:
	// level=INFO msg=retrying attempt=1 err="connection refused" delay=1ms
	// level=INFO msg=retrying attempt=2 err="connection refused" delay=2ms
	// level=WARN msg="gave up" attempts=3 err="backoff: stopped after 3 attempts (attempts exhausted): connection refused"
	// true
}

// Counting retries and outcomes, as a metrics library's counters would. The
// Loop is shared by every call; its hooks must be safe for concurrent use.
func ExampleLoop_metrics() {
	var retries, successes, failures atomic.Int64
	loop := &backoff.Loop{
		Policy: backoff.Must(backoff.NewFullJitter(backoff.Config{
			Base: time.Microsecond, Cap: time.Millisecond, MaxAttempts: 4,
		}, backoff.RuntimeRng{})),
		OnRetry: func(context.Context, int, error, time.Duration) { retries.Add(1) },
		OnDone: func(_ context.Context, _ int, err error) {
			if err == nil {
				successes.Add(1)
			} else {
				failures.Add(1)
			}
		},
	}
	for call := range 10 {
		failuresLeft := call % 5 // calls 4 and 9 fail 4 times: more than MaxAttempts allows
		backoff.Do(context.Background(), func(context.Context) error {
			if failuresLeft > 0 {
				failuresLeft--
				return errors.New("unavailable")
			}
			return nil
		}, loop)
	}
	fmt.Println("retries", retries.Load(), "successes", successes.Load(), "failures", failures.Load())
	// Output: retries 18 successes 8 failures 2
}

// A retry budget shared by all the calls of a client: retries stay within
// 10 % of the calls, plus a small reserve, however many fail. Here every call
// fails: without the budget, 1000 calls with up to 2 retries each would
// make 3000 calls. The budget, full at first with 100 retries, runs dry and
// then allows one retry in ten calls: 100 + 999 × 0.1 = 199 retries in all
// (the first call's deposit finds the store full). (The reserve is set to almost nothing
// so that the figures do not depend on how fast the example runs; the
// default is 10 retries a second.)
func ExampleNewBudget() {
	budget, err := backoff.NewBudget(backoff.BudgetConfig{Ratio: 0.1, Reserve: 0.001, Burst: 100})
	if err != nil {
		panic(err)
	}
	loop := &backoff.Loop{
		Policy: backoff.Must(backoff.NewExponential(backoff.Config{
			Base: time.Nanosecond, Cap: time.Nanosecond, MaxAttempts: 3,
		})),
		Budget: budget,
	}
	calls, refused := 0, 0
	for range 1000 {
		err := backoff.Do(context.Background(), func(context.Context) error {
			calls++
			return errors.New("down")
		}, loop)
		if errors.Is(err, backoff.ErrBudget) {
			refused++
		}
	}
	fmt.Println("calls", calls, "refused by the budget", refused)
	// Output: calls 1199 refused by the budget 948
}

// A periodic job that does not fire in the same second on every server:
// each tick falls at a random offset within its own interval.
func ExampleNewTicker() {
	start := time.Now() // no later than the Ticker's start: the output holds however late ticks come
	ticker, err := backoff.NewTicker(10*time.Millisecond, backoff.RuntimeRng{})
	if err != nil {
		panic(err)
	}
	defer ticker.Stop()
	for k := range 3 {
		tick := <-ticker.C
		inWindow := tick.Sub(start) >= time.Duration(k)*10*time.Millisecond
		fmt.Println("tick", k, "in its window:", inWindow)
	}
	// Output:
	// tick 0 in its window: true
	// tick 1 in its window: true
	// tick 2 in its window: true
}
