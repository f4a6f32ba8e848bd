package retryshare

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// binomialTail returns P(Binomial(r, p) ≥ f), from the distribution built
// trial by trial (another way than the Share's).
func binomialTail(r, f int, p float64) float64 {
	dist := []float64{1}
	for range r {
		next := make([]float64, len(dist)+1)
		for k, v := range dist {
			next[k] += v * (1 - p)
			next[k+1] += v * p
		}
		dist = next
	}
	tail := 0.0
	for k := max(f, 0); k <= r; k++ {
		tail += dist[k]
	}
	return tail
}

// significant is the rule of Share's doc: f failing answers of n requests
// (taken as f when fewer) are significant when P(Binomial(r, p) ≥ f) ≤ p,
// exactly below 65 requests, by the normal approximation with a continuity
// correction from 65 on.
func significant(f, n int, p float64) bool {
	r := max(n, f)
	if r < 65 {
		return binomialTail(r, f, p) <= p*(1+1e-9)
	}
	if p == 1 {
		return true
	}
	m := float64(r) * p
	z := math.Sqrt2 * math.Erfcinv(2*p)
	return float64(f)-0.5-m > z*math.Sqrt(m*(1-p))
}

// TestFewestSignificant: the fewest failing answers of r requests that are
// significant, against the tail computed trial by trial, for every r below
// 65 and thresholds from tiny to 1; at a tie (P = Threshold) they are.
func TestFewestSignificant(t *testing.T) {
	for _, p := range []float64{1e-9, 0.01, 0.05, 0.1, 0.2, 0.3, 0.5, 0.9, 1} {
		for r := range 65 {
			f := fewestSignificant(r, p)
			if f < 1 || f > r+1 {
				t.Fatalf("Threshold %v, %d requests: %d failing answers, out of [1, %d]", p, r, f, r+1)
			}
			if f <= r && binomialTail(r, f, p) > p*(1+1e-9) {
				t.Errorf("Threshold %v: %d of %d significant, but its tail is %v", p, f, r, binomialTail(r, f, p))
			}
			if f > 1 && binomialTail(r, f-1, p) <= p*(1+1e-9) {
				t.Errorf("Threshold %v: %d of %d not significant, but its tail is %v", p, f-1, r, binomialTail(r, f-1, p))
			}
		}
	}
	for _, tt := range []struct {
		p    float64
		r, f int
	}{
		{0.1, 1, 1},   // P = 0.1: a tie
		{0.1, 2, 2},   // 0.01; 1 of 2: 0.19
		{0.1, 10, 3},  // 0.07; 2 of 10: 0.26
		{0.1, 64, 11}, // 0.087; 10 of 64: 0.16
		{0.5, 3, 2},   // 0.5: a tie
		{1e-9, 64, 2}, // 1 of 64: 6.4e-8
		{1, 64, 1},    // every tail is 1
	} {
		if got := fewestSignificant(tt.r, tt.p); got != tt.f {
			t.Errorf("Threshold %v, %d requests: %d failing answers significant, want %d", tt.p, tt.r, got, tt.f)
		}
	}
}

// TestRefuseSignificant: with its allowance spent, a route refuses a
// failing answer exactly when its failing answers, this one counted, are
// significant; with an allowance of 1 or more, it lets it be retried.
func TestRefuseSignificant(t *testing.T) {
	for _, tt := range []struct {
		name              string
		threshold         float64
		requests, failing int // recorded, then failing answers before the one asked
		refused           bool
	}{
		{"1 of 1", 0.1, 1, 0, true},
		{"1 of 0 requests: taken as 1 of 1", 0.1, 0, 0, true},
		{"1 of 2: 0.19", 0.1, 2, 0, false},
		{"2 of 2: 0.01", 0.1, 2, 1, true},
		{"2 of 10: 0.26", 0.1, 10, 1, false},
		{"3 of 10: 0.07", 0.1, 10, 2, true},
		{"10 of 64: 0.16", 0.1, 64, 9, false},
		{"11 of 64: 0.087", 0.1, 64, 10, true},
		{"10 of 65, normal: z 0.90", 0.1, 65, 9, false},
		{"11 of 65, normal: z 1.32", 0.1, 65, 10, true},
		{"14 of 100, normal: z 1.17", 0.1, 100, 13, false},
		{"15 of 100, normal: z 1.50", 0.1, 100, 14, true},
		{"52 of 1000, 5 % failures", 0.1, 1000, 51, false},
		{"2 of 3 at 0.5: 0.5, a tie", 0.5, 3, 1, true},
		{"33 of 65 at 0.5, normal: 0 σ above 32.5 + 0.5, not above", 0.5, 65, 32, false},
		{"34 of 65 at 0.5, normal", 0.5, 65, 33, true},
		{"1 of 3 at 0.5: 0.875", 0.5, 3, 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, spent := range []bool{true, false} {
				s := newShare(t, Config{Threshold: tt.threshold, Burst: 1}, new(manualClock))
				for range tt.requests {
					s.Record("r", "c", false)
				}
				s.fail("r", tt.failing)
				if spent {
					s.spend("r")
				}
				if got := s.Refuse("r", "c"); got != (tt.refused && spent) {
					t.Errorf("allowance spent %v: Refuse = %v, want %v", spent, got, tt.refused && spent)
				}
				if got, want := significant(tt.failing+1, tt.requests, tt.threshold), tt.refused; got != want {
					t.Errorf("the test's model: significant = %v, want %v", got, want)
				}
			}
		})
	}
}

