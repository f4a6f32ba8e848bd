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

// TestRetrierTellsOnlyRetriesMade: the loop never tells a failure that a
// retry follows when it stops after it instead (the budget refuses, OnRetry
// panics, the policy stops with a reason of its own, the failure is
// permanent, the context has ended), and a cancel during the wait, which
// follows the telling, still stops the loop with the context's error.
func TestRetrierTellsOnlyRetriesMade(t *testing.T) {
	breaker := errors.New("breaker open")
	wait := func(d time.Duration) PolicyFunc {
		return func(int, error) (time.Duration, error) { return d, nil }
	}
	for _, tt := range []struct {
		name   string
		r      Retrier
		fail   func(told *int) error
		cancel bool // cancel the context 1 s into the first wait
		panics bool
		calls  int
		told   int
		reason error
	}{
		{name: "budget refuses", r: Retrier{Policy: wait(time.Second), Budget: Must(NewBudget(BudgetConfig{Burst: 1, Reserve: 0.001, Ratio: 0.001}))},
			calls: 1, reason: ErrBudget},
		{name: "OnRetry panics", r: Retrier{Policy: wait(time.Second), OnRetry: func(context.Context, int, error, time.Duration) { panic("hook") }},
			calls: 1, panics: true},
		{name: "the policy's reason", r: Retrier{Policy: PolicyFunc(func(int, error) (time.Duration, error) { return 0, breaker })},
			calls: 1, reason: breaker},
		{name: "permanent", r: Retrier{Policy: wait(time.Second)},
			fail: func(told *int) error { return Permanent(toldFailure{told}) }, calls: 1, reason: ErrPermanent},
		{name: "cancelled during the wait", r: Retrier{Policy: wait(time.Minute)}, cancel: true, calls: 1, told: 1, reason: context.Canceled},
		{name: "zero delays", r: Retrier{Policy: PolicyFunc(func(attempt int, _ error) (time.Duration, error) {
			if attempt >= 4 {
				return 0, ErrExhausted
			}
			return 0, nil
		})}, calls: 4, told: 3, reason: ErrExhausted},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if tt.cancel {
					time.AfterFunc(time.Second, cancel)
				}
				told, calls := 0, 0
				if tt.r.Budget != nil {
					tt.r.Budget.Withdraw() // the store's one retry, spent: the first retry is refused
				}
				var err error
				func() {
					defer func() {
						if p := recover(); (p != nil) != tt.panics {
							t.Errorf("recovered %v; want a panic: %v", p, tt.panics)
						}
					}()
					err = tt.r.Do(ctx, func(context.Context) error {
						calls++
						if tt.fail != nil {
							return tt.fail(&told)
						}
						return toldFailure{&told}
					})
				}()
				if calls != tt.calls || told != tt.told || !tt.panics && !errors.Is(err, tt.reason) {
					t.Errorf("%d calls, %d told, %v; want %d, %d, %v", calls, told, err, tt.calls, tt.told, tt.reason)
				}
			})
		})
	}
}
