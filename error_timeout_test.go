package backoff

import (
	"context"
	"errors"
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
