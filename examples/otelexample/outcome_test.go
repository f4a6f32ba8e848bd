package otelexample

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
)

// TestOutcome: each stop reason of a real loop has its name.
func TestOutcome(t *testing.T) {
	fail := errors.New("down")
	two := backoff.Must(backoff.NewExponential(backoff.Config{Base: time.Nanosecond, Cap: time.Nanosecond, MaxAttempts: 2}))
	hour := backoff.Must(backoff.NewExponential(backoff.Config{Base: time.Hour, Cap: time.Hour, MaxAttempts: 2}))
	soon, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done, stop := context.WithCancel(context.Background())
	stop()
	do := func(ctx context.Context, p backoff.Policy, err error) (int, error) {
		n := 0
		e := backoff.Do(ctx, func(context.Context) error { n++; return err }, p)
		return n, e
	}
	for _, tt := range []struct {
		name string
		run  func() (int, error)
	}{
		{"success", func() (int, error) { return do(context.Background(), two, nil) }},
		{"exhausted", func() (int, error) { return do(context.Background(), two, fail) }},
		{"permanent", func() (int, error) { return do(context.Background(), two, backoff.Permanent(fail)) }},
		{"deadline", func() (int, error) { return do(soon, hour, fail) }},
		{"canceled", func() (int, error) { return do(done, two, fail) }},
		{"retried_below", func() (int, error) { return do(context.Background(), two, backoff.ErrRetriedBelow) }},
		{"other", func() (int, error) { return 1, fail }},
	} {
		if n, err := tt.run(); Outcome(n, err) != tt.name {
			t.Errorf("Outcome(%d, %v) = %q, want %q", n, err, Outcome(n, err), tt.name)
		}
	}
	if got := Outcome(3, nil); got != "success_after_retry" {
		t.Errorf("Outcome(3, nil) = %q", got)
	}
}
