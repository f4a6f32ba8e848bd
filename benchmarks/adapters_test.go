package benchmarks

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Smallest delays used for loop tests and loop benchmarks (see adapters).
const tiny = time.Nanosecond

// TestAdapterDelayBounds checks every adapter's delays against the
// full-jitter bound [0, min(Cap, Base*2^(n-1))] for attempts 1..40, with
// sequences restarted several times, and that the cap is reached.
func TestAdapterDelayBounds(t *testing.T) {
	for _, a := range Adapters() {
		t.Run(a.Name(), func(t *testing.T) {
			seq := a.NewSeq(Base, Cap)
			maxSeen := make([]time.Duration, 41)
			for rep := 0; rep < 200; rep++ {
				for n := 1; n <= 40; n++ {
					d := seq.Delay(n)
					if c := Ceiling(Base, Cap, n); d < 0 || d > c {
						t.Fatalf("attempt %d: delay %v outside [0, %v]", n, d, c)
					}
					maxSeen[n] = max(maxSeen[n], d)
				}
			}
			// Statistical sanity: 200 draws should come near each ceiling
			// (a library without jitter returns the ceiling itself).
			for n := 1; n <= 40; n++ {
				if c := Ceiling(Base, Cap, n); maxSeen[n] < c*9/10 {
					t.Errorf("attempt %d: largest of 200 delays %v, far below ceiling %v", n, maxSeen[n], c)
				}
			}
		})
	}
}

// TestAdapterLoopCalls checks that every library's loop calls the operation
// exactly 1, 6 and 10 times (maxAttempts 10) when it succeeds at once, fails
// 5 times, or never succeeds; with the smallest delays so nothing sleeps.
func TestAdapterLoopCalls(t *testing.T) {
	cases := []struct {
		name      string
		fail      int
		wantCalls int
		wantErr   bool
	}{
		{"success", 0, 1, false},
		{"fail5", 5, 6, false},
		{"never", -1, 10, true},
	}
	for _, a := range Adapters() {
		for _, tc := range cases {
			t.Run(a.Name()+"/"+tc.name, func(t *testing.T) {
				op := &Op{Fail: tc.fail}
				run := a.NewRetrier(op, tiny, tiny, 10)
				for rep := 0; rep < 3; rep++ { // a retrier is reused across calls
					op.Reset()
					start := time.Now()
					err := run(context.Background())
					if op.Calls != tc.wantCalls {
						t.Fatalf("rep %d: %d calls, want %d (err %v)", rep, op.Calls, tc.wantCalls, err)
					}
					if (err != nil) != tc.wantErr {
						t.Fatalf("rep %d: err = %v, want error: %v", rep, err, tc.wantErr)
					}
					if tc.wantErr && !errors.Is(err, ErrFail) {
						t.Errorf("rep %d: error does not wrap ErrFail: %v", rep, err)
					}
					if el := time.Since(start); el > time.Second {
						t.Fatalf("loop took %v: it really slept", el)
					}
				}
			})
		}
	}
}

// TestAdapterLoopCancel checks each loop returns when its context ends
// during a long sleep (only for libraries whose loop takes a context).
func TestAdapterLoopCancel(t *testing.T) {
	for _, a := range Adapters() {
		t.Run(a.Name(), func(t *testing.T) {
			op := &Op{Fail: -1}
			run := a.NewRetrier(op, time.Hour, time.Hour, 10)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			defer cancel()
			done := make(chan error, 1)
			start := time.Now()
			go func() { done <- run(ctx) }()
			select {
			case err := <-done:
				// Every library reports either the context's end or the
				// last error (or both); none may report success.
				if err == nil || !(errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrFail)) {
					t.Errorf("loop returned %v, want the context's error or the last error", err)
				}
				if el := time.Since(start); el > time.Second {
					t.Errorf("loop returned %v after the context ended at 20ms", el)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("loop did not return after its context ended")
			}
		})
	}
}

func TestCeiling(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want time.Duration
	}{{1, Base}, {2, 2 * Base}, {7, 64 * Base}, {8, Cap}, {1 << 40, Cap}} {
		if got := Ceiling(Base, Cap, tc.n); got != tc.want {
			t.Errorf("Ceiling(%d) = %v, want %v", tc.n, got, tc.want)
		}
	}
	if got := Ceiling(Base, NoCap, 38); got != 1<<63-1 {
		t.Errorf("Ceiling(38, NoCap) = %v", got)
	}
	if got := Ceiling(Base, NoCap, 37); got != Base<<36 {
		t.Errorf("Ceiling(37, NoCap) = %v", got)
	}
}
