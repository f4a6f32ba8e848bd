package backoff

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// recorder is a Loop's hooks writing what they see, in order.
type recorder struct {
	events []string
}

func (r *recorder) loop(p Policy, b *Budget) *Loop {
	return &Loop{
		Policy: p,
		Budget: b,
		OnRetry: func(_ context.Context, attempt int, err error, d time.Duration) {
			r.events = append(r.events, fmt.Sprintf("retry %d %v %v", attempt, err, d))
		},
		OnDone: func(_ context.Context, attempts int, err error) {
			reason := "ok"
			var e *Error
			if errors.As(err, &e) {
				reason = strings.TrimPrefix(e.Reason.Error(), "backoff: ")
			}
			r.events = append(r.events, fmt.Sprintf("done %d %s", attempts, reason))
		},
	}
}

// TestLoopHooks pins the order and count of the hooks for success and for
// every stop reason: OnRetry exactly for the retries made, OnDone once.
func TestLoopHooks(t *testing.T) {
	errMine := errors.New("mine")
	tests := []struct {
		name     string
		fails    int
		err      error
		policy   Policy
		deadline time.Duration
		cancelAt time.Duration
		budget   bool
		want     []string
	}{
		{"success at once", 0, errTransient, expPolicy(3), 0, 0, false, []string{"done 1 ok"}},
		{"success after retries", 2, errTransient, expPolicy(3), 0, 0, false,
			[]string{"retry 1 transient 1s", "retry 2 transient 2s", "done 3 ok"}},
		{"exhausted", 100, errTransient, expPolicy(3), 0, 0, false,
			[]string{"retry 1 transient 1s", "retry 2 transient 2s", "done 3 attempts exhausted"}},
		{"permanent", 100, Permanent(errTransient), expPolicy(3), 0, 0, false, []string{"done 1 error is not retryable"}},
		{"policy's reason", 100, errTransient, PolicyFunc(func(int, error) (time.Duration, error) { return 0, errMine }), 0, 0, false,
			[]string{"done 1 mine"}},
		// Calls at 0, 1s, 3s; the 4s delay would pass the 5s deadline: no
		// retry is announced for it.
		{"deadline early stop", 100, errTransient, expPolicy(10), 5 * time.Second, 0, false,
			[]string{"retry 1 transient 1s", "retry 2 transient 2s", "done 3 the next retry would start past the context deadline"}},
		{"cancelled while waiting", 100, errTransient, expPolicy(10), 0, 1500 * time.Millisecond, false,
			[]string{"retry 1 transient 1s", "retry 2 transient 2s", "done 2 context canceled"}},
		// A drained budget: the call's deposit (0.1) is not a retry, so
		// the first retry is refused and never announced.
		{"budget refuses", 100, errTransient, expPolicy(10), 0, 0, true,
			[]string{"done 1 retry budget exhausted: 0.10 of the 1 retry needed in store (each call earns 0.1, 10 accrue per second, at most 1 kept)"}},
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
				if tt.cancelAt > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithCancel(ctx)
					time.AfterFunc(tt.cancelAt, cancel)
				}
				var b *Budget
				if tt.budget {
					b = Must2(NewBudget(BudgetConfig{Burst: 1}))
					drain(b)
				}
				var r recorder
				fn, _ := failing(tt.fails, tt.err)
				err := Do(ctx, fn, r.loop(tt.policy, b))
				if got := strings.Join(r.events, "\n"); got != strings.Join(tt.want, "\n") {
					t.Errorf("hooks saw\n%s\nwant\n%s\n(Do = %v)", got, strings.Join(tt.want, "\n"), err)
				}
			})
		})
	}
}

func TestLoopBudgetStopsDo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A full store of 2 (the call's 0.1 finds it full and is lost);
		// the waits of 1s and 2s add only 0.003 at a reserve of 0.001/s,
		// so the third retry is refused.
		b := Must2(NewBudget(BudgetConfig{Reserve: 0.001, Burst: 2}))
		loop := &Loop{Policy: expPolicy(10), Budget: b}
		fn, calls := failing(100, errTransient)
		err := Do(t.Context(), fn, loop)
		var e *Error
		var be *BudgetError
		if !errors.As(err, &e) || !errors.Is(err, ErrBudget) || !errors.As(err, &be) || e.Err != errTransient {
			t.Fatalf("Do = %v, want an *Error with a BudgetError reason and the last error", err)
		}
		if e.Attempts != 3 || len(*calls) != 3 || be.Available != 0.003 {
			t.Errorf("Attempts %d, calls %d, available %v; want 3, 3 and 0.003", e.Attempts, len(*calls), be.Available)
		}
	})
}

