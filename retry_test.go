package backoff

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// failing returns a function that fails n times with err and then succeeds,
// recording the (fake) time of every call.
func failing(n int, err error) (fn func(context.Context) error, calls *[]time.Time) {
	calls = new([]time.Time)
	fn = func(context.Context) error {
		*calls = append(*calls, time.Now())
		if len(*calls) <= n {
			return err
		}
		return nil
	}
	return fn, calls
}

func gaps(calls []time.Time) []time.Duration {
	var out []time.Duration
	for i := 1; i < len(calls); i++ {
		out = append(out, calls[i].Sub(calls[i-1]))
	}
	return out
}

func expPolicy(maxAttempts int) *Exponential {
	return Must(NewExponential(Config{Base: time.Second, Cap: 8 * time.Second, MaxAttempts: maxAttempts}))
}

func TestDoSucceedsAfterRetriesWithExactDelays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fn, calls := failing(4, errTransient)
		if err := Do(t.Context(), fn, expPolicy(10)); err != nil {
			t.Fatalf("Do = %v", err)
		}
		want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}
		if got := gaps(*calls); !equalDurations(got, want) {
			t.Errorf("delays %v, want %v", got, want)
		}
	})
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestDoStopReasons(t *testing.T) {
	errBoom := errors.New("boom")
	decline := PolicyFunc(func(int, error) (time.Duration, bool) { return 0, false })
	tests := []struct {
		name         string
		fails        int
		err          error
		policy       Policy
		deadline     time.Duration // 0: none
		wantReason   error
		wantAttempts int
		wantElapsed  time.Duration
	}{
		{"exhausted", 100, errBoom, expPolicy(3), 0, ErrExhausted, 3, 3 * time.Second},
		{"one attempt", 100, errBoom, expPolicy(1), 0, ErrExhausted, 1, 0},
		{"permanent", 100, Permanent(errBoom), expPolicy(5), 0, ErrPermanent, 1, 0},
		{"declared permanent", 100, retryableErr(false), expPolicy(5), 0, ErrPermanent, 1, 0},
		{"declined", 100, errBoom, decline, 0, ErrDeclined, 1, 0},
		// Calls at 0, 1s, 3s; the next delay, 4s, would end at 7s > 5s.
		{"deadline early stop", 100, errBoom, expPolicy(10), 5 * time.Second, ErrDeadline, 3, 3 * time.Second},
		// Calls at 0 and 1s; the next delay, 2s, would end exactly at the
		// deadline, where the call could only fail.
		{"delay ends at the deadline", 2, errBoom, expPolicy(10), 3 * time.Second, ErrDeadline, 2, time.Second},
		{"delay ends before the deadline", 2, errBoom, expPolicy(10), 3*time.Second + 1, nil, 3, 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := t.Context()
				if tt.deadline > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tt.deadline)
					defer cancel()
				}
				start := time.Now()
				fn, calls := failing(tt.fails, tt.err)
				err := Do(ctx, fn, tt.policy)
				if elapsed := time.Since(start); elapsed != tt.wantElapsed {
					t.Errorf("elapsed %v, want %v", elapsed, tt.wantElapsed)
				}
				if len(*calls) != tt.wantAttempts {
					t.Errorf("fn called %d times, want %d", len(*calls), tt.wantAttempts)
				}
				if tt.wantReason == nil {
					if err != nil {
						t.Fatalf("Do = %v, want success", err)
					}
					return
				}
				var e *Error
				if !errors.As(err, &e) {
					t.Fatalf("Do = %v (%T), want *Error", err, err)
				}
				if !errors.Is(err, tt.wantReason) || e.Reason != tt.wantReason {
					t.Errorf("reason %v, want %v", e.Reason, tt.wantReason)
				}
				if e.Attempts != tt.wantAttempts {
					t.Errorf("Attempts = %d, want %d", e.Attempts, tt.wantAttempts)
				}
				if !errors.Is(err, errBoom) && !errors.As(err, new(retryableErr)) {
					t.Errorf("last error not reachable from %v", err)
				}
				for _, other := range []error{ErrPermanent, ErrExhausted, ErrDeclined, ErrDeadline} {
					if other != tt.wantReason && errors.Is(err, other) {
						t.Errorf("%v also matches %v", err, other)
					}
				}
			})
		})
	}
}

func TestDoDeadlineStopMatchesDeadlineExceeded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		fn, _ := failing(100, errTransient)
		err := Do(ctx, fn, expPolicy(10)) // the first delay, 1s, would end at the deadline
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Do = %v, want a match for context.DeadlineExceeded", err)
		}
		if !errors.Is(err, ErrDeadline) {
			t.Errorf("Do = %v, want ErrDeadline", err)
		}
	})
}

