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

// Do calls fn until it succeeds or the policy stops it, and says why it
// stopped: here a call that fails twice and then succeeds, and one that
// always fails, given up after the policy's four attempts.
func ExampleDo() {
	policy := backoff.Must(backoff.NewFullJitter(backoff.Config{
		Base:        time.Millisecond, // 100 * time.Millisecond in a real service
		Cap:         10 * time.Millisecond,
		MaxAttempts: 4,
	}, backoff.RuntimeRng{}))

	calls := 0
	err := backoff.Do(context.Background(), func(ctx context.Context) error {
		if calls++; calls < 3 {
			return errors.New("connection refused")
		}
		return nil
	}, policy)
	fmt.Println(calls, err)

	err = backoff.Do(context.Background(), func(ctx context.Context) error {
		return errors.New("connection refused")
	}, policy)
	var e *backoff.Error
	fmt.Println(errors.As(err, &e), e.Attempts, errors.Is(err, backoff.ErrExhausted))
	fmt.Println(err)
	// Output:
	// 3 <nil>
	// true 4 true
	// backoff: stopped after 4 attempts (attempts exhausted): connection refused
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

// A policy of one's own: any function with this signature is a Policy, and
// the error it returns is the reason Do reports. This one waits 10ms, 20ms,
// 30ms…, gives up after four calls, and never retries "not found".
func ExamplePolicyFunc() {
	policy := backoff.PolicyFunc(func(attempt int, err error) (time.Duration, error) {
		switch {
		case errors.Is(err, errNotFound):
			return 0, errNotFound
		case attempt >= 4:
			return 0, backoff.ErrExhausted
		}
		return time.Duration(attempt) * 10 * time.Millisecond, nil
	})
	timeout := errors.New("timeout")
	for attempt := 1; attempt <= 4; attempt++ {
		fmt.Println(policy.NextDelay(attempt, timeout))
	}
	fmt.Println(policy.NextDelay(1, errNotFound))
	// Output:
	// 10ms <nil>
	// 20ms <nil>
	// 30ms <nil>
	// 0s backoff: attempts exhausted
	// 0s not found
}

// A constant delay is an Exponential whose Base and Cap are equal.
func ExampleNewExponential_constant() {
	policy := backoff.Must(backoff.NewExponential(backoff.Config{
		Base:        50 * time.Millisecond,
		Cap:         50 * time.Millisecond,
		MaxAttempts: 4,
	}))
	for attempt := 1; attempt <= 4; attempt++ {
		fmt.Println(policy.NextDelay(attempt, errors.New("busy")))
	}
	// Output:
	// 50ms <nil>
	// 50ms <nil>
	// 50ms <nil>
	// 0s backoff: attempts exhausted
}

// A limit on the time since the first call began, which never cuts a call
// short (a context deadline would): after a 15ms call, a retry 10ms later
// would begin past the 20ms limit, so Do stops at once.
func ExampleRetrier_maxElapsed() {
	r := &backoff.Retrier{
		Policy: backoff.Must(backoff.NewExponential(backoff.Config{
			Base: 10 * time.Millisecond, Cap: 10 * time.Millisecond, MaxAttempts: backoff.Unlimited,
		})),
		MaxElapsed: 20 * time.Millisecond,
	}
	calls := 0
	err := r.Do(context.Background(), func(ctx context.Context) error {
		calls++
		time.Sleep(15 * time.Millisecond)
		fmt.Println("call finished, context live:", ctx.Err() == nil)
		return errors.New("slow")
	})
	fmt.Println(calls, errors.Is(err, backoff.ErrDeadline))
	// Output:
	// call finished, context live: true
	// 1 true
}

// driverError stands for a third-party error type, such as a database
// driver's, that carries a code.
type driverError struct{ code string }

func (e *driverError) Error() string { return "driver: SQLSTATE " + e.code }

// Classifying a third-party error: decide where the call is made, and mark
// what must not be retried with Permanent. Here a serialization failure
// (40001) is retried and a unique violation (23505) is not.
func ExamplePermanent_thirdParty() {
	policy := backoff.Must(backoff.NewExponential(backoff.Config{Base: time.Millisecond, Cap: time.Millisecond, MaxAttempts: 3}))
	classify := func(err error) error {
		var de *driverError
		if errors.As(err, &de) && de.code != "40001" {
			return backoff.Permanent(err)
		}
		return err
	}
	for _, code := range []string{"40001", "23505"} {
		calls := 0
		err := backoff.Do(context.Background(), func(context.Context) error {
			calls++
			return classify(&driverError{code: code})
		}, policy)
		fmt.Println(code, calls, err)
	}
	// Output:
	// 40001 3 backoff: stopped after 3 attempts (attempts exhausted): driver: SQLSTATE 40001
	// 23505 1 backoff: stopped after 1 attempt (error is not retryable): driver: SQLSTATE 23505
}

// Must turns any constructor's (value, error) into the value, for values
// built from constants at package level.
func ExampleMust() {
	policy := backoff.Must(backoff.NewFullJitter(backoff.Config{Base: time.Second, Cap: time.Minute, MaxAttempts: 5}, backoff.RuntimeRng{}))
	budget := backoff.Must(backoff.NewBudget(backoff.BudgetConfig{}))
	ticker := backoff.Must(backoff.NewTicker(time.Hour, backoff.RuntimeRng{}))
	defer ticker.Stop()
	fmt.Println(policy != nil, budget.Available(), ticker != nil)

	defer func() { fmt.Println("panic:", recover()) }()
	backoff.Must(backoff.NewBudget(backoff.BudgetConfig{Ratio: 2}))
	// Output:
	// true 100 true
	// panic: backoff: invalid Ratio 2: must be in (0, 1]
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

// Logging every retry with log/slog, and the end of the loop. OnRetry is
// called once a retry is decided, just before Do waits.
func ExampleRetrier_slog() {
	// Drop the time so that the output is reproducible.
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	r := &backoff.Retrier{
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
	err := r.Do(context.Background(), func(context.Context) error {
		return errors.New("connection refused")
	})
	fmt.Println(errors.Is(err, backoff.ErrExhausted))
	// Output:
	// level=INFO msg=retrying attempt=1 err="connection refused" delay=1ms
	// level=INFO msg=retrying attempt=2 err="connection refused" delay=2ms
	// level=WARN msg="gave up" attempts=3 err="backoff: stopped after 3 attempts (attempts exhausted): connection refused"
	// true
}

// Counting retries and outcomes, as a metrics library's counters would. The
// Retrier is shared by every call; its hooks must be safe for concurrent use.
func ExampleRetrier_metrics() {
	var retries, successes, failures atomic.Int64
	r := &backoff.Retrier{
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
		r.Do(context.Background(), func(context.Context) error {
			if failuresLeft > 0 {
				failuresLeft--
				return errors.New("unavailable")
			}
			return nil
		})
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
	budget := backoff.Must(backoff.NewBudget(backoff.BudgetConfig{Ratio: 0.1, Reserve: 0.001, Burst: 100}))
	r := &backoff.Retrier{
		Policy: backoff.Must(backoff.NewExponential(backoff.Config{
			Base: time.Nanosecond, Cap: time.Nanosecond, MaxAttempts: 3,
		})),
		Budget: budget,
	}
	calls, refused := 0, 0
	for range 1000 {
		err := r.Do(context.Background(), func(context.Context) error {
			calls++
			return errors.New("down")
		})
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
