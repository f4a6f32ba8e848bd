package backoff

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestDoTellsTheServer: what a server's middleware sees, Retried of
// the handler's error, says not to retry a loop's give-up after retrying
// (or standing back, or a budget's refusal) and an error that wraps one;
// not a loop that did not retry, a give-up that the handler absorbed
// before failing on its own, a loop still retrying, nor an error that
// keeps only a give-up's text.
func TestDoTellsTheServer(t *testing.T) {
	b := Must(NewBudget(BudgetConfig{Burst: 1}))
	loop := func(r *Retrier, err error) func(context.Context) error {
		return func(ctx context.Context) error { return r.Do(ctx, func(context.Context) error { return err }) }
	}
	gaveUp := loop(&Retrier{Policy: zeroDelays(3)}, errTransient)
	for _, tt := range []struct {
		name    string
		handler func(ctx context.Context) error
		marked  bool
	}{
		{"success", loop(&Retrier{Policy: zeroDelays(3)}, nil), false},
		{"permanent at once", loop(&Retrier{Policy: zeroDelays(3)}, Permanent(errTransient)), false},
		{"one attempt allowed", loop(&Retrier{Policy: zeroDelays(1)}, errTransient), false},
		{"exhausted after retries", gaveUp, true},
		{"stood back", loop(&Retrier{Policy: zeroDelays(3)}, fmt.Errorf("x: %w", ErrRetriedBelow)), true},
		{"refused by the budget", loop(&Retrier{Policy: zeroDelays(3), Budget: b}, errTransient), true},
		{"the deadline at the first retry", func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, time.Hour)
			defer cancel()
			return loop(&Retrier{Policy: PolicyFunc(func(int, error) (time.Duration, error) { return 2 * time.Hour, nil })}, errTransient)(ctx)
		}, false},
		{"the policy's own reason at the first retry", loop(&Retrier{Policy: PolicyFunc(func(int, error) (time.Duration, error) { return 0, errMine })}, errTransient), false},
		{"the policy's own reason after retries", loop(&Retrier{Policy: PolicyFunc(func(attempt int, _ error) (time.Duration, error) {
			if attempt < 2 {
				return 0, nil
			}
			return 0, errMine
		})}, errTransient), true},
		{"the give-up wrapped", func(ctx context.Context) error { return fmt.Errorf("lookup: %w", gaveUp(ctx)) }, true},
		{"the give-up joined", func(ctx context.Context) error { return errors.Join(errTransient, gaveUp(ctx)) }, true},
		{"the handler's own, marked", func(context.Context) error { return fmt.Errorf("busy: %w", ErrRetriedBelow) }, true},
		{"an absorbed give-up, then a fresh failure", func(ctx context.Context) error {
			gaveUp(ctx)
			return errTransient
		}, false},
		{"a loop still retrying", func(ctx context.Context) error {
			var err error
			Do(ctx, func(context.Context) error {
				err = errors.New("fresh") // the handler fails while its loop retries
				return errTransient
			}, zeroDelays(2))
			return err
		}, false},
		{"only the give-up's text", func(ctx context.Context) error { return fmt.Errorf("lookup: %v", gaveUp(ctx)) }, false},
		{"an Is method claiming ErrRetriedBelow", func(context.Context) error { return claimsRetriedBelow{} }, false},
		{"the give-up marked Permanent", func(ctx context.Context) error { return Permanent(gaveUp(ctx)) }, true},
		{"cancelled after retries", func(ctx context.Context) error {
			ctx, cancel := context.WithCancel(ctx)
			calls := 0
			return Do(ctx, func(context.Context) error {
				if calls++; calls == 2 {
					cancel()
				}
				return errTransient
			}, zeroDelays(3))
		}, true},
		{"a typed nil *Error", func(context.Context) error { return (*Error)(nil) }, false},
		{"nil", func(context.Context) error { return nil }, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			drain(b)
			if err := tt.handler(context.Background()); Retried(err) != tt.marked {
				t.Errorf("Retried(%v) = %v, want %v", err, !tt.marked, tt.marked)
			}
		})
	}
}

// claimsRetriedBelow matches ErrRetriedBelow by an Is method only.
type claimsRetriedBelow struct{}

func (claimsRetriedBelow) Error() string        { return "claims" }
func (claimsRetriedBelow) Is(target error) bool { return target == ErrRetriedBelow }

// errMine is a policy's own reason to stop.
var errMine = errors.New("my policy stops")

// TestRetriedOfError: the rule outer loops and backoffhttp share.
func TestRetriedOfError(t *testing.T) {
	b := Must(NewBudget(BudgetConfig{Burst: 1}))
	drain(b)
	for _, tt := range []struct {
		e    *Error
		want bool
	}{
		{nil, false},
		{&Error{Reason: ErrExhausted, Attempts: 1}, false},
		{&Error{Reason: ErrExhausted, Attempts: 2}, true},
		{&Error{Reason: ErrRetriedBelow, Attempts: 1}, true},
		{&Error{Reason: b.Withdraw(), Attempts: 1}, true},
	} {
		if got := Retried(tt.e); got != tt.want {
			t.Errorf("Retried(%v) = %v, want %v", tt.e, got, tt.want)
		}
	}
}