func TestDoContextDoneBeforeFirstCall(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	called := false
	err := Do(ctx, func(context.Context) error { called = true; return nil }, expPolicy(3))
	var e *Error
	if called || !errors.As(err, &e) || !errors.Is(err, context.Canceled) || e.Attempts != 0 || e.Err != nil {
		t.Fatalf("called=%v err=%#v", called, err)
	}
	if got := err.Error(); got != "context canceled after 0 attempts" {
		t.Errorf("message %q", got)
	}
}

func TestDoCancelDuringSleepReturnsPromptly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		long := PolicyFunc(func(int, error) (time.Duration, bool) { return time.Hour, true })
		time.AfterFunc(1500*time.Millisecond, cancel)
		start := time.Now()
		err := Do(ctx, func(context.Context) error { return errTransient }, long)
		if elapsed := time.Since(start); elapsed != 1500*time.Millisecond {
			t.Errorf("returned after %v, want 1.5s", elapsed)
		}
		var e *Error
		if !errors.As(err, &e) || e.Reason != context.Canceled || !errors.Is(err, errTransient) || e.Attempts != 1 {
			t.Errorf("Do = %v", err)
		}
	})
}

func TestDoContextEndsDuringCall(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	err := Do(ctx, func(context.Context) error { cancel(); return errTransient }, expPolicy(5))
	var e *Error
	if !errors.As(err, &e) || e.Reason != context.Canceled || e.Attempts != 1 || !errors.Is(err, errTransient) {
		t.Errorf("Do = %v", err)
	}
}

func TestDoValue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := 0
		v, err := DoValue(t.Context(), func(context.Context) (string, error) {
			n++
			if n < 3 {
				return "partial", errTransient
			}
			return "row", nil
		}, expPolicy(5))
		if v != "row" || err != nil || n != 3 {
			t.Errorf("DoValue = %q, %v after %d calls", v, err, n)
		}
		v, err = DoValue(t.Context(), func(context.Context) (string, error) { return "partial", errTransient }, expPolicy(2))
		if v != "" || !errors.Is(err, ErrExhausted) {
			t.Errorf("failed DoValue = %q, %v; want zero value and ErrExhausted", v, err)
		}
	})
}

func TestDoNestedPermanentDoesNotLeak(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		outerCalls := 0
		err := Do(t.Context(), func(ctx context.Context) error {
			outerCalls++
			if outerCalls == 3 {
				return nil
			}
			return Do(ctx, func(context.Context) error { return Permanent(errTransient) }, expPolicy(5))
		}, expPolicy(5))
		if err != nil || outerCalls != 3 {
			t.Errorf("outer Do = %v after %d calls; an inner give-up must not stop it", err, outerCalls)
		}
	})
}

func TestDoNegativeAndZeroDelays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		negative := PolicyFunc(func(attempt int, _ error) (time.Duration, bool) { return -time.Hour, attempt < 4 })
		start := time.Now()
		fn, calls := failing(100, errTransient)
		err := Do(t.Context(), fn, negative)
		if !errors.Is(err, ErrDeclined) || len(*calls) != 4 || time.Since(start) != 0 {
			t.Errorf("Do = %v, %d calls, %v elapsed", err, len(*calls), time.Since(start))
		}
	})
}

func TestDoRejectsNilArguments(t *testing.T) {
	var pe *ParamError
	if err := Do(context.Background(), nil, expPolicy(1)); !errors.As(err, &pe) || pe.Param != "fn" {
		t.Errorf("Do(nil fn) = %v", err)
	}
	if err := Do(context.Background(), func(context.Context) error { return nil }, nil); !errors.As(err, &pe) || pe.Param != "p" {
		t.Errorf("Do(nil policy) = %v", err)
	}
	if _, err := DoValue[int](context.Background(), nil, expPolicy(1)); !errors.As(err, &pe) || pe.Param != "fn" {
		t.Errorf("DoValue(nil fn) = %v", err)
	}
	if v, err := DoValue(context.Background(), func(context.Context) (int, error) { return 1, nil }, nil); v != 0 || !errors.As(err, &pe) || pe.Param != "p" {
		t.Errorf("DoValue(nil policy) = %v, %v", v, err)
	}
}

func TestDoPanicPropagates(t *testing.T) {
	type sentinel struct{}
	defer func() {
		if r := recover(); r != (sentinel{}) {
			t.Errorf("recovered %v, want the panic value from fn", r)
		}
	}()
	_ = Do(context.Background(), func(context.Context) error { panic(sentinel{}) }, expPolicy(3))
}

