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
		for range 20 - retries { // the slot: 20 retries of 20 requests, significant
			s.Record("/o", "c", true)
		}
		want := retries >= 2
		if got := s.Refuse("/r", "c"); got != want {
			t.Errorf("%d retries of %d requests on the route: Refuse = %v, want %v", retries, retries, got, want)
		}
	}
}

// TestRouteCapUnderConcurrentFirstRecords: routes recorded at once by
// many goroutines, each a route never seen, get at most MaxRoutes windows
// of their own: the locked path checks the cap again, for the goroutines
// that found no map (or room) on the lock-free path.
func TestRouteCapUnderConcurrentFirstRecords(t *testing.T) {
	for range 2000 {
		s := newShare(t, Config{MaxRoutes: 1}, new(manualClock))
		start := make(chan struct{})
		done := make(chan struct{})
		for i := range 8 {
			go func() {
				<-start
				s.Record(string(rune('a'+i)), "c", false)
				done <- struct{}{}
			}()
		}
		close(start)
		for range 8 {
			<-done
		}
		if n := s.routes.Len(); n > 1 {
			t.Fatalf("%d routes have a window of their own, want at most MaxRoutes 1", n)
		}
	}
}
