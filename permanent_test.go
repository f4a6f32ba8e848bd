package backoff

import (
	"context"
	"errors"
	"fmt"
	"testing"
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
	if (*permanentError)(nil).Unwrap() != nil {
		t.Error("Unwrap of a nil mark must be nil")
	}
	if got := (&permanentError{}).Error(); got != "backoff: permanent error" {
		t.Errorf("empty PermanentError: %q", got)
	}
}
