package backoff

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"testing"
	"time"
)

// nestedCalls runs one top-level call through depth nested Do calls, each
// with its own policy of attempts attempts and zero delays, over a
// dependency that always fails, and returns how many times the dependency
// was called and the top-level error.
func nestedCalls(depth, attempts int, r func(Policy) *Retrier) (int, error) {
	zero := zeroDelays(attempts)
	calls := 0
	var layer func(ctx context.Context, d int) error
	layer = func(ctx context.Context, d int) error {
		if d == depth {
			calls++
			return errTransient
		}
		return r(zero).Do(ctx, func(ctx context.Context) error { return layer(ctx, d+1) })
	}
	err := layer(context.Background(), 0)
	return calls, err
}

// TestNestedDoRetriesAtOneLayer: five nested Do calls of three attempts
// each over a dependency that always fails call it 3 times per top-level
// call, not 3⁵ = 243: the innermost loop retries, the outer ones stand back.
func TestNestedDoRetriesAtOneLayer(t *testing.T) {
	calls, err := nestedCalls(5, 3, func(p Policy) *Retrier { return &Retrier{Policy: p} })
	if calls != 3 {
		t.Errorf("five nested Do calls of 3 attempts made %d calls to the dependency, want 3", calls)
	}
	var e *Error
	if !errors.As(err, &e) || e.Reason != ErrRetriedBelow || e.Attempts != 1 {
		t.Fatalf("top-level Do = %v; want ErrRetriedBelow after 1 attempt", err)
	}
	if errors.Is(err, ErrExhausted) || !errors.Is(err, errTransient) {
		t.Errorf("top-level Do = %v; the innermost last error must match, the innermost reason not", err)
	}
	if want := "backoff: stopped after 1 attempt: an inner loop stopped after 3 attempts (attempts exhausted): transient"; err.Error() != want {
		t.Errorf("top-level Do reads\n%v\nwant\n%v", err, want)
	}
}

// TestNestedDoStopReasons: which outer loops stand back, and the escape.
func TestNestedDoStopReasons(t *testing.T) {
	exhausted := &Error{Reason: ErrExhausted, Err: errTransient, Attempts: 3}
	b := Must(NewBudget(BudgetConfig{Burst: 1}))
	drain(b)
	refused := &Error{Reason: b.Withdraw(), Err: errTransient, Attempts: 1}
	once := &Error{Reason: ErrExhausted, Err: errTransient, Attempts: 1}
	for _, tt := range []struct {
		name       string
		err        error // what fn returns every time
		retryInner bool
		wantCalls  int
		wantReason error
	}{
		{"an inner loop that retried", exhausted, false, 1, ErrRetriedBelow},
		{"wrapped by fmt", fmt.Errorf("lookup: %w", exhausted), false, 1, ErrRetriedBelow},
		{"joined", errors.Join(errTransient, exhausted), false, 1, ErrRetriedBelow},
		{"an inner loop that stood back", &Error{Reason: ErrRetriedBelow, Err: exhausted, Attempts: 1}, false, 1, ErrRetriedBelow},
		{"an inner budget refusal", refused, false, 1, ErrRetriedBelow},
		{"the sentinel from a server", fmt.Errorf("503: %w", ErrRetriedBelow), false, 1, ErrRetriedBelow},
		{"the bare sentinel", ErrRetriedBelow, false, 1, ErrRetriedBelow},
		{"an inner loop that made one attempt", once, false, 3, ErrExhausted},
		{"a one-attempt loop around one that retried", &Error{Reason: ErrExhausted, Err: exhausted, Attempts: 1}, false, 1, ErrRetriedBelow},
		{"a one-attempt loop around a wrapped one that retried", &Error{Reason: ErrExhausted, Err: fmt.Errorf("q: %w", exhausted), Attempts: 1}, false, 1, ErrRetriedBelow},
		{"Permanent around a give-up", Permanent(exhausted), false, 1, ErrPermanent},
		{"a one-attempt loop around Permanent around a give-up", &Error{Reason: ErrPermanent, Err: Permanent(exhausted), Attempts: 1}, false, 1, ErrRetriedBelow},
		{"a one-attempt loop around one that made one attempt", &Error{Reason: ErrExhausted, Err: once, Attempts: 1}, false, 3, ErrExhausted},
		{"an inner Permanent mark is the inner loop's", &Error{Reason: ErrPermanent, Err: Permanent(errors.New("no")), Attempts: 3}, false, 1, ErrRetriedBelow},
		{"RetryInner retries anyway", exhausted, true, 3, ErrExhausted},
		{"a typed nil *Error", (*Error)(nil), false, 3, ErrExhausted},
		{"an error type of its own", retryableErr(true), false, 3, ErrExhausted},
		{"a wrapper of nothing", unwrapsNil{}, false, 3, ErrExhausted},
		{"a join without an inner loop", errors.Join(errTransient, retryableErr(true)), false, 3, ErrExhausted},
	} {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			err := (&Retrier{Policy: zeroDelays(3), RetryInner: tt.retryInner}).Do(context.Background(), func(context.Context) error {
				calls++
				return tt.err
			})
			var e *Error
			if !errors.As(err, &e) || calls != tt.wantCalls || e.Reason != tt.wantReason {
				t.Errorf("Do = %v after %d calls; want reason %v after %d", err, calls, tt.wantReason, tt.wantCalls)
			}
		})
	}
}

