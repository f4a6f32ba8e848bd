package retryshare

import "testing"

// TestRefuseRouteRetriesAtMinimum: a route's window with exactly
// MinRetries retries is over by its retries ("X ≥ MinRetries"), and a
// caller whose slots hold enough retries of other routes is refused there;
// one retry fewer is not over. (Kills the CONDITIONALS_BOUNDARY mutant of
// "retries >= s.min" in Refuse, which survived.)
func TestRefuseRouteRetriesAtMinimum(t *testing.T) {
	for _, retries := range []int{1, 2} {
		s := newShare(t, Config{Callers: 1}, new(manualClock)) // Threshold 0.1, MinRetries 2
		for range retries {
			s.Record("/r", "c", true)
		}
		for range 20 - retries { // the slot: 20 retries in all, 20 × 0.1 ≥ 2
			s.Record("/o", "c", true)
		}
		want := retries >= 2
		if got := s.Refuse("/r", "c"); got != want {
			t.Errorf("%d retries of %d requests on the route: Refuse = %v, want %v", retries, retries, got, want)
		}
	}
}
