// Command hello retries a flaky call with package backoff: the program of
// the README, which a test keeps identical to it.
package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/backoffgo/backoff"
)

func main() {
	// Full jitter: the first retry within 100ms, none after more than 2s, four
	// calls in all. Policies are immutable: build once, share everywhere.
	policy := backoff.Must(backoff.NewFullJitter(backoff.Config{
		Base: 100 * time.Millisecond, Cap: 2 * time.Second, MaxAttempts: 4,
	}, backoff.RuntimeRng{}))

	calls := 0
	err := backoff.Do(context.Background(), func(ctx context.Context) error {
		if calls++; calls < 3 {
			return errors.New("connection refused") // retried
		}
		return nil
	}, policy)
	fmt.Println(calls, err) // 3 <nil>

	err = backoff.Do(context.Background(), func(ctx context.Context) error {
		return backoff.Permanent(errors.New("no such user")) // an answer: never retried
	}, policy)
	fmt.Println(err) // backoff: stopped after 1 attempt (error is not retryable): no such user
}
