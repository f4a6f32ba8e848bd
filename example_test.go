package backoff_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
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
