package backoff

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// recorder is a Retrier's hooks writing what they see, in order.
type recorder struct {
	events []string
}

func (r *recorder) retrier(p Policy, b *Budget) *Retrier {
	return &Retrier{
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

// TestRetrierHooks pins the order and count of the hooks for success and for
// every stop reason: OnRetry exactly for the retries made, OnDone once.
func TestRetrierHooks(t *testing.T) {
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
			[]string{"retry 1 transient 1s", "retry 2 transient 2s", "done 3 the next retry would start past the deadline"}},
		{"cancelled while waiting", 100, errTransient, expPolicy(10), 0, 1500 * time.Millisecond, false,
			[]string{"retry 1 transient 1s", "retry 2 transient 2s", "done 2 context canceled"}},
		// A drained budget: the call's deposit (0.1) is not a retry, so
		// the first retry is refused and never announced.
		{"budget refuses", 100, errTransient, expPolicy(10), 0, 0, true,
			[]string{"done 1 retry budget exhausted: 0.1 of the 1 retry needed in store"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := withDeadline(t, tt.deadline)
				if tt.cancelAt > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithCancel(ctx)
					time.AfterFunc(tt.cancelAt, cancel)
				}
				var b *Budget
				if tt.budget {
					b = Must(NewBudget(BudgetConfig{Burst: 1}))
					drain(b)
				}
				var r recorder
				fn, _ := failing(tt.fails, tt.err)
				err := r.retrier(tt.policy, b).Do(ctx, fn)
				if got := strings.Join(r.events, "\n"); got != strings.Join(tt.want, "\n") {
					t.Errorf("hooks saw\n%s\nwant\n%s\n(Do = %v)", got, strings.Join(tt.want, "\n"), err)
				}
			})
		})
	}
}

func TestRetrierBudgetStopsDo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A full store of 2 (the call's 0.1 finds it full and is lost);
		// the waits of 1s and 2s add only 0.003 at a reserve of 0.001/s,
		// so the third retry is refused.
		b := Must(NewBudget(BudgetConfig{Reserve: 0.001, Burst: 2}))
		r := &Retrier{Policy: expPolicy(10), Budget: b}
		fn, calls := failing(100, errTransient)
		err := r.Do(t.Context(), fn)
		var e *Error
		var be *budgetError
		if !errors.As(err, &e) || !errors.Is(err, ErrBudget) || !errors.As(err, &be) || e.Err != errTransient {
			t.Fatalf("Do = %v, want an *Error with the budget's refusal as reason and the last error", err)
		}
		if e.Attempts != 3 || len(*calls) != 3 || be.Available != 0.003 {
			t.Errorf("Attempts %d, calls %d, available %v; want 3, 3 and 0.003", e.Attempts, len(*calls), be.Available)
		}
	})
}

