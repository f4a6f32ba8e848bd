package backoffsql

import (
	"errors"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
)

// TestDefaultPolicy: the policy is the one RunTx uses, and it keeps what its
// documentation says: delays of full jitter under 5ms·2^(attempt-1) capped
// at 1s, 30 attempts, 29 waits adding up to at most 22.3s.
func TestDefaultPolicy(t *testing.T) {
	if DefaultPolicy() != defaultRetrier.Policy || DefaultPolicy() != DefaultPolicy() {
		t.Fatal("RunTx's default Retrier does not use DefaultPolicy's value")
	}
	errAgain := errors.New("again")
	var total time.Duration
	for attempt := 1; attempt < 30; attempt++ {
		ceiling := min(5*time.Millisecond<<(attempt-1), time.Second)
		total += ceiling
		for range 200 {
			d, err := DefaultPolicy().NextDelay(attempt, errAgain)
			if err != nil || d < 0 || d > ceiling {
				t.Fatalf("NextDelay(%d) = %v, %v; want a delay in [0, %v]", attempt, d, err, ceiling)
			}
		}
	}
	if _, err := DefaultPolicy().NextDelay(30, errAgain); !errors.Is(err, backoff.ErrExhausted) {
		t.Errorf("NextDelay(30) = %v; want it to stop with ErrExhausted", err)
	}
	if total.Round(100*time.Millisecond) != 22300*time.Millisecond {
		t.Errorf("the 29 waits add up to at most %v; the documentation says 22.3s", total)
	}
}
