package retryshare

import "testing"

// TestRefuseCallerSignificantEdge: with the route's window over by its
// retries, a caller's slot decides at the edge of significance, on both
// sides of 65 requests (the exact tail below, the normal approximation from
// 65 on): at 0.05, 3 of 20 are not significant (0.075), 4 of 20 are
// (0.016); 15 of 200 are not, 16 are; at 0.1, 14 of 100 are not, 15 are.
func TestRefuseCallerSignificantEdge(t *testing.T) {
	for _, tt := range []struct {
		threshold         float64
		requests, retries int
		want              bool
	}{
		{0.05, 20, 3, false}, {0.05, 20, 4, true},
		{0.05, 200, 15, false}, {0.05, 200, 16, true},
		{0.1, 100, 14, false}, {0.1, 100, 15, true},
	} {
		s := recorded(t, Config{Callers: 1, Threshold: tt.threshold, MinRetries: 1}, "liar", tt.requests-tt.retries, tt.retries)
		if got := s.Refuse("/api", "liar"); got != tt.want {
			t.Errorf("Threshold %v, %d retries of %d requests: Refuse = %v, want %v", tt.threshold, tt.retries, tt.requests, got, tt.want)
		}
	}
}
