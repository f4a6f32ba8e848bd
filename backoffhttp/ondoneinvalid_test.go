package backoffhttp

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/backoffgo/backoff"
)

// TestOnDoneOfInvalidRetrier: as Transport.Retrier's doc says, OnDone hears
// of a RoundTrip refused because the Retrier itself is invalid, with
// attempts 0 and the *backoff.ParamError that RoundTrip returns, at every
// RoundTrip; a nil req, which has no context, is not told.
func TestOnDoneOfInvalidRetrier(t *testing.T) {
	for _, r := range []*backoff.Retrier{{Policy: nil}, {Policy: fast, MaxElapsed: -1}} {
		var calls, attempts int
		var doneErr error
		r.OnDone = func(_ context.Context, n int, err error) { calls, attempts, doneErr = calls+1, n, err }
		tr := &Transport{Retrier: r}
		for i := 1; i <= 2; i++ {
			_, err := tr.RoundTrip(must(http.NewRequest("GET", "http://example.invalid/", nil)))
			var pe *backoff.ParamError
			if !errors.As(err, &pe) || calls != i || attempts != 0 || doneErr != err {
				t.Errorf("RoundTrip %d = %v; OnDone called %d times, last with %d, %v; want a ParamError, told once per RoundTrip with 0 attempts", i, err, calls, attempts, doneErr)
			}
		}
		if _, err := tr.RoundTrip(nil); err == nil || calls != 2 {
			t.Errorf("RoundTrip(nil) = %v, OnDone called %d times in all; want a ParamError, not told", err, calls)
		}
	}
}
