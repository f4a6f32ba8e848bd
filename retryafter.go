package backoff

import (
	"errors"
	"time"

	"github.com/backoffgo/backoff/internal/errchain"
	"github.com/backoffgo/backoff/internal/nilness"
)

// hint is implemented by errors that carry a server's own estimate of when
// to retry (see RetryAfter).
type hint interface {
	error
	RetryAfter() time.Duration
}

// WithRetryAfter returns err annotated with the hint d, for [RetryAfter]: an
// error that reads as err followed by "(retry after d)" and unwraps to err.
// It returns nil if err is nil.
func WithRetryAfter(err error, d time.Duration) error {
	if err == nil {
		return nil
	}
	return &retryAfterError{err: err, delay: d}
}

// retryAfterError is the error of WithRetryAfter.
type retryAfterError struct {
	err   error
	delay time.Duration
}

func (e *retryAfterError) Error() string {
	return e.err.Error() + " (retry after " + e.delay.String() + ")"
}

func (e *retryAfterError) Unwrap() error { return e.err }

func (e *retryAfterError) RetryAfter() time.Duration { return e.delay }

// RetryAfterConfig holds the parameters of a [RetryAfter] policy.
type RetryAfterConfig struct {
	// MaxWait is the longest hint honoured. It must be positive: an
	// unbounded hint ("Retry-After: 3600", a date next year) would stall a
	// worker for as long as the server says.
	MaxWait time.Duration

	// GiveUp, when true, stops at a hint longer than MaxWait with a reason
	// that matches [ErrHintTooLong]; when false, such a hint waits MaxWait.
	GiveUp bool
}

// ErrHintTooLong is the reason a [RetryAfter] policy with GiveUp stops at a
// hint longer than its MaxWait. The reason itself also says the hint and the
// limit.
var ErrHintTooLong = errors.New("backoff: server's retry hint exceeds MaxWait")

// hintTooLongError is the reason a RetryAfter policy gives up at a hint
// longer than its MaxWait.
type hintTooLongError struct {
	hint, maxWait time.Duration
}

func (e *hintTooLongError) Error() string {
	return "backoff: server asked to wait " + e.hint.String() + ", over MaxWait " + e.maxWait.String()
}

// Is reports whether target is ErrHintTooLong.
func (e *hintTooLongError) Is(target error) bool { return target == ErrHintTooLong }

// RetryAfter honours a server's retry hint and otherwise defers to another
// policy, which keeps every decision to stop. The hint is that of the first
// error in the failure's chain (through Unwrap() error and Unwrap() []error,
// depth first, as errors.As finds it, inner loops' *[Error] included) with a
// method RetryAfter() time.Duration: an error of [WithRetryAfter], of
// backoffhttp, or of the caller's own. For each failure, in order:
//
//   - the wrapped policy is asked first, and its reason to stop (a
//     non-[Retryable] error, its MaxAttempts, its own) stops hinted retries
//     too; its delay is drawn, then discarded if a hint applies;
//   - a positive hint is the delay, exactly; one longer than MaxWait waits
//     MaxWait, or stops with [ErrHintTooLong] when GiveUp is set;
//   - otherwise, a hint of zero or less included, the wrapped policy's
//     delay is used, so a server answering "0" cannot drive a hot loop.
//
// A RetryAfter is immutable and safe for concurrent use when the wrapped
// policy is; over a [Sequencer], each sequence wraps a fresh sequence of it.
type RetryAfter struct {
	next Policy
	cfg  RetryAfterConfig
}

// NewRetryAfter returns a RetryAfter policy wrapping next, or a
// *[ParamError] when next is nil or cfg is invalid.
func NewRetryAfter(next Policy, cfg RetryAfterConfig) (*RetryAfter, error) {
	if nilness.IsNil(next) {
		return nil, &ParamError{Param: "next", Value: nil, Reason: "must not be nil"}
	}
	if cfg.MaxWait <= 0 {
		return nil, &ParamError{Param: "MaxWait", Value: cfg.MaxWait, Reason: "must be positive"}
	}
	return &RetryAfter{next: next, cfg: cfg}, nil
}

// NextDelay applies the rules in the type's documentation.
func (p *RetryAfter) NextDelay(attempt int, err error) (time.Duration, error) {
	d, reason := p.next.NextDelay(attempt, err)
	if reason != nil {
		return 0, reason
	}
	hint, hinted := hintOf(err)
	if !hinted || hint <= 0 {
		return d, nil
	}
	if hint > p.cfg.MaxWait {
		if p.cfg.GiveUp {
			return 0, &hintTooLongError{hint: hint, maxWait: p.cfg.MaxWait}
		}
		hint = p.cfg.MaxWait
	}
	return hint, nil
}

// NewSequence returns p itself when the wrapped policy keeps no per-sequence
// memory, and otherwise a RetryAfter over a fresh sequence of it.
func (p *RetryAfter) NewSequence() Policy {
	s, ok := p.next.(Sequencer)
	if !ok {
		return p
	}
	return &RetryAfter{next: s.NewSequence(), cfg: p.cfg}
}

// hintOf returns the first hint in err's chain, as errors.As finds it.
func hintOf(err error) (d time.Duration, found bool) {
	found = errchain.Walk(err, func(err error) errchain.Step {
		h, ok := err.(hint)
		if !ok {
			return errchain.Continue
		}
		d = h.RetryAfter()
		return errchain.Stop
	})
	return d, found
}