// TestRefuseAllowance: a route's allowance starts at Burst, gains
// Threshold per request up to Burst, and loses 1 per failing answer let be
// retried, down to 0: an answer that is not significant is let be retried
// with none left, and leaves none.
func TestRefuseAllowance(t *testing.T) {
	for _, burst := range []int{1, 4} {
		s := newShare(t, Config{Burst: burst}, new(manualClock))
		// An outage: every answer fails, and is significant from the first.
		var got []bool
		for range burst + 12 {
			s.Record("r", "c", false)
			got = append(got, s.Refuse("r", "c"))
		}
		// Burst let be retried at once (each request adds 0.1, up to Burst);
		// then the allowance is 0.1·(burst−1) + 0.1 short of... once 1 again.
		want := make([]bool, burst+12)
		a := float64(burst)
		for i := range want {
			a = min(a+0.1, float64(burst))
			if a >= 1-1e-9 {
				a--
			} else {
				want[i] = true
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("Burst %d: refused %v, want %v", burst, got, want)
		}
		// A healthy spell fills it up to Burst, no more.
		for range 1000 {
			s.Record("r", "c", false)
		}
		if a := s.allowance("r"); a != float64(burst) {
			t.Errorf("Burst %d: allowance %v after 1000 requests, want %d", burst, a, burst)
		}
	}
	// Answers that are not significant take the allowance down to 0, not
	// below: one request later it is 0.1.
	s := newShare(t, Config{Burst: 2}, new(manualClock))
	for range 100 {
		s.Record("r", "c", false)
	}
	for i := range 5 { // 5 of 100: not significant
		if s.Refuse("r", "c") {
			t.Fatalf("failing answer %d of 100 refused", i+1)
		}
	}
	if a := s.allowance("r"); a != 0 {
		t.Errorf("allowance %v after 5 answers let be retried from 2, want 0", a)
	}
	s.Record("r", "c", false)
	if a := s.allowance("r"); math.Abs(a-0.1) > 1e-9 {
		t.Errorf("allowance %v one request later, want 0.1", a)
	}
}

// TestRefuseCountsFailing: every failing answer asked of Refuse counts in
// its route's window, refused or not; in the route's window alone, and
// until it leaves the window.
func TestRefuseCountsFailing(t *testing.T) {
	c := new(manualClock)
	s := newShare(t, Config{Burst: 1}, c)
	for range 19 {
		s.Record("r", "c", false)
	}
	refused := 0
	for range 7 {
		if s.Refuse("r", "c") {
			refused++
		}
	}
	if refused == 0 || refused == 7 {
		t.Fatalf("%d of 7 failing answers of 19 requests refused: want some, not all", refused)
	}
	if req, ret, f := s.route("r").counts(s.observe()); req != 19 || ret != 0 || f != 7 {
		t.Errorf("route counts %d requests, %d retries, %d failing answers; want 19, 0, 7", req, ret, f)
	}
	a, b := s.slotsOf("c")
	for _, w := range []*window{a, b} {
		if req, _, f := w.counts(s.observe()); req != 19 || f != 0 {
			t.Errorf("caller slot counts %d requests, %d failing answers; want 19, 0", req, f)
		}
	}
	c.set(10 * time.Second) // all of it has left the window
	s.Record("r", "c", false)
	if _, _, f := s.route("r").counts(s.observe()); f != 0 {
		t.Errorf("%d failing answers in the new window, want 0", f)
	}
}

// TestRefuseThresholdOneNeverRefuses: a Share of Threshold 1, which the
// server integrations document as refusing nothing, lets every failing
// answer be retried, even a burst of more than Burst answers to requests
// recorded before any of them (concurrent calls failing together), and
// with its allowance spent.
func TestRefuseThresholdOneNeverRefuses(t *testing.T) {
	s := newShare(t, Config{Threshold: 1}, new(manualClock))
	for range 10 {
		s.Record("r", "c", false)
	}
	for i := range 10 {
		if s.Refuse("r", "c") {
			t.Fatalf("Threshold 1: failing answer %d of a burst of 10 refused", i+1)
		}
	}
	for _, requests := range []int{10, 100} { // exact, normal: significant, yet let be retried
		if !significant(1, requests, 1) {
			t.Fatalf("the test's model: 1 of %d at Threshold 1 not significant", requests)
		}
		s := newShare(t, Config{Threshold: 1, Burst: 1}, new(manualClock))
		for range requests {
			s.Record("r", "c", false)
		}
		s.spend("r")
		if s.Refuse("r", "c") {
			t.Errorf("Threshold 1, %d requests: a failing answer refused with the allowance spent", requests)
		}
	}
}

// TestRefuseNormalTinyThreshold: from 65 requests, below a Threshold of
// 2⁻⁵⁴ (where math.Erfcinv(2·Threshold) is +Inf) the rule still holds
// with z the quantile (8.5 at 1e-17, 38.5 at the least float64): 2 of
// 100, less 0.5, are 1.5 above the mean, far above z·√(n·Threshold), so
// significant, as 2 of 64 are by the exact tail.
func TestRefuseNormalTinyThreshold(t *testing.T) {
	for _, p := range []float64{1e-17, 1e-300, 5e-324} {
		for _, requests := range []int{64, 100, 1 << 20} {
			s := newShare(t, Config{Threshold: p, Burst: 1}, new(manualClock))
			for range requests {
				s.Record("r", "c", false)
			}
			s.fail("r", 1)
			s.spend("r")
			if !s.Refuse("r", "c") {
				t.Errorf("Threshold %g: 2 of %d failing answers not refused with the allowance spent", p, requests)
			}
		}
	}
}
