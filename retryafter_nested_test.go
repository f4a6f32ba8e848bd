package backoff

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// TestRetryAfterFindsHintUnderNestedLoops: RetryAfter's doc says the hint
// is that of the first error in the failure's chain (through Unwrap() error
// and Unwrap() []error) with a method RetryAfter() time.Duration. A
// failure that is the give-up of a loop of one attempt, whose own last
// error is the give-up of another such loop over a hinted error, holds the
// hint in its chain (errors.As finds it), but RetryAfter waits the wrapped
// policy's delay instead: *Error.Unwrap shows an inner *Error through a
// reasonless view (hideReasons), and hintOf, which type-switches on the
// views, never sees the hinted error. One loop deep the hint is honoured.
//
// Since issue 28 backoffhttp.CheckResponse returns the Transport's
// *backoff.Error, so a loop around CheckResponse over a Transport whose
// Base is a Transport (both giving up at once at a Retry-After too long
// for them) meets exactly this chain, where the old CheckResponse returned
// the status error with its Retry-After (see backoffhttp's
// TestLoopAroundCheckResponseHonoursRetryAfterOverTwoTransports).
func TestRetryAfterFindsHintUnderNestedLoops(t *testing.T) {
	once := Must(NewExponential(Config{Base: time.Second, Cap: time.Second, MaxAttempts: 1}))
	hinted := WithRetryAfter(errTransient, 7*time.Second)
	oneDeep := Do(context.Background(), func(context.Context) error { return hinted }, once)
	twoDeep := Do(context.Background(), func(context.Context) error { return oneDeep }, once)
	for _, tt := range []struct {
		name string
		err  error
	}{
		{"one loop deep", oneDeep},
		{"two loops deep", twoDeep},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var h interface{ RetryAfter() time.Duration }
			if !errors.As(tt.err, &h) || h.RetryAfter() != 7*time.Second {
				t.Fatalf("%v: errors.As finds no hint of 7s in the chain", tt.err)
			}
			synctest.Test(t, func(t *testing.T) {
				p := Must(NewRetryAfter(Must(NewExponential(Config{Base: time.Minute, Cap: time.Minute, MaxAttempts: 2})), RetryAfterConfig{MaxWait: time.Hour}))
				var calls []time.Duration
				start := time.Now()
				err := Do(context.Background(), func(context.Context) error {
					if calls = append(calls, time.Since(start)); len(calls) == 1 {
						return tt.err
					}
					return nil
				}, p)
				if err != nil || len(calls) != 2 {
					t.Fatalf("Do = %v after %d calls; want a retry that succeeds", err, len(calls))
				}
				if calls[1] != 7*time.Second {
					t.Errorf("retried after %v; want the hint's 7s (the policy's own delay is 1m)", calls[1])
				}
			})
		})
	}
}