// TestConcurrentDecorrelatedSequences runs many Do calls sharing one
// Decorrelated policy and checks each call's delays form one valid sequence:
// every delay in [Base, min(Cap, 3·previous)], previous starting at Base.
func TestConcurrentDecorrelatedSequences(t *testing.T) {
	cfg := Config{Base: 10 * time.Millisecond, Cap: time.Second, MaxAttempts: 12}
	shared := Must(NewDecorrelated(cfg, NewSeededRng(7)))
	synctest.Test(t, func(t *testing.T) {
		var wg sync.WaitGroup
		for range 32 {
			wg.Go(func() {
				fn, calls := failing(100, errTransient)
				_ = Do(t.Context(), fn, shared)
				prev := cfg.Base
				for i, d := range gaps(*calls) {
					if d < cfg.Base || d > min(cfg.Cap, 3*prev) {
						t.Errorf("delay %d = %v outside [%v, %v]", i, d, cfg.Base, min(cfg.Cap, 3*prev))
					}
					prev = d
				}
				if len(*calls) != cfg.MaxAttempts {
					t.Errorf("%d calls, want %d", len(*calls), cfg.MaxAttempts)
				}
			})
		}
		wg.Wait()
	})
}

func TestDoRetryAfterHint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := Must(NewRetryAfter(expPolicy(10), RetryAfterConfig{MaxAttempts: 10, MaxWait: time.Minute}))
		n := 0
		var calls []time.Time
		err := Do(t.Context(), func(context.Context) error {
			calls = append(calls, time.Now())
			n++
			switch n {
			case 1:
				return WithRetryAfter(errTransient, 7*time.Second)
			case 2:
				return errTransient
			}
			return nil
		}, p)
		if want := []time.Duration{7 * time.Second, 2 * time.Second}; err != nil || !equalDurations(gaps(calls), want) {
			t.Errorf("Do = %v, delays %v, want %v", err, gaps(calls), want)
		}
	})
}

func TestDoAttemptCounterSaturates(t *testing.T) {
	if saturatingInc(math.MaxInt) != math.MaxInt || saturatingInc(1) != 2 {
		t.Error("saturatingInc wraps")
	}
}

func TestDoAllocations(t *testing.T) {
	ctx := context.Background()
	ok := func(context.Context) error { return nil }
	okValue := func(context.Context) (int, error) { return 42, nil }
	for _, p := range policiesFor(t, Config{Base: 1, Cap: 1, MaxAttempts: 3}, RuntimeRng{}) {
		if n := testing.AllocsPerRun(100, func() { _ = Do(ctx, ok, p.policy) }); n != 0 {
			t.Errorf("%s: Do succeeding at once allocates %v times, want 0", p.name, n)
		}
		if n := testing.AllocsPerRun(100, func() { _, _ = DoValue(ctx, okValue, p.policy) }); n != 0 {
			t.Errorf("%s: DoValue succeeding at once allocates %v times, want 0", p.name, n)
		}
	}
	// With zero delays the cost per call must not grow with the retries.
	zero := PolicyFunc(func(int, error) (time.Duration, bool) { return 0, true })
	a5 := allocsWithRetries(ctx, 5, errTransient, zero)
	a50 := allocsWithRetries(ctx, 50, errTransient, zero)
	if a5 != a50 || a5 != 0 {
		t.Errorf("Do with 5 zero-delay retries: %v allocs, with 50: %v; want the same, and 0", a5, a50)
	}
}

func TestDoRetryAfterStopReasons(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner := Must(NewFullJitter(Config{Base: time.Second, Cap: time.Minute, MaxAttempts: 3}, NewSeededRng(1)))
		loose := Must(NewRetryAfter(inner, RetryAfterConfig{MaxAttempts: Unlimited, MaxWait: time.Minute}))
		fn, calls := failing(100, errTransient)
		if err := Do(t.Context(), fn, loose); !errors.Is(err, ErrExhausted) || len(*calls) != 3 {
			t.Errorf("wrapped policy's limit: %v after %d calls, want ErrExhausted after 3", err, len(*calls))
		}
		strict := Must(NewRetryAfter(inner, RetryAfterConfig{MaxAttempts: 10, MaxWait: time.Second, OverMax: GiveUp}))
		tooLong := WithRetryAfter(errTransient, time.Hour)
		err := Do(t.Context(), func(context.Context) error { return tooLong }, strict)
		if !errors.Is(err, ErrDeclined) || errors.Is(err, ErrExhausted) {
			t.Errorf("hint over MaxWait: %v, want ErrDeclined", err)
		}
		own := Must(NewRetryAfter(inner, RetryAfterConfig{MaxAttempts: 2, MaxWait: time.Hour}))
		err = Do(t.Context(), func(context.Context) error { return WithRetryAfter(errTransient, time.Second) }, own)
		if !errors.Is(err, ErrExhausted) {
			t.Errorf("own limit: %v, want ErrExhausted", err)
		}
	})
}

