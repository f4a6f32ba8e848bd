package retryshare

import "testing"

// TestRefuseCallerMinimumExactProduct: Share's doc asks of each caller
// slot "X·Threshold ≥ MinRetries", and says of the other rule that "a
// share of exactly Threshold is not over", computed as a quotient so that
// an exact decimal share (3 of 10 at 0.3) compares as Threshold itself.
// callerOver computes the product in floating point instead: at Threshold
// 0.29 and MinRetries 29, 100 retries give 100 × 0.29 = 28.999999999999996
// < 29, so a caller with exactly MinRetries/Threshold retries (every
// request of the window a retry) is not refused; 0.58 and 50 retries the
// same.
func TestRefuseCallerMinimumExactProduct(t *testing.T) {
	for _, tt := range []struct {
		cfg  Config
		need int
	}{{Config{Threshold: 0.29, MinRetries: 29, Callers: 1}, 100}, {Config{Threshold: 0.58, MinRetries: 29, Callers: 1}, 50}} {
		s := newShare(t, tt.cfg, new(manualClock))
		for range tt.need {
			s.Record("/api", "liar", true)
		}
		if !s.Refuse("/api", "liar") {
			t.Errorf("%+v: %d retries of %d requests (X·Threshold = MinRetries): Refuse = false, want true", tt.cfg, tt.need, tt.need)
		}
	}
}