// TestLoopBudgetSharedByConcurrentDo: 64 goroutines share one Loop; the
// retries made never exceed what the budget's bound allows.
func TestLoopBudgetSharedByConcurrentDo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := Must2(NewBudget(BudgetConfig{Ratio: 0.1, Burst: 1000}))
		drain(b) // empty, and far from full: no deposit is lost
		var retries atomic.Int64
		loop := &Loop{
			Policy:  PolicyFunc(func(attempt int, _ error) (time.Duration, error) { return 0, stopAt(attempt, 4) }),
			Budget:  b,
			OnRetry: func(context.Context, int, error, time.Duration) { retries.Add(1) },
		}
		var wg sync.WaitGroup
		for range 64 {
			wg.Go(func() {
				for range 100 {
					Do(t.Context(), func(context.Context) error { return errTransient }, loop)
				}
			})
		}
		wg.Wait()
		// Time stands still (zero delays), so no reserve accrues: 0.1 per
		// call, between what was retried and what is left in store, exactly.
		if bound, left := int64(64*100/10), int64(drain(b)); retries.Load() > bound || retries.Load()+left != bound {
			t.Errorf("%d retries made and %d left, want %d in all", retries.Load(), left, bound)
		}
	})
}

// TestLoopKeepsSequences: a Loop over a Decorrelated policy gives each Do
// call its own sequence, as the bare policy would.
func TestLoopKeepsSequences(t *testing.T) {
	cfg := Config{Base: time.Millisecond, Cap: time.Hour, MaxAttempts: 8}
	delays := func(p Policy) []time.Duration {
		var ds []time.Duration
		loop := &Loop{Policy: p, OnRetry: func(_ context.Context, _ int, _ error, d time.Duration) { ds = append(ds, d) }}
		synctest.Test(t, func(t *testing.T) {
			fn, _ := failing(100, errTransient)
			Do(t.Context(), fn, loop)
		})
		return ds
	}
	got := delays(Must(NewDecorrelated(cfg, NewSeededRng(7))))
	seq := Must(NewDecorrelated(cfg, NewSeededRng(7))).NewSequence()
	var want []time.Duration
	for attempt := 1; attempt < 8; attempt++ {
		d, _ := seq.NextDelay(attempt, errTransient)
		want = append(want, d)
	}
	if !equalDurations(got, want) {
		t.Errorf("Loop over Decorrelated waited %v, a sequence gives %v", got, want)
	}
	loop := &Loop{Policy: Must(NewDecorrelated(cfg, NewSeededRng(7)))}
	if _, ok := loop.NewSequence().(*decorrelatedSequence); !ok {
		t.Errorf("Loop.NewSequence = %T, want a decorrelated sequence", loop.NewSequence())
	}
	if d, err := loop.NextDelay(1, errTransient); err != nil || d < cfg.Base || d > 3*cfg.Base {
		t.Errorf("Loop.NextDelay = %v, %v; want the policy's first step", d, err)
	}
}

func TestLoopDoValueAndCancelledContext(t *testing.T) {
	var r recorder
	loop := r.loop(expPolicy(3), nil)
	v, err := DoValue(context.Background(), func(context.Context) (int, error) { return 7, nil }, loop)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err2 := DoValue(ctx, func(context.Context) (int, error) { return 7, nil }, loop)
	err3 := Do(ctx, func(context.Context) error { return nil }, loop)
	if v != 7 || err != nil || !errors.Is(err2, context.Canceled) || !errors.Is(err3, context.Canceled) {
		t.Errorf("DoValue = %v, %v; cancelled: %v, %v", v, err, err2, err3)
	}
	if want := "done 1 ok\ndone 0 context canceled\ndone 0 context canceled"; strings.Join(r.events, "\n") != want {
		t.Errorf("hooks saw %q, want %q", r.events, want)
	}
}

func TestLoopAllocations(t *testing.T) {
	ctx := context.Background()
	ok := func(context.Context) error { return nil }
	b := Must2(NewBudget(BudgetConfig{}))
	for _, loop := range []*Loop{
		{Policy: expPolicy(3)},
		{Policy: expPolicy(3), Budget: b},
		{Policy: expPolicy(3), Budget: b, OnDone: func(context.Context, int, error) {}},
	} {
		if n := testing.AllocsPerRun(100, func() { _ = Do(ctx, ok, loop) }); n != 0 {
			t.Errorf("Do with %+v succeeding at once allocates %v times, want 0", loop, n)
		}
	}
	zero := &Loop{Policy: PolicyFunc(func(int, error) (time.Duration, error) { return 0, nil }), Budget: b}
	f := &flaky{n: 2, err: errTransient}
	if a := testing.AllocsPerRun(100, func() { f.calls = 0; _ = Do(ctx, f.call, zero) }); a != 0 {
		t.Errorf("Do with a budget and two zero-delay retries allocates %v times, want 0", a)
	}
}
