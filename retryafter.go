package backoff

import (
	"math"
	"net/http"
	"time"
)

// Hint is implemented by errors that carry a server's own estimate of when
// to retry, such as an HTTP Retry-After header. [RetryAfter] finds the first
// one in an error's chain, following Unwrap() error and Unwrap() []error
// depth first as errors.As does (but not As methods), without allocating.
// *[RetryAfterError] and *[HTTPError] implement it; so can a user's own
// error types.
type Hint interface {
	error
	RetryAfter() time.Duration
}

// RetryAfterError attaches a server's retry hint to an error.
type RetryAfterError struct {
	Err   error         // the underlying failure
	Delay time.Duration // how long the server asked the client to wait
}

// WithRetryAfter returns err annotated with the hint d, or nil if err is nil.
func WithRetryAfter(err error, d time.Duration) error {
	if err == nil {
		return nil
	}
	return &RetryAfterError{Err: err, Delay: d}
}

func (e *RetryAfterError) Error() string {
	return e.Err.Error() + " (retry after " + e.Delay.String() + ")"
}

// Unwrap returns the underlying failure.
func (e *RetryAfterError) Unwrap() error { return e.Err }

// RetryAfter returns the hinted delay.
func (e *RetryAfterError) RetryAfter() time.Duration { return e.Delay }

// OverMaxAction says what [RetryAfter] does with a hint longer than its
// MaxWait.
type OverMaxAction int

const (
	// Clamp waits MaxWait instead of the longer hint.
	Clamp OverMaxAction = iota
	// GiveUp stops retrying: the server asked for more patience than the
	// caller has.
	GiveUp
)

// RetryAfterConfig holds the parameters of a [RetryAfter] policy.
type RetryAfterConfig struct {
	// MaxAttempts limits every retry, hinted or not, with the meaning it has
	// in [Config]: at least 1, or [Unlimited]. The wrapped policy's own limit
	// still applies to the retries it decides.
	MaxAttempts int

	// MaxWait is the longest hint honoured. It must be positive: an
	// unbounded hint ("Retry-After: 3600", a date next year) would stall a
	// worker for as long as the server says.
	MaxWait time.Duration

	// OverMax says what a hint longer than MaxWait does. The zero value is
	// Clamp.
	OverMax OverMaxAction
}

// RetryAfter honours a server's retry hint and otherwise defers to another
// policy. For each failure, in order:
//
//   - a non-[Retryable] error, or attempt >= MaxAttempts, gives up;
//   - an error carrying a positive [Hint] waits exactly the hint, without
//     consulting the wrapped policy and without randomness; a hint longer
//     than MaxWait is clamped to MaxWait or gives up, as OverMax says;
//   - otherwise, including a hint of zero or less (a "Retry-After: 0", a date
//     already past), the wrapped policy decides. Falling back rather than
//     retrying at once keeps a server that keeps answering "0" from driving
//     a hot loop.
//
// A RetryAfter is immutable and safe for concurrent use when the wrapped
// policy is. When the wrapped policy is a [Sequencer], so is RetryAfter, and
// each sequence wraps a fresh sequence of it; hinted retries leave that
// sequence's memory untouched.
type RetryAfter struct {
	next Policy
	cfg  RetryAfterConfig
}

// NewRetryAfter returns a RetryAfter policy wrapping next, or a
// *[ParamError] when next is nil or cfg is invalid.
func NewRetryAfter(next Policy, cfg RetryAfterConfig) (*RetryAfter, error) {
	if isNil(next) {
		return nil, &ParamError{Param: "next", Value: nil, Reason: "must not be nil"}
	}
	if err := validateMaxAttempts(cfg.MaxAttempts); err != nil {
		return nil, err
	}
	if cfg.MaxWait <= 0 {
		return nil, &ParamError{Param: "MaxWait", Value: cfg.MaxWait, Reason: "must be positive"}
	}
	if cfg.OverMax != Clamp && cfg.OverMax != GiveUp {
		return nil, &ParamError{Param: "OverMax", Value: cfg.OverMax, Reason: "must be Clamp or GiveUp"}
	}
	return &RetryAfter{next: next, cfg: cfg}, nil
}

// NextDelay applies the rules in the type's documentation.
func (p *RetryAfter) NextDelay(attempt int, err error) (time.Duration, bool) {
	if !Retryable(err) || exhausted(attempt, p.cfg.MaxAttempts) {
		return 0, false
	}
	d, hinted := hintOf(err)
	if !hinted || d <= 0 {
		return p.next.NextDelay(attempt, err)
	}
	if d > p.cfg.MaxWait {
		if p.cfg.OverMax == GiveUp {
			return 0, false
		}
		d = p.cfg.MaxWait
	}
	return d, true
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

// MaxAttempts returns the configured attempt limit, or [Unlimited]. The
// wrapped policy may have a tighter limit of its own for unhinted retries.
func (p *RetryAfter) MaxAttempts() int { return p.cfg.MaxAttempts }

// limitReached reports whether a refusal of (attempt, err) was due to an
// attempt limit, its own or, for an unhinted retry, the wrapped policy's.
func (p *RetryAfter) limitReached(attempt int, err error) bool {
	if exhausted(attempt, p.cfg.MaxAttempts) {
		return true
	}
	if d, hinted := hintOf(err); hinted && d > 0 {
		return false // refused because the hint was over MaxWait
	}
	return limitReached(p.next, attempt, err)
}

// hintOf returns the first Hint in err's chain.
func hintOf(err error) (time.Duration, bool) {
	for err != nil {
		switch e := err.(type) {
		case Hint:
			return e.RetryAfter(), true
		case interface{ Unwrap() error }:
			err = e.Unwrap()
		case interface{ Unwrap() []error }:
			for _, inner := range e.Unwrap() {
				if d, ok := hintOf(inner); ok {
					return d, true
				}
			}
			return 0, false
		default:
			return 0, false
		}
	}
	return 0, false
}

// maxSeconds is the largest whole number of seconds a time.Duration holds.
const maxSeconds = math.MaxInt64 / int64(time.Second)

// ParseRetryAfter parses the value of an HTTP Retry-After header (RFC 9110,
// section 10.2.3) received at time now, and returns the delay it asks for and
// true, or 0 and false when value is not a valid Retry-After.
//
// It accepts delay-seconds, one or more ASCII digits with nothing else (no
// sign, no fraction), and an HTTP-date in any of the three forms
// http.ParseTime accepts (IMF-fixdate, RFC 850 and asctime). Surrounding
// spaces and tabs are ignored. A date at or before now yields 0. A delay too
// long for a time.Duration (about 292 years) saturates at the largest
// Duration instead of overflowing.
//
// Pass the response's own Date header as now when it has a valid one, so
// that a skewed local clock does not distort an HTTP-date; [CheckResponse]
// does so.
func ParseRetryAfter(value string, now time.Time) (time.Duration, bool) {
	v := trimOWS(value)
	if v == "" {
		return 0, false
	}
	if secs, ok := parseSeconds(v); ok {
		if secs > maxSeconds {
			return math.MaxInt64, true
		}
		return time.Duration(secs) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}

// parseSeconds parses a string of ASCII digits, saturating at maxSeconds+1.
func parseSeconds(s string) (int64, bool) {
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if n <= maxSeconds {
			n = n*10 + int64(c-'0')
		}
	}
	return n, true
}

func trimOWS(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}
