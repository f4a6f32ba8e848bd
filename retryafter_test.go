package backoff

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestRetryAfterPolicy(t *testing.T) {
	backoffPolicy := Must(NewExponential(Config{Base: time.Second, Cap: 8 * time.Second, MaxAttempts: 5}))
	clamp := Must(NewRetryAfter(backoffPolicy, RetryAfterConfig{MaxWait: time.Minute}))
	giveUp := Must(NewRetryAfter(backoffPolicy, RetryAfterConfig{MaxWait: time.Minute, GiveUp: true}))
	errMine := errors.New("mine")
	mine := Must(NewRetryAfter(PolicyFunc(func(int, error) (time.Duration, error) { return 0, errMine }), RetryAfterConfig{MaxWait: time.Minute}))
	tooLong := &hintTooLongError{hint: time.Hour, maxWait: time.Minute}
	tests := []struct {
		name    string
		p       *RetryAfter
		attempt int
		err     error
		want    time.Duration
		reason  error
	}{
		{"no hint defers", clamp, 3, errTransient, 4 * time.Second, nil},
		{"hint used", clamp, 3, WithRetryAfter(errTransient, 30*time.Second), 30 * time.Second, nil},
		{"hint under the wrapped delay used", clamp, 4, WithRetryAfter(errTransient, time.Millisecond), time.Millisecond, nil},
		{"over max clamps", clamp, 1, WithRetryAfter(errTransient, time.Hour), time.Minute, nil},
		{"over max gives up", giveUp, 1, WithRetryAfter(errTransient, time.Hour), 0, tooLong},
		{"exactly max", giveUp, 1, WithRetryAfter(errTransient, time.Minute), time.Minute, nil},
		{"zero hint defers", clamp, 2, WithRetryAfter(errTransient, 0), 2 * time.Second, nil},
		{"negative hint defers", clamp, 2, WithRetryAfter(errTransient, -time.Second), 2 * time.Second, nil},
		{"permanent refused", clamp, 1, Permanent(WithRetryAfter(errTransient, time.Second)), 0, ErrPermanent},
		{"declared non-retryable refused", clamp, 1, WithRetryAfter(retryableErr(false), time.Second), 0, ErrPermanent},
		{"attempts exhausted despite hint", clamp, 5, WithRetryAfter(errTransient, time.Second), 0, ErrExhausted},
		{"exhausted before over max", giveUp, 5, WithRetryAfter(errTransient, time.Hour), 0, ErrExhausted},
		{"wrapped policy's own reason", mine, 1, WithRetryAfter(errTransient, time.Second), 0, errMine},
		{"nil error defers", clamp, 1, nil, time.Second, nil},
		{"hint under fmt wrapping", clamp, 1, fmt.Errorf("get: %w", WithRetryAfter(errTransient, 3*time.Second)), 3 * time.Second, nil},
		{"hint in a joined error", clamp, 1, errors.Join(errTransient, WithRetryAfter(errTransient, 4*time.Second)), 4 * time.Second, nil},
		{"joined error without hint", clamp, 2, errors.Join(errTransient, errTransient), 2 * time.Second, nil},
	}
	for _, tt := range tests {
		d, reason := tt.p.NextDelay(tt.attempt, tt.err)
		var hte *hintTooLongError
		sameReason := reason == tt.reason ||
			(errors.As(reason, &hte) && *hte == *tooLong && tt.reason == error(tooLong) && errors.Is(reason, ErrHintTooLong))
		if d != tt.want || !sameReason {
			t.Errorf("%s: got (%v, %v), want (%v, %v)", tt.name, d, reason, tt.want, tt.reason)
		}
	}
	if WithRetryAfter(nil, time.Second) != nil {
		t.Error("WithRetryAfter(nil) != nil")
	}
	if e := WithRetryAfter(errTransient, time.Second); !errors.Is(e, errTransient) || e.Error() != "transient (retry after 1s)" {
		t.Errorf("WithRetryAfter: %v", e)
	}
	for _, e := range []error{(*permanentError)(nil), (*Error)(nil), (*ParamError)(nil), (*budgetError)(nil)} {
		if e.Error() == "" {
			t.Errorf("%T(nil).Error() is empty", e)
		}
	}
}

// TestRetryAfterDrawsAsTheWrappedPolicy: the wrapped policy is consulted
// for every failure (it holds the one attempt budget), so a hinted retry
// spends its draw; giving up, hinted or not, still draws nothing.
func TestRetryAfterDrawsAsTheWrappedPolicy(t *testing.T) {
	rng := newCountingRng(1)
	inner := Must(NewFullJitter(Config{Base: time.Second, Cap: time.Minute, MaxAttempts: 3}, rng))
	p := Must(NewRetryAfter(inner, RetryAfterConfig{MaxWait: time.Minute, GiveUp: true}))
	for _, step := range []struct {
		attempt int
		err     error
		draws   int
	}{
		{1, WithRetryAfter(errTransient, time.Second), 1},
		{1, WithRetryAfter(errTransient, time.Hour), 1},
		{1, errTransient, 1},
		{3, WithRetryAfter(errTransient, time.Second), 0},
		{1, Permanent(WithRetryAfter(errTransient, time.Second)), 0},
	} {
		before := rng.calls
		p.NextDelay(step.attempt, step.err)
		if got := rng.calls - before; got != step.draws {
			t.Errorf("NextDelay(%d, %v) drew %d values, want %d", step.attempt, step.err, got, step.draws)
		}
	}
}

func TestRetryAfterSequences(t *testing.T) {
	cfg := Config{Base: time.Second, Cap: time.Minute, MaxAttempts: 10}
	stateless := Must(NewRetryAfter(Must(NewFullJitter(cfg, RuntimeRng{})), RetryAfterConfig{MaxWait: time.Second}))
	if stateless.NewSequence() != Policy(stateless) {
		t.Error("RetryAfter over a stateless policy should be its own sequence")
	}
	stateful := Must(NewRetryAfter(Must(NewDecorrelated(cfg, RuntimeRng{})), RetryAfterConfig{MaxWait: time.Second}))
	seq := stateful.NewSequence()
	if seq == Policy(stateful) {
		t.Fatal("RetryAfter over a Sequencer must give a fresh sequence")
	}
	if _, ok := seq.(*RetryAfter).next.(*decorrelatedSequence); !ok {
		t.Errorf("sequence wraps %T, want a decorrelated sequence", seq.(*RetryAfter).next)
	}
}