// zeroDelays retries at once, up to attempts calls in all.
func zeroDelays(attempts int) Policy {
	return PolicyFunc(func(attempt int, _ error) (time.Duration, error) {
		return 0, stopAt(attempt, attempts)
	})
}

// dependency counts the calls on a dependency that always fails.
type dependency struct{ calls int }

func (d *dependency) call(context.Context) error { d.calls++; return errTransient }

// TestNestedPermanentAroundGiveUp: a middle loop whose fn marks an inner
// give-up Permanent stops at once, and the loop around it stands back: the
// dependency sees the inner loop's 3 calls, not 9 (the middle error used
// to be read by its own attempt count only).
func TestNestedPermanentAroundGiveUp(t *testing.T) {
	var dep dependency
	ctx := context.Background()
	err := Do(ctx, func(ctx context.Context) error {
		return Do(ctx, func(ctx context.Context) error {
			return Permanent(Do(ctx, dep.call, zeroDelays(3)))
		}, zeroDelays(3))
	}, zeroDelays(3))
	var e *Error
	if dep.calls != 3 || !errors.As(err, &e) || e.Reason != ErrRetriedBelow || e.Attempts != 1 {
		t.Errorf("%d calls on the dependency, Do = %v; want 3 and ErrRetriedBelow after 1 attempt", dep.calls, err)
	}
	want := "backoff: stopped after 1 attempt: an inner loop stopped after 1 attempt (error is not retryable): an inner loop stopped after 3 attempts (attempts exhausted): transient"
	if err.Error() != want {
		t.Errorf("Do reads\n%v\nwant\n%v", err, want)
	}
}

// TestNestedRetryInnerOneAttempt: a middle loop with RetryInner and one
// attempt around an inner loop that retried does not hide it from the
// outer loop: 3 calls on the dependency, not 9.
func TestNestedRetryInnerOneAttempt(t *testing.T) {
	var dep dependency
	ctx := context.Background()
	middle := &Retrier{Policy: zeroDelays(1), RetryInner: true}
	err := Do(ctx, func(ctx context.Context) error {
		return middle.Do(ctx, func(ctx context.Context) error { return Do(ctx, dep.call, zeroDelays(3)) })
	}, zeroDelays(3))
	if !errors.Is(err, ErrRetriedBelow) || dep.calls != 3 {
		t.Errorf("%d calls on the dependency, Do = %v; want 3 and ErrRetriedBelow", dep.calls, err)
	}
}

