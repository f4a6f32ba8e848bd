package backoff

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func gaps(calls []time.Time) []time.Duration {
	var out []time.Duration
	for i := 1; i < len(calls); i++ {
		out = append(out, calls[i].Sub(calls[i-1]))
	}
	return out
}

func TestDoSucceedsAfterRetriesWithExactDelays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fn, calls := failing(4, errTransient)
		if err := Do(t.Context(), fn, expPolicy(10)); err != nil {
			t.Fatalf("Do = %v", err)
		}
		want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}
		if got := gaps(*calls); !slices.Equal(got, want) {
			t.Errorf("delays %v, want %v", got, want)
		}
	})
}

func TestDoStopReasons(t *testing.T) {
	errBoom := errors.New("boom")
	errMine := errors.New("my policy's reason")
	mine := PolicyFunc(func(int, error) (time.Duration, error) { return 0, errMine })
	// ignoring retries everything, even what is not retryable: Do's own
	// check must still stop at a permanent error.
	ignoring := PolicyFunc(func(int, error) (time.Duration, error) { return 0, nil })
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
		{"policy's own reason", 100, errBoom, mine, 0, errMine, 1, 0},
		{"permanent under a policy that ignores err", 100, Permanent(errBoom), ignoring, 0, ErrPermanent, 1, 0},
		{"inner timeout retried", 2, context.DeadlineExceeded, expPolicy(10), 0, nil, 3, 3 * time.Second},
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
				ctx := withDeadline(t, tt.deadline)
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
				if tt.wantReason == ErrDeadline && !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("Do = %v, want a match for context.DeadlineExceeded", err)
				}
				if e.Attempts != tt.wantAttempts {
					t.Errorf("Attempts = %d, want %d", e.Attempts, tt.wantAttempts)
				}
				if !errors.Is(err, tt.err) || e.Err != tt.err {
					t.Errorf("last error not kept in %v", err)
				}
				for _, other := range []error{ErrPermanent, ErrExhausted, ErrDeadline, ErrBudget, errMine} {
					if other != tt.wantReason && errors.Is(err, other) {
						t.Errorf("%v also matches %v", err, other)
					}
				}
			})
		})
	}
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
	if got := err.Error(); got != "backoff: stopped before the first attempt (context canceled)" {
		t.Errorf("message %q", got)
	}
}

func TestDoCancelDuringSleepReturnsPromptly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		long := PolicyFunc(func(int, error) (time.Duration, error) { return time.Hour, nil })
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
		negative := PolicyFunc(func(attempt int, _ error) (time.Duration, error) { return -time.Hour, stopAt(attempt, 4) })
		start := time.Now()
		fn, calls := failing(100, errTransient)
		err := Do(t.Context(), fn, negative)
		if !errors.Is(err, ErrExhausted) || len(*calls) != 4 || time.Since(start) != 0 {
			t.Errorf("Do = %v, %d calls, %v elapsed", err, len(*calls), time.Since(start))
		}
	})
}

// panicParam runs f and returns the Param of the *ParamError it panicked
// with, or "" when it did not panic with one.
func panicParam(f func()) (param string) {
	defer func() {
		if pe, ok := recover().(*ParamError); ok {
			param = pe.Param
		}
	}()
	f()
	return ""
}

// TestDoPanicsOnNilArguments: a nil fn or policy, plain or typed, is a
// programming error reported one way, a panic with a *ParamError naming it.
func TestDoPanicsOnNilArguments(t *testing.T) {
	ctx := context.Background()
	calls := 0
	fails := func(context.Context) error { calls++; return errTransient }
	failsValue := func(context.Context) (int, error) { calls++; return 0, errTransient }
	tests := []struct {
		name string
		call func()
		want string
	}{
		{"Do nil fn", func() { Do(ctx, nil, expPolicy(1)) }, "fn"},
		{"DoValue nil fn", func() { DoValue[int](ctx, nil, expPolicy(1)) }, "fn"},
		{"Do nil policy", func() { Do(ctx, fails, nil) }, "Policy"},
		{"DoValue nil policy", func() { DoValue(ctx, failsValue, nil) }, "Policy"},
		{"Do typed nil *FullJitter", func() { Do(ctx, fails, (*FullJitter)(nil)) }, "Policy"},
		{"Do typed nil PolicyFunc", func() { Do(ctx, fails, PolicyFunc(nil)) }, "Policy"},
		{"DoValue typed nil", func() { DoValue(ctx, failsValue, (*Decorrelated)(nil)) }, "Policy"},
		{"Retrier without policy", func() { (&Retrier{}).Do(ctx, fails) }, "Policy"},
		{"Retrier with typed nil policy", func() { (&Retrier{Policy: (*FullJitter)(nil)}).Do(ctx, fails) }, "Policy"},
	}
	for _, tt := range tests {
		calls = 0
		if got := panicParam(tt.call); got != tt.want {
			t.Errorf("%s: panicked with a ParamError for %q, want %q", tt.name, got, tt.want)
		}
		if calls > 1 {
			t.Errorf("%s: fn called %d times before the panic", tt.name, calls)
		}
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
		p := Must(NewRetryAfter(expPolicy(10), RetryAfterConfig{MaxWait: time.Minute}))
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
		if want := []time.Duration{7 * time.Second, 2 * time.Second}; err != nil || !slices.Equal(gaps(calls), want) {
			t.Errorf("Do = %v, delays %v, want %v", err, gaps(calls), want)
		}
	})
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
	zero := PolicyFunc(func(int, error) (time.Duration, error) { return 0, nil })
	a5 := allocsWithRetries(ctx, 5, errTransient, zero)
	a50 := allocsWithRetries(ctx, 50, errTransient, zero)
	if a5 != a50 || a5 != 0 {
		t.Errorf("Do with 5 zero-delay retries: %v allocs, with 50: %v; want the same, and 0", a5, a50)
	}
}

