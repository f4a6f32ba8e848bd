package backoff

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// netTimeout is an error with a Timeout method, as net.Error has.
type netTimeout struct{ timeout bool }

func (e netTimeout) Error() string   { return "i/o" }
func (e netTimeout) Timeout() bool   { return e.timeout }
func (e netTimeout) Temporary() bool { return false }

// TestErrorTimeout: *Error reports a timeout when its reason is one, or
// when its last error is one and the context was not cancelled, so that
// url.Error.Timeout and os.IsTimeout, which ask the error they wrap, see
// a timed-out attempt.
func TestErrorTimeout(t *testing.T) {
	fail := errors.New("fail")
	timedOut := netTimeout{true}
	tests := []struct {
		name string
		err  *Error
		want bool
	}{
		{"nil", nil, false},
		{"exhausted, plain last error", &Error{Reason: ErrExhausted, Err: fail}, false},
		{"exhausted, last error a timeout", &Error{Reason: ErrExhausted, Err: timedOut}, true},
		{"exhausted, last error not a timeout by its method", &Error{Reason: ErrExhausted, Err: netTimeout{false}}, false},
		{"exhausted, last error wraps context.DeadlineExceeded", &Error{Reason: ErrExhausted, Err: WithRetryAfter(context.DeadlineExceeded, time.Second)}, true},
		{"exhausted, last error a nested timeout", &Error{Reason: ErrExhausted, Err: &Error{Reason: ErrPermanent, Err: timedOut}}, true},
		{"the context's deadline", &Error{Reason: context.DeadlineExceeded, Err: fail}, true},
		{"ErrDeadline", &Error{Reason: ErrDeadline, Err: fail}, true},
		{"a reason with a Timeout method", &Error{Reason: timedOut}, true},
		{"cancelled, last error a timeout", &Error{Reason: context.Canceled, Err: timedOut}, false},
		{"cancelled", &Error{Reason: context.Canceled}, false},
		{"no reason, no error", &Error{}, false},
	}
	for _, tt := range tests {
		if got := tt.err.Timeout(); got != tt.want {
			t.Errorf("%s: Timeout() = %v; want %v", tt.name, got, tt.want)
		}
	}
	// Through Do: an attempt that timed out, then exhausted.
	err := Do(context.Background(), func(context.Context) error { return timedOut },
		PolicyFunc(func(int, error) (time.Duration, error) { return 0, ErrExhausted }))
	var e interface{ Timeout() bool }
	if !errors.As(err, &e) || !e.Timeout() {
		t.Errorf("Do = %v; want an error whose Timeout is true", err)
	}
}

// unwrapsNil is a wrapper whose Unwrap returns nil.
type unwrapsNil struct{}

func (unwrapsNil) Error() string { return "wraps nothing" }
func (unwrapsNil) Unwrap() error { return nil }

// TestErrorUnwrapViews: a last error whose chain holds no *Error is
// unwrapped as it is; one that holds an inner loop's is seen through a view
// that reads as it does; a nil Permanent mark is no inner loop.
func TestErrorUnwrapViews(t *testing.T) {
	if (*Error)(nil).Unwrap() != nil {
		t.Error("Unwrap of a nil *Error must be nil")
	}
	for _, err := range []error{errors.Join(errTransient, unwrapsNil{}), unwrapsNil{}, retryableErr(true)} {
		if got := (&Error{Reason: ErrExhausted, Err: err, Attempts: 2}).Unwrap(); len(got) != 2 || got[1] != err {
			t.Errorf("Unwrap of an *Error whose last error is %v = %v; want the reason and the last error itself", err, got)
		}
	}
	inner := &Error{Reason: ErrExhausted, Err: errTransient, Attempts: 3}
	wrapped := fmt.Errorf("q: %w", inner)
	if got := (&Error{Reason: ErrRetriedBelow, Err: wrapped, Attempts: 1}).Unwrap(); len(got) != 2 || got[1] == wrapped || got[1].Error() != wrapped.Error() {
		t.Errorf("Unwrap over an inner *Error = %v; want a view of the last error that reads as it", got)
	}
	e := &Error{Reason: ErrPermanent, Err: (*permanentError)(nil), Attempts: 1}
	if want := "backoff: stopped after 1 attempt (error is not retryable): backoff: permanent error"; e.Error() != want {
		t.Errorf("Error = %q, want %q", e.Error(), want)
	}
}