// TestNestedPerCallTimeout: an outer fn that gives each call 100 ms, over
// an inner loop of 3 attempts on a 60 ms dependency: the inner loop makes 2
// calls and the deadline ends it; the outer loop stands back. Passive
// middle loops between them change nothing (they made it 6 calls).
func TestNestedPerCallTimeout(t *testing.T) {
	for middles := range 4 {
		inBubble(t, fmt.Sprint(middles, " middle loops"), func(t *testing.T) {
			calls := 0
			slow := func(ctx context.Context) error {
				calls++
				select {
				case <-time.After(60 * time.Millisecond):
					return errTransient
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			var layer func(ctx context.Context, d int) error
			layer = func(ctx context.Context, d int) error {
				if d == middles {
					return Do(ctx, slow, zeroDelays(3))
				}
				return Do(ctx, func(ctx context.Context) error { return layer(ctx, d+1) }, zeroDelays(3))
			}
			err := Do(context.Background(), func(ctx context.Context) error {
				ctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
				defer cancel()
				return layer(ctx, 0)
			}, zeroDelays(3))
			if calls != 2 || !errors.Is(err, ErrRetriedBelow) {
				t.Errorf("%d middle loops: %d calls on the dependency, Do = %v; want 2 and ErrRetriedBelow", middles, calls, err)
			}
		})
	}
}

// TestNestedErrorMatchesItsOwnReason: after standing back, the outer error
// reads the inner failure once, matches ErrRetriedBelow and the innermost
// last error, and not the inner loops' reasons, wrapped or not; errors.As
// still finds what fn's errors hold. A loop that exhausted its own policy
// matches ErrExhausted.
func TestNestedErrorMatchesItsOwnReason(t *testing.T) {
	ctx := context.Background()
	path := &fs.PathError{Op: "open", Path: "x", Err: errTransient}
	inner := func(ctx context.Context) error {
		return Do(ctx, func(context.Context) error { return path }, zeroDelays(3))
	}
	for _, tt := range []struct {
		name string
		fn   func(context.Context) error
		want string
	}{
		{"direct", inner, "backoff: stopped after 1 attempt: an inner loop stopped after 3 attempts (attempts exhausted): open x: transient"},
		{"wrapped", func(ctx context.Context) error { return fmt.Errorf("lookup: %w", inner(ctx)) },
			"backoff: stopped after 1 attempt (retried below, or told not to retry): lookup: backoff: stopped after 3 attempts (attempts exhausted): open x: transient"},
		{"joined", func(ctx context.Context) error { return errors.Join(inner(ctx), errors.New("other")) },
			"backoff: stopped after 1 attempt (retried below, or told not to retry): backoff: stopped after 3 attempts (attempts exhausted): open x: transient\nother"},
		{"five layers", func(ctx context.Context) error {
			return Do(ctx, func(ctx context.Context) error {
				return Do(ctx, func(ctx context.Context) error {
					return Do(ctx, inner, zeroDelays(3))
				}, zeroDelays(3))
			}, zeroDelays(3))
		}, "backoff: stopped after 1 attempt: an inner loop stopped after 3 attempts (attempts exhausted): open x: transient"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := Do(ctx, tt.fn, zeroDelays(3))
			var pe *fs.PathError
			if errors.Is(err, ErrExhausted) || !errors.Is(err, ErrRetriedBelow) || !errors.Is(err, errTransient) || !errors.As(err, &pe) || pe != path {
				t.Errorf("Do = %v: Is ErrExhausted %v (want false), ErrRetriedBelow %v, errTransient %v, As *fs.PathError %v",
					err, errors.Is(err, ErrExhausted), errors.Is(err, ErrRetriedBelow), errors.Is(err, errTransient), pe == path)
			}
			if err.Error() != tt.want {
				t.Errorf("Do reads\n%v\nwant\n%v", err, tt.want)
			}
		})
	}
	err := (&Retrier{Policy: zeroDelays(2), RetryInner: true}).Do(ctx, inner)
	if !errors.Is(err, ErrExhausted) || errors.Is(err, ErrRetriedBelow) {
		t.Errorf("RetryInner: Do = %v; want ErrExhausted, its own, and not ErrRetriedBelow", err)
	}
}

// policyReason is a reason of a policy of the user's own.
type policyReason struct{}

func (policyReason) Error() string { return "quota of the day spent" }

// asTimeout says, by an As method, that it is a *timeoutErr.
type asTimeout struct{}

func (asTimeout) Error() string { return "as timeout" }
func (asTimeout) As(target any) bool {
	t, ok := target.(**timeoutErr)
	if ok {
		*t = &timeoutErr{}
	}
	return ok
}

// timeoutErr has a Timeout method.
type timeoutErr struct{}

func (*timeoutErr) Error() string   { return "timeout" }
func (*timeoutErr) Timeout() bool   { return true }
func (*timeoutErr) Temporary() bool { return true }

// TestNestedErrorAs: through an outer loop's error, errors.As finds what
// the last errors hold, by type, by interface or by their own As method, and
// not an inner loop's reason of the user's own type.
func TestNestedErrorAs(t *testing.T) {
	ctx := context.Background()
	own := PolicyFunc(func(attempt int, _ error) (time.Duration, error) {
		if attempt >= 2 {
			return 0, policyReason{}
		}
		return 0, nil
	})
	for _, last := range []error{asTimeout{}, &timeoutErr{}} {
		err := Do(ctx, func(ctx context.Context) error {
			return fmt.Errorf("q: %w", Do(ctx, func(context.Context) error { return last }, own))
		}, zeroDelays(3))
		var reason policyReason
		var te *timeoutErr
		var timeout interface{ Timeout() bool }
		if errors.As(err, &reason) || !errors.As(err, &te) || !errors.As(err, &timeout) || !errors.Is(err, ErrRetriedBelow) {
			t.Errorf("%T: Do = %v: As policyReason %v (want false), *timeoutErr %v, interface %v", last, err, errors.As(err, &reason), errors.As(err, &te), errors.As(err, &timeout))
		}
	}
}
