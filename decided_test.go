package backoff

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/backoffgo/backoff/internal/decided"
)

// toldFailure is a decided.Failure that counts how often the loop told it
// that a retry follows.
type toldFailure struct{ told *int }

func (f toldFailure) Error() string              { return "told" }
func (f toldFailure) RetryDecided(decided.Token) { *f.told++ }

// TestRetrierTellsDecidedRetries: the loop tells a failure that it will
// retry after it once per retry, and not when it stops after it: when the
// attempts are spent, nor when the deadline, checked again after an
// OnRetry that took 150 ms, leaves no room for the 200 ms wait.
func TestRetrierTellsDecidedRetries(t *testing.T) {
	wait200ms := PolicyFunc(func(attempt int, _ error) (time.Duration, error) {
		if attempt >= 3 {
			return 0, ErrExhausted
		}
		return 200 * time.Millisecond, nil
	})
	for _, tt := range []struct {
		name    string
		onRetry time.Duration // how long OnRetry takes
		calls   int
		told    int
		reason  error
	}{
		{"retried twice, exhausted", 0, 3, 2, ErrExhausted},
		{"late once OnRetry returns", 150 * time.Millisecond, 1, 0, ErrDeadline},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				if tt.onRetry > 0 {
					ctx, cancel = context.WithTimeout(context.Background(), 300*time.Millisecond)
				}
				defer cancel()
				told, calls := 0, 0
				r := &Retrier{Policy: wait200ms, OnRetry: func(context.Context, int, error, time.Duration) { time.Sleep(tt.onRetry) }}
				err := r.Do(ctx, func(context.Context) error {
					calls++
					if calls > 1 && told != calls-1 {
						t.Errorf("call %d after %d retries told", calls, told)
					}
					return toldFailure{&told}
				})
				if calls != tt.calls || told != tt.told || !errors.Is(err, tt.reason) {
					t.Errorf("%d calls, %d told, %v; want %d, %d, %v", calls, told, err, tt.calls, tt.told, tt.reason)
				}
			})
		})
	}
}