// clockCtx is a context that ends at a fixed (fake) time: its Err depends on
// the clock alone, so a test can make the retry timer and the end of the
// context coincide exactly, with no goroutine racing to cancel.
type clockCtx struct {
	context.Context
	end  time.Time
	done chan struct{}
}

func newClockCtx(parent context.Context, after time.Duration) clockCtx {
	c := clockCtx{Context: parent, end: time.Now().Add(after), done: make(chan struct{})}
	time.AfterFunc(after, func() { close(c.done) })
	return c
}

func (c clockCtx) Done() <-chan struct{} { return c.done }

func (c clockCtx) Err() error {
	if time.Now().Before(c.end) {
		return nil
	}
	return context.Canceled
}

func TestDoNeverCallsWithDoneContextAfterSleep(t *testing.T) {
	for range 50 {
		synctest.Test(t, func(t *testing.T) {
			ctx := newClockCtx(t.Context(), time.Second)
			p := PolicyFunc(func(int, error) (time.Duration, bool) { return time.Second, true })
			calls := 0
			err := Do(ctx, func(ctx context.Context) error {
				if calls++; ctx.Err() != nil {
					t.Fatal("fn called with a done context")
				}
				return errTransient
			}, p)
			if calls != 1 || !errors.Is(err, context.Canceled) {
				t.Fatalf("Do = %v after %d calls", err, calls)
			}
		})
	}
}

func TestDoTypedNilPolicy(t *testing.T) {
	var pe *ParamError
	for _, p := range []Policy{(*FullJitter)(nil), PolicyFunc(nil)} {
		err := Do(context.Background(), func(context.Context) error { return errTransient }, p)
		if !errors.As(err, &pe) || pe.Param != "p" || !errors.Is(err, errTransient) {
			t.Errorf("Do with %T(nil) = %v, want a ParamError for p", p, err)
		}
	}
}

func TestDoNestedReasonIsOwn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		err := Do(t.Context(), func(ctx context.Context) error {
			return Do(ctx, func(context.Context) error { return Permanent(errTransient) }, expPolicy(5))
		}, expPolicy(2))
		var e *Error
		if !errors.As(err, &e) || e.Reason != ErrExhausted || e.Attempts != 2 || !errors.Is(err, errTransient) {
			t.Errorf("outer Do = %v, want its own reason ErrExhausted after 2 attempts", err)
		}
	})
}

// TestDoTimerReuse checks that allocations do not grow with retries that
// really wait: one timer per call, reused.
func TestDoTimerReuse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		p := Must(NewFullJitter(Config{Base: time.Second, Cap: time.Second, MaxAttempts: Unlimited}, RuntimeRng{}))
		ra := Must(NewRetryAfter(p, RetryAfterConfig{MaxAttempts: Unlimited, MaxWait: time.Minute}))
		hinted := WithRetryAfter(errTransient, time.Second)
		for _, policy := range []Policy{p, ra} {
			a5 := allocsWithRetries(ctx, 5, hinted, policy)
			a50 := allocsWithRetries(ctx, 50, hinted, policy)
			if a5 != a50 {
				t.Errorf("%T: 5 retries cost %v allocations, 50 cost %v; want the same", policy, a5, a50)
			}
		}
	})
}

// allocsWithRetries returns the average allocations of a Do call whose
// function fails `retries` times with err and then succeeds.
func allocsWithRetries(ctx context.Context, retries int, err error, p Policy) float64 {
	calls := 0
	fn := func(context.Context) error {
		if calls++; calls > retries {
			return nil
		}
		return err
	}
	return testing.AllocsPerRun(20, func() { calls = 0; _ = Do(ctx, fn, p) })
}

func TestDoKeepsContextCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		errShutdown := errors.New("shutting down")
		ctx, cancel := context.WithCancelCause(t.Context())
		time.AfterFunc(1500*time.Millisecond, func() { cancel(errShutdown) })
		fn, _ := failing(100, errTransient)
		err := Do(ctx, fn, expPolicy(10))
		for _, want := range []error{context.Canceled, errShutdown, errTransient} {
			if !errors.Is(err, want) {
				t.Errorf("Do = %v, want a match for %v", err, want)
			}
		}
		if got := err.Error(); got != "context canceled (shutting down) after 2 attempts: transient" {
			t.Errorf("message %q", got)
		}
	})
}
