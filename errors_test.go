package backoff

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// declaredWrapper declares itself retryable and wraps another error.
type declaredWrapper struct{ err error }

func (d declaredWrapper) Error() string   { return "declared: " + d.err.Error() }
func (d declaredWrapper) Unwrap() error   { return d.err }
func (d declaredWrapper) Retryable() bool { return true }

func TestRetryable(t *testing.T) {
	nested := &Error{Reason: ErrPermanent, Err: Permanent(errTransient), Attempts: 1}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, true},
		{"plain", errTransient, true},
		{"permanent", Permanent(errTransient), false},
		{"wrapped permanent", fmt.Errorf("op: %w", Permanent(errTransient)), false},
		{"fmt.Errorf without %w", fmt.Errorf("op %d failed", 3), true},
		// A context error from fn is an inner context's (Do checks its own
		// first): a per-attempt timeout, retried.
		{"canceled", context.Canceled, true},
		{"deadline", context.DeadlineExceeded, true},
		{"wrapped deadline", fmt.Errorf("op: %w", context.DeadlineExceeded), true},
		{"ErrDeadline", ErrDeadline, true},
		{"typed nil PermanentError", (*permanentError)(nil), false},
		{"typed nil Error", (*Error)(nil), true},
		{"permanent wrapping a typed nil", Permanent((*Error)(nil)), false},
		{"declares false", retryableErr(false), false},
		{"declares true", retryableErr(true), true},
		{"outer declaration wins over a mark", declaredWrapper{Permanent(errTransient)}, true},
		{"mark outside a declaration wins", Permanent(declaredWrapper{errTransient}), false},
		{"joined, permanent second", errors.Join(errTransient, Permanent(errTransient)), false},
		{"joined, plain", errors.Join(errTransient, errors.New("x")), true},
		{"nested Do gave up on a marked error", nested, true},
		{"wrapped nested Do", fmt.Errorf("outer: %w", nested), true},
		{"nested Do, error itself permanent", &Error{Reason: ErrPermanent, Err: retryableErr(false)}, false},
		{"nested Do, context ended", &Error{Reason: context.Canceled, Err: context.Canceled}, true},
		{"nested Do that never called", &Error{Reason: context.Canceled}, true},
	}
	for _, tt := range tests {
		if got := Retryable(tt.err); got != tt.want {
			t.Errorf("%s: Retryable(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
	if Permanent(nil) != nil {
		t.Error("Permanent(nil) != nil")
	}
	if got := Permanent(errTransient); !errors.Is(got, errTransient) || got.Error() != errTransient.Error() {
		t.Errorf("Permanent hides its error: %v", got)
	}
}

func TestParamErrorMessages(t *testing.T) {
	type opaque struct{ n int }
	for _, tt := range []struct {
		err  *ParamError
		want string
	}{
		{&ParamError{Param: "Base", Value: -time.Second, Reason: "must be positive"}, "backoff: invalid Base -1s: must be positive"},
		{&ParamError{Param: "MaxAttempts", Value: 0, Reason: "r"}, "backoff: invalid MaxAttempts 0: r"},
		{&ParamError{Param: "Ratio", Value: 1.5, Reason: "r"}, "backoff: invalid Ratio 1.5: r"},
		{&ParamError{Param: "Rng", Value: "PCG{}", Reason: "r"}, "backoff: invalid Rng PCG{}: r"},
		{&ParamError{Param: "p", Value: nil, Reason: "r"}, "backoff: invalid p nil: r"},
		{&ParamError{Param: "x", Value: opaque{1}, Reason: "r"}, "backoff: invalid x (backoff.opaque): r"},
		{&ParamError{Param: "x", Value: time.UTC, Reason: "r"}, "backoff: invalid x UTC: r"},
	} {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
	if got := (*ParamError)(nil).Error(); got != "backoff: invalid parameter" {
		t.Errorf("nil ParamError: %q", got)
	}
	if (*permanentError)(nil).Unwrap() != nil || (*Error)(nil).Unwrap() != nil {
		t.Error("Unwrap of a nil error must be nil")
	}
	if got := (&permanentError{}).Error(); got != "backoff: permanent error" {
		t.Errorf("empty PermanentError: %q", got)
	}
}
