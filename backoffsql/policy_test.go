package backoffsql

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
)

// TestDefaultRetrier: each call returns a new Retrier, with nothing but a
// Policy, the one RunTx's nil Options.Retrier uses, and the Policy keeps
// what the documentation says: delays of full jitter under
// 5ms·2^(attempt-1) capped at 1s, 30 attempts, 29 waits adding up to at
// most 22.3s (docs/sql.md).
func TestDefaultRetrier(t *testing.T) {
	a, b := DefaultRetrier(), DefaultRetrier()
	if a == b || a == defaultRetrier {
		t.Fatal("DefaultRetrier returned the same Retrier twice")
	}
	if !reflect.DeepEqual(a, &backoff.Retrier{Policy: defaultPolicy}) || !reflect.DeepEqual(defaultRetrier, a) {
		t.Fatalf("DefaultRetrier() = %+v, RunTx's default %+v; want only the default Policy", a, defaultRetrier)
	}
	a.OnDone = func(context.Context, int, error) {}
	if b.OnDone != nil || defaultRetrier.OnDone != nil {
		t.Fatal("a hook set on one DefaultRetrier is on another")
	}
	policy := a.Policy
	if policy != b.Policy {
		t.Fatal("two DefaultRetriers have different Policies")
	}
	errAgain := errors.New("again")
	var total time.Duration
	for attempt := 1; attempt < 30; attempt++ {
		ceiling := min(5*time.Millisecond<<(attempt-1), time.Second)
		total += ceiling
		for range 200 {
			d, err := policy.NextDelay(attempt, errAgain)
			if err != nil || d < 0 || d > ceiling {
				t.Fatalf("NextDelay(%d) = %v, %v; want a delay in [0, %v]", attempt, d, err, ceiling)
			}
		}
	}
	if _, err := policy.NextDelay(30, errAgain); !errors.Is(err, backoff.ErrExhausted) {
		t.Errorf("NextDelay(30) = %v; want it to stop with ErrExhausted", err)
	}
	if total.Round(100*time.Millisecond) != 22300*time.Millisecond {
		t.Errorf("the 29 waits add up to at most %v; docs/sql.md says 22.3s", total)
	}
}
