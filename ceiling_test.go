package backoff

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// doublingCeiling is the reference definition: double from base until the
// attempt is reached or the cap would be passed.
func doublingCeiling(base, cap time.Duration, attempt int) time.Duration {
	d := base
	for i := 1; i < attempt; i++ {
		if d > cap/2 {
			return cap
		}
		d *= 2
	}
	return min(d, cap)
}

func TestCeilingTable(t *testing.T) {
	const maxD = time.Duration(math.MaxInt64)
	tests := []struct {
		base, cap time.Duration
		attempt   int
		want      time.Duration
	}{
		{100 * time.Millisecond, 10 * time.Second, 1, 100 * time.Millisecond},
		{100 * time.Millisecond, 10 * time.Second, 2, 200 * time.Millisecond},
		{100 * time.Millisecond, 10 * time.Second, 7, 6400 * time.Millisecond},
		{100 * time.Millisecond, 10 * time.Second, 8, 10 * time.Second},
		{100 * time.Millisecond, 10 * time.Second, 0, 100 * time.Millisecond},
		{100 * time.Millisecond, 10 * time.Second, -7, 100 * time.Millisecond},
		{100 * time.Millisecond, 10 * time.Second, math.MaxInt, 10 * time.Second},
		{time.Second, maxD, 34, time.Second << 33},
		{time.Second, maxD, 35, maxD},
		{time.Second, maxD, 40, maxD},
		{1, maxD, 63, 1 << 62},
		{1, maxD, 64, maxD},
		{1, maxD, 65, maxD},
		{1, maxD, 1e6, maxD},
		{1, maxD, math.MaxInt, maxD},
		{maxD, maxD, 1, maxD},
		{maxD, maxD, math.MaxInt, maxD},
		{1, 1, 2, 1},
		{3, 10, 2, 6},
		{3, 10, 3, 10},
	}
	for _, tt := range tests {
		got := ceiling(tt.base, tt.cap, tt.attempt)
		if got != tt.want {
			t.Errorf("ceiling(%d, %d, %d) = %d, want %d", tt.base, tt.cap, tt.attempt, got, tt.want)
		}
	}
}

func TestCeilingMatchesDoubling(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		base, cap := randomConfig(r)
		attempt := randomAttempt(r)
		got := ceiling(base, cap, attempt)
		if want := doublingCeiling(base, cap, attempt); got != want {
			t.Fatalf("ceiling(%d, %d, %d) = %d, doubling gives %d", base, cap, attempt, got, want)
		}
		if got < base || got > cap {
			t.Fatalf("ceiling(%d, %d, %d) = %d outside [base, cap]", base, cap, attempt, got)
		}
	}
}

func FuzzCeiling(f *testing.F) {
	f.Add(int64(1), int64(math.MaxInt64), 64)
	f.Add(int64(time.Second), int64(math.MaxInt64), 34)
	f.Add(int64(100*time.Millisecond), int64(10*time.Second), 0)
	f.Fuzz(func(t *testing.T, base, cap int64, attempt int) {
		if base <= 0 || cap < base {
			t.Skip()
		}
		b, c := time.Duration(base), time.Duration(cap)
		got := ceiling(b, c, attempt)
		if want := doublingCeiling(b, c, attempt); got != want {
			t.Fatalf("ceiling(%d, %d, %d) = %d, doubling gives %d", base, cap, attempt, got, want)
		}
	})
}