// TestRetrierBudgetSharedByConcurrentDo: 64 goroutines share one Retrier; the
// retries made never exceed what the budget's bound allows.
func TestRetrierBudgetSharedByConcurrentDo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := Must(NewBudget(BudgetConfig{Ratio: 0.1, Burst: 1000}))
		drain(b) // empty, and far from full: no deposit is lost
		var retries atomic.Int64
		r := &Retrier{
			Policy:  PolicyFunc(func(attempt int, _ error) (time.Duration, error) { return 0, stopAt(attempt, 4) }),
			Budget:  b,
			OnRetry: func(context.Context, int, error, time.Duration) { retries.Add(1) },
		}
		var wg sync.WaitGroup
		for range 64 {
			wg.Go(func() {
				for range 100 {
					r.Do(t.Context(), func(context.Context) error { return errTransient })
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

// TestRetrierKeepsSequences: a Retrier over a Decorrelated policy gives each
// Do call its own sequence, as the bare policy would.
func TestRetrierKeepsSequences(t *testing.T) {
	cfg := Config{Base: time.Millisecond, Cap: time.Hour, MaxAttempts: 8}
	delays := func(p Policy) []time.Duration {
		var ds []time.Duration
		r := &Retrier{Policy: p, OnRetry: func(_ context.Context, _ int, _ error, d time.Duration) { ds = append(ds, d) }}
		synctest.Test(t, func(t *testing.T) {
			fn, _ := failing(100, errTransient)
			r.Do(t.Context(), fn)
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
	if !slices.Equal(got, want) {
		t.Errorf("Retrier over Decorrelated waited %v, a sequence gives %v", got, want)
	}
}

func TestRetrierDoValueAndCancelledContext(t *testing.T) {
	var r recorder
	rt := r.retrier(expPolicy(3), nil)
	v, err := doValue(context.Background(), func(context.Context) (int, error) { return 7, nil }, rt)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err2 := doValue(ctx, func(context.Context) (int, error) { return 7, nil }, rt)
	err3 := rt.Do(ctx, func(context.Context) error { return nil })
	if v != 7 || err != nil || !errors.Is(err2, context.Canceled) || !errors.Is(err3, context.Canceled) {
		t.Errorf("DoValue = %v, %v; cancelled: %v, %v", v, err, err2, err3)
	}
	if want := "done 1 ok\ndone 0 context canceled\ndone 0 context canceled"; strings.Join(r.events, "\n") != want {
		t.Errorf("hooks saw %q, want %q", r.events, want)
	}
}

func TestRetrierAllocations(t *testing.T) {
	ctx := context.Background()
	ok := func(context.Context) error { return nil }
	b := Must(NewBudget(BudgetConfig{}))
	for _, r := range []*Retrier{
		{Policy: expPolicy(3)},
		{Policy: expPolicy(3), Budget: b},
		{Policy: expPolicy(3), Budget: b, OnDone: func(context.Context, int, error) {}},
	} {
		if n := testing.AllocsPerRun(100, func() { _ = r.Do(ctx, ok) }); n != 0 {
			t.Errorf("Do with %+v succeeding at once allocates %v times, want 0", r, n)
		}
	}
	zero := &Retrier{Policy: PolicyFunc(func(int, error) (time.Duration, error) { return 0, nil }), Budget: b}
	f := &flaky{n: 2, err: errTransient}
	if a := testing.AllocsPerRun(100, func() { f.calls = 0; _ = zero.Do(ctx, f.call) }); a != 0 {
		t.Errorf("Do with a budget and two zero-delay retries allocates %v times, want 0", a)
	}
}

// TestRetrierIsNotAPolicy: nothing that takes a Policy can accept a
// Retrier and silently drop its budget and hooks (backoffhttp's Transport,
// NewRetryAfter, Do): the compiler refuses it.
func TestRetrierIsNotAPolicy(t *testing.T) {
	if reflect.TypeFor[*Retrier]().Implements(reflect.TypeFor[Policy]()) ||
		reflect.TypeFor[Retrier]().Implements(reflect.TypeFor[Policy]()) {
		t.Fatal("Retrier implements Policy: it could be passed where its budget and hooks are ignored")
	}
}

// TestRetrierMaxElapsed: the limit counts from the start of the first call,
// its duration included, stops with ErrDeadline before a retry that would
// begin at or after it, and never cuts a call short.
func TestRetrierMaxElapsed(t *testing.T) {
	tests := []struct {
		name       string
		callTime   time.Duration // each call takes this long
		maxElapsed time.Duration
		wantCalls  int
		wantReason error
		wantTime   time.Duration
	}{
		// Calls start at 0, 1s+0, 3s: the next would start at 7s >= 5s.
		{"instant calls", 0, 5 * time.Second, 3, ErrDeadline, 3 * time.Second},
		// 1s calls: they start at 0 and 2s; after the second (3s) the next
		// would start at 5s.
		{"the first call counts", time.Second, 5 * time.Second, 2, ErrDeadline, time.Second},
		// A retry that would begin exactly at the limit is not made.
		{"exactly at the limit", 0, 3 * time.Second, 2, ErrDeadline, time.Second},
		{"no limit", 0, 0, 5, ErrExhausted, 15 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				calls := 0
				r := &Retrier{Policy: expPolicy(5), MaxElapsed: tt.maxElapsed}
				err := r.Do(t.Context(), func(ctx context.Context) error {
					calls++
					select {
					case <-time.After(tt.callTime):
					case <-ctx.Done():
						t.Error("a call was cancelled")
					}
					return errTransient
				})
				var e *Error
				if !errors.As(err, &e) || e.Reason != tt.wantReason || e.Attempts != tt.wantCalls || calls != tt.wantCalls {
					t.Fatalf("Do = %v after %d calls; want reason %v after %d", err, calls, tt.wantReason, tt.wantCalls)
				}
				if got := time.Since(start) - time.Duration(calls)*tt.callTime; got != tt.wantTime {
					t.Errorf("waited %v, want %v", got, tt.wantTime)
				}
			})
		})
	}
	// The earlier of the context's deadline and MaxElapsed applies.
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		fn, calls := failing(100, errTransient)
		err := (&Retrier{Policy: expPolicy(10), MaxElapsed: time.Hour}).Do(ctx, fn)
		if !errors.Is(err, ErrDeadline) || len(*calls) != 2 {
			t.Errorf("Do = %v after %d calls; want ErrDeadline after 2", err, len(*calls))
		}
	})
}

// TestRetrierMaxElapsedOneNanosecond: the smallest MaxElapsed is a limit like
// any other, not "none". In a bubble, where no time passes unless waited for,
// a retry after 1ns would begin exactly at the limit and is not made, while
// retries after no delay begin before it and are made until the policy stops.
func TestRetrierMaxElapsedOneNanosecond(t *testing.T) {
	for _, tt := range []struct {
		delay      time.Duration
		wantCalls  int
		wantReason error
	}{
		{time.Nanosecond, 1, ErrDeadline},
		{0, 3, ErrExhausted},
	} {
		inBubble(t, fmt.Sprintf("delay %v", tt.delay), func(t *testing.T) {
			p := PolicyFunc(func(attempt int, _ error) (time.Duration, error) { return tt.delay, stopAt(attempt, 3) })
			fn, calls := failing(100, errTransient)
			err := (&Retrier{Policy: p, MaxElapsed: time.Nanosecond}).Do(t.Context(), fn)
			var e *Error
			if !errors.As(err, &e) || e.Reason != tt.wantReason || len(*calls) != tt.wantCalls {
				t.Errorf("Do = %v after %d calls, want reason %v after %d", err, len(*calls), tt.wantReason, tt.wantCalls)
			}
		})
	}
}

// TestRetrierMaxElapsedCountsOnRetry: the time OnRetry takes counts
// against MaxElapsed and the context's deadline. With delays of 50ms, a
// limit of 100ms and an OnRetry that takes 80ms, the second call would begin
// at 130ms: Do stops with ErrDeadline when OnRetry returns and gives the
// withdrawn retry back to the budget.
func TestRetrierMaxElapsedCountsOnRetry(t *testing.T) {
	fifty := PolicyFunc(func(int, error) (time.Duration, error) { return 50 * time.Millisecond, nil })
	for _, deadline := range []bool{false, true} {
		inBubble(t, map[bool]string{false: "MaxElapsed", true: "deadline"}[deadline], func(t *testing.T) {
			b := Must(NewBudget(BudgetConfig{Burst: 1}))
			ctx := t.Context()
			r := &Retrier{Policy: fifty, Budget: b, OnRetry: func(context.Context, int, error, time.Duration) { time.Sleep(80 * time.Millisecond) }}
			if deadline {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, 100*time.Millisecond)
				defer cancel()
			} else {
				r.MaxElapsed = 100 * time.Millisecond
			}
			start := time.Now()
			var late []time.Duration
			err := r.Do(ctx, func(context.Context) error {
				if since := time.Since(start); since >= 100*time.Millisecond {
					late = append(late, since)
				}
				return errTransient
			})
			var e *Error
			if len(late) != 0 || !errors.As(err, &e) || e.Reason != ErrDeadline || e.Attempts != 1 || time.Since(start) != 80*time.Millisecond {
				t.Errorf("deadline %v: calls begun at %v, Do = %v at %v; want none at or after 100ms, ErrDeadline after 1 attempt at 80ms", deadline, late, err, time.Since(start))
			}
			if got := b.Available(); got != 1 {
				t.Errorf("deadline %v: %v retries in store after the retry not made, want 1", deadline, got)
			}
		})
	}
}

// TestRetrierCancelledContextDepositsNothing: a call that is never made earns
// the budget nothing, so requests arriving past their deadline cannot refill
// it for the live ones.
func TestRetrierCancelledContextDepositsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := Must(NewBudget(BudgetConfig{Burst: 100, Reserve: 0.001}))
		drain(b)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		r := &Retrier{Policy: expPolicy(3), Budget: b}
		for range 1000 {
			if err := r.Do(ctx, func(context.Context) error { t.Fatal("fn called"); return nil }); !errors.Is(err, context.Canceled) {
				t.Fatalf("Do = %v", err)
			}
		}
		if got := b.Available(); got >= 1 {
			t.Errorf("1000 calls never made left %v retries in store, want less than 1", got)
		}
	})
}

