package backoff

import (
	"errors"
	"math"
	"time"
)

// Hint is implemented by errors that carry a server's own estimate of when
// to retry, such as an HTTP Retry-After header. [RetryAfter] finds the first
// one in an error's chain, following Unwrap() error and Unwrap() []error
// depth first as errors.As does (but not As methods), without allocating.
// *[RetryAfterError] implements it, as does the HTTP error of the backoffhttp
// subpackage; so can a user's own error types.
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
	if e == nil {
		return "backoff: <nil *RetryAfterError>"
	}
	msg := "(retry after " + e.Delay.String() + ")"
	if e.Err != nil {
		msg = e.Err.Error() + " " + msg
	}
	return msg
}

// Unwrap returns the underlying failure.
func (e *RetryAfterError) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Err
}

// RetryAfter returns the hinted delay; 0 for a nil *RetryAfterError.
func (e *RetryAfterError) RetryAfter() time.Duration {
	if e == nil {
		return 0
	}
	return e.Delay
}

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
	// MaxWait is the longest hint honoured. It must be positive: an
	// unbounded hint ("Retry-After: 3600", a date next year) would stall a
	// worker for as long as the server says.
	MaxWait time.Duration

	// OverMax says what a hint longer than MaxWait does. The zero value is
	// Clamp.
	OverMax OverMaxAction
}

// ErrHintTooLong is the reason a [RetryAfter] policy with OverMax GiveUp
// stops at a hint longer than its MaxWait. The reason itself is a
// *[HintTooLongError], which says the hint and the limit.
var ErrHintTooLong = errors.New("backoff: server's retry hint exceeds MaxWait")

// HintTooLongError is the reason a [RetryAfter] policy gives up at a hint
// longer than its MaxWait, when OverMax is GiveUp. It matches
// [ErrHintTooLong] with errors.Is.
type HintTooLongError struct {
	Hint    time.Duration // the delay the server asked for
	MaxWait time.Duration // the longest delay the policy honours
}

func (e *HintTooLongError) Error() string {
	if e == nil {
		return ErrHintTooLong.Error()
	}
	return "backoff: server asked to wait " + e.Hint.String() + ", over MaxWait " + e.MaxWait.String()
}

// Is reports whether target is [ErrHintTooLong].
func (e *HintTooLongError) Is(target error) bool { return target == ErrHintTooLong }

// RetryAfter honours a server's retry hint and otherwise defers to another
// policy, which keeps every decision to stop. For each failure, in order:
//
//   - the wrapped policy is asked first, so its checks (a non-[Retryable]
//     error, its attempt budget, any reason of a user's policy) stop hinted
//     retries too: there is one attempt budget, the wrapped policy's;
//   - when the error carries a positive [Hint], the delay is exactly the
//     hint, without randomness of its own: the wrapped policy's delay is
//     discarded (a jittered policy has spent its draw, and a [Decorrelated]
//     sequence remembers that draw). A hint longer than MaxWait is clamped
//     to MaxWait, or stops with a *[HintTooLongError], as OverMax says;
//   - otherwise, including a hint of zero or less (a "Retry-After: 0", a date
//     already past), the wrapped policy's delay is used. Falling back rather
//     than retrying at once keeps a server that keeps answering "0" from
//     driving a hot loop.
//
// A RetryAfter is immutable and safe for concurrent use when the wrapped
// policy is. When the wrapped policy is a [Sequencer], so is RetryAfter, and
// each sequence wraps a fresh sequence of it.
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
	if cfg.MaxWait <= 0 {
		return nil, &ParamError{Param: "MaxWait", Value: cfg.MaxWait, Reason: "must be positive"}
	}
	if cfg.OverMax != Clamp && cfg.OverMax != GiveUp {
		return nil, &ParamError{Param: "OverMax", Value: int(cfg.OverMax), Reason: "must be Clamp or GiveUp"}
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
		if p.cfg.OverMax == GiveUp {
			return 0, &HintTooLongError{Hint: hint, MaxWait: p.cfg.MaxWait}
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
// sign, no fraction), and an HTTP-date as [ParseHTTPDate] reads it.
// Surrounding spaces and tabs are ignored. A date at or before now yields 0.
// A delay too long for a time.Duration (about 292 years) saturates at the
// largest Duration instead of overflowing.
//
// Pass the response's own Date header as now when it has a valid one, so
// that a skewed local clock does not distort an HTTP-date.
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
	t, ok := ParseHTTPDate(v)
	if !ok {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}

// httpDateLayouts are the three forms of an HTTP-date (RFC 9110, section
// 5.6.7): IMF-fixdate, then the obsolete RFC 850 and asctime forms. "GMT"
// is literal text in the first two, so no other zone is accepted and the
// result never depends on the host's time zone; asctime has no zone and is
// read as UTC.
var httpDateLayouts = [...]string{
	"Mon, 02 Jan 2006 15:04:05 GMT",
	"Monday, 02-Jan-06 15:04:05 GMT",
	"Mon Jan _2 15:04:05 2006",
}

// ParseHTTPDate parses an HTTP-date (RFC 9110, section 5.6.7) in any of its
// three forms, such as a Date or Retry-After header, and returns it in UTC
// and true, or the zero Time and false. It accepts what net/http's ParseTime
// accepts, except that the IMF-fixdate and RFC 850 forms must say GMT, as the
// RFC requires: ParseTime reads another zone abbreviation ("PST") by the
// host's time zone database, so its answer would depend on where it runs.
// A two-digit RFC 850 year is read as time.Parse reads it: 69–99 are
// 1969–1999, 00–68 are 2000–2068.
func ParseHTTPDate(s string) (time.Time, bool) {
	for _, layout := range httpDateLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
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