func TestDoRetryAfterStopReasons(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner := Must(NewFullJitter(Config{Base: time.Second, Cap: time.Minute, MaxAttempts: 3}, NewSeededRng(1)))
		loose := Must(NewRetryAfter(inner, RetryAfterConfig{MaxWait: time.Minute}))
		fn, calls := failing(100, errTransient)
		if err := Do(t.Context(), fn, loose); !errors.Is(err, ErrExhausted) || len(*calls) != 3 {
			t.Errorf("wrapped policy's limit: %v after %d calls, want ErrExhausted after 3", err, len(*calls))
		}
		// One attempt budget: the wrapped policy's limit stops hinted
		// retries too.
		hintedCalls := 0
		err := Do(t.Context(), func(context.Context) error {
			hintedCalls++
			return WithRetryAfter(errTransient, time.Second)
		}, loose)
		if !errors.Is(err, ErrExhausted) || hintedCalls != 3 {
			t.Errorf("hinted retries: %v after %d calls, want ErrExhausted after 3", err, hintedCalls)
		}
		strict := Must(NewRetryAfter(inner, RetryAfterConfig{MaxWait: time.Second, GiveUp: true}))
		tooLong := WithRetryAfter(errTransient, time.Hour)
		err = Do(t.Context(), func(context.Context) error { return tooLong }, strict)
		var hte *hintTooLongError
		if !errors.Is(err, ErrHintTooLong) || errors.Is(err, ErrExhausted) || !errors.As(err, &hte) ||
			hte.hint != time.Hour || hte.maxWait != time.Second {
			t.Errorf("hint over MaxWait: %v, want the hint-too-long reason for 1h over 1s", err)
		}
		if want := "backoff: stopped after 1 attempt (server asked to wait 1h0m0s, over MaxWait 1s): transient (retry after 1h0m0s)"; err.Error() != want {
			t.Errorf("message %q, want %q", err, want)
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
			p := PolicyFunc(func(int, error) (time.Duration, error) { return time.Second, nil })
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

// TestDoNeverCallsWithDoneContextAfterZeroDelay: a context that ends after
// the loop's own check of it, in the policy's NextDelay or in OnRetry, stops
// a retry whose delay is zero (or negative, which counts as zero) as it
// stops one that waits: fn is not called again.
func TestDoNeverCallsWithDoneContextAfterZeroDelay(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second} {
		for _, in := range []string{"NextDelay", "OnRetry"} {
			t.Run(fmt.Sprintf("%s/%v", in, d), func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				r := &Retrier{Policy: PolicyFunc(func(attempt int, _ error) (time.Duration, error) {
					if in == "NextDelay" {
						cancel()
					}
					return d, stopAt(attempt, 3)
				})}
				if in == "OnRetry" {
					r.OnRetry = func(context.Context, int, error, time.Duration) { cancel() }
				}
				calls := 0
				err := r.Do(ctx, func(ctx context.Context) error {
					if calls++; ctx.Err() != nil {
						t.Error("fn called with a done context")
					}
					return errTransient
				})
				var e *Error
				if calls != 1 || !errors.As(err, &e) || e.Reason != context.Canceled || e.Attempts != 1 {
					t.Errorf("Do = %v after %d calls, want context.Canceled after 1", err, calls)
				}
			})
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
		ra := Must(NewRetryAfter(p, RetryAfterConfig{MaxWait: time.Minute}))
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
	f := &flaky{n: retries, err: err}
	return testing.AllocsPerRun(20, func() { f.calls = 0; _ = Do(ctx, f.call, p) })
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
		if got := err.Error(); got != "backoff: stopped after 2 attempts (context canceled: shutting down): transient" {
			t.Errorf("message %q", got)
		}
	})
}