// TestRetrierRejectsBadFields: each programming error panics with a
// *ParamError that names it, before fn is called.
func TestRetrierRejectsBadFields(t *testing.T) {
	ok := func(context.Context) error { return nil }
	for _, tt := range []struct {
		name  string
		call  func()
		param string
	}{
		{"nil retrier", func() { (*Retrier)(nil).Do(context.Background(), ok) }, "r"},
		{"nil policy", func() { (&Retrier{}).Do(context.Background(), ok) }, "Policy"},
		{"nil fn", func() { (&Retrier{Policy: expPolicy(3)}).Do(context.Background(), nil) }, "fn"},
		{"nil value fn", func() { doValue[int](context.Background(), nil, &Retrier{Policy: expPolicy(3)}) }, "fn"},
		{"negative MaxElapsed", func() { (&Retrier{Policy: expPolicy(3), MaxElapsed: -1}).Do(context.Background(), ok) }, "MaxElapsed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				pe, isParam := recover().(*ParamError)
				if !isParam || pe.Param != tt.param {
					t.Errorf("panic %v, want a *ParamError for %s", pe, tt.param)
				}
			}()
			tt.call()
		})
	}
}

// TestRetrierReturnsUnusedRetries: a retry withdrawn but never made, because
// the context ended during its wait or OnRetry panicked, goes back to the
// budget.
func TestRetrierReturnsUnusedRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := Must(NewBudget(BudgetConfig{Ratio: 1, Reserve: 0.001, Burst: 10}))
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(500*time.Millisecond, cancel) // during the first wait (1s)
		r := &Retrier{Policy: expPolicy(5), Budget: b}
		fn, calls := failing(100, errTransient)
		if err := r.Do(ctx, fn); !errors.Is(err, context.Canceled) || len(*calls) != 1 {
			t.Fatalf("Do = %v after %d calls", err, len(*calls))
		}
		// Full (10) before; the call's deposit is lost to the cap; the
		// withdrawal for the cancelled wait came back.
		if got := b.Available(); got < 10 {
			t.Errorf("after a cancelled wait the budget holds %v, want 10", got)
		}
	})
	b := Must(NewBudget(BudgetConfig{Ratio: 1, Reserve: 0.001, Burst: 10}))
	r := &Retrier{Policy: zeroDelays(5), Budget: b, OnRetry: func(context.Context, int, error, time.Duration) { panic("hook") }}
	func() {
		defer func() {
			if recover() != "hook" {
				t.Error("the hook's panic did not propagate unchanged")
			}
		}()
		r.Do(context.Background(), func(context.Context) error { return errTransient })
	}()
	if got := b.Available(); got < 10 {
		t.Errorf("after a panicking OnRetry the budget holds %v, want 10", got)
	}
}

func TestDoAttemptCounterSaturates(t *testing.T) {
	if saturatingInc(math.MaxInt) != math.MaxInt || saturatingInc(1) != 2 {
		t.Error("saturatingInc wraps")
	}
}
