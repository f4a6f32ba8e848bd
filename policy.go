package backoff

import (
	"math"
	"reflect"
	"strconv"
	"time"
)

// Policy decides whether a failed call is retried and how long to wait first.
//
// NextDelay is called after a call has failed. attempt is the number of
// attempts made so far, counting the one that just failed: it is 1 after the
// first call failed, 2 after the first retry failed, and so on. err is the
// error that attempt returned; nil stands for a failure without an error
// value (a simulator or a poller may drive a policy that way) and is treated
// as retryable.
//
// NextDelay returns the delay before the next attempt and a nil error, or a
// non-nil error that is the reason to stop: [Do] puts exactly that value in
// [Error].Reason, so a policy states why it gives up and callers match the
// reason with errors.Is. The built-in policies return [ErrPermanent] for an
// error that is not [Retryable] and then [ErrExhausted] once attempt reaches
// MaxAttempts, both before any random draw. When the error is non-nil the
// delay is meaningless and zero. A returned delay is never negative.
//
// The built-in policies count from the first retry: at attempt 1 their
// ceiling is Base (Base·2⁰), at attempt 2 it is 2·Base, and so on up to Cap.
// They treat an attempt below 1 as 1, so a caller that counts from zero gets
// the smallest delay rather than a zero or negative one.
//
// Every built-in policy is immutable after construction and safe for
// concurrent use by any number of goroutines. A Policy that keeps memory
// between the steps of one retry sequence implements [Sequencer] as well.
type Policy interface {
	NextDelay(attempt int, err error) (time.Duration, error)
}

// PolicyFunc adapts an ordinary function to the [Policy] interface. The
// function must honour Policy's contract: a delay of zero or more and a nil
// error to retry, or a non-nil error that says why it stops.
type PolicyFunc func(attempt int, err error) (time.Duration, error)

// NextDelay returns f(attempt, err).
func (f PolicyFunc) NextDelay(attempt int, err error) (time.Duration, error) {
	return f(attempt, err)
}

// Sequencer is implemented by a Policy whose delays depend on the delays it
// gave earlier in the same retry sequence, such as [Decorrelated].
//
// A retry sequence is the series of NextDelay calls for one logical
// operation: one [Do] call, or one simulated client. NewSequence returns a
// fresh Policy that holds the memory of exactly one sequence; it is used by a
// single goroutine and dropped when the sequence ends. The Sequencer itself
// stays immutable and shareable, so concurrent sequences never see each
// other's state.
//
// Do calls NewSequence once per call, lazily, after the first failure.
// Anything else that drives policies (a simulator, a hand-written loop)
// should call [StartSequence] once per sequence.
type Sequencer interface {
	Policy
	NewSequence() Policy
}

// StartSequence returns the Policy to use for one new retry sequence:
// p.NewSequence() when p is a [Sequencer], and p itself otherwise.
func StartSequence(p Policy) Policy {
	if s, ok := p.(Sequencer); ok {
		return s.NewSequence()
	}
	return p
}

// Unlimited is the MaxAttempts value meaning no attempt limit: the policy
// keeps retrying until the error is not retryable or, under [Do], the
// context ends. Use it with a context that has a deadline or is cancelled.
const Unlimited = -1

// Config holds the parameters shared by the exponential family of policies.
type Config struct {
	// Base is the ceiling of the first retry's delay: attempt 1 waits at
	// most Base. It must be positive.
	Base time.Duration

	// Cap bounds every delay. It must be at least Base.
	Cap time.Duration

	// MaxAttempts is the total number of calls allowed, the first included:
	// the policy stops with [ErrExhausted] once attempt >= MaxAttempts, so 8
	// means one call and up to 7 retries, and 1 means no retry at all. It
	// must be at least 1 or [Unlimited]. Zero is rejected rather than read
	// as "no limit".
	MaxAttempts int
}

func (c Config) validate() error {
	if c.Base <= 0 {
		return &ParamError{Param: "Base", Value: c.Base, Reason: "must be positive"}
	}
	if c.Cap < c.Base {
		return &ParamError{Param: "Cap", Value: c.Cap, Reason: "must be at least Base (" + c.Base.String() + ")"}
	}
	if c.MaxAttempts < 1 && c.MaxAttempts != Unlimited {
		return &ParamError{Param: "MaxAttempts", Value: c.MaxAttempts, Reason: "must be at least 1, or Unlimited"}
	}
	return nil
}

// validateWithRng validates c and the random source of a jittered policy.
func (c Config) validateWithRng(rng Rng) error {
	if err := c.validate(); err != nil {
		return err
	}
	return checkRng(rng)
}

// stop returns the reason a policy with this configuration gives up after
// the given attempt failed with err, or nil to retry: the seed's two checks,
// in order. Policies call it before any random draw, so a refusal consumes
// no randomness.
func (c Config) stop(attempt int, err error) error {
	if err != nil && !isPlain(err) && !Retryable(err) {
		return ErrPermanent
	}
	if c.MaxAttempts != Unlimited && attempt >= c.MaxAttempts {
		return ErrExhausted
	}
	return nil
}

// ParamError reports an invalid parameter: a constructor's, or a nil
// function or policy passed to [Do].
type ParamError struct {
	Param  string // the parameter's name, as in Config: "Base", "Cap", "MaxAttempts", "Rng", ...
	Value  any    // the rejected value
	Reason string // what the parameter must be
}

func (e *ParamError) Error() string {
	if e == nil {
		return "backoff: invalid parameter"
	}
	return "backoff: invalid " + e.Param + " " + formatValue(e.Value) + ": " + e.Reason
}

// formatValue prints the parameter values the library rejects without
// importing fmt, which would cost a program that imports backoff about
// 360 KB.
func formatValue(v any) string {
	switch v := v.(type) {
	case nil:
		return "nil"
	case time.Duration:
		return v.String()
	case int:
		return strconv.Itoa(v)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case string:
		return v
	case interface{ String() string }:
		return v.String()
	}
	return "(" + reflect.TypeOf(v).String() + ")"
}

// Must returns p when err is nil and panics with err otherwise. It is meant
// for package-level policies built from constants, in the manner of
// regexp.MustCompile:
//
//	var policy = backoff.Must(backoff.NewFullJitter(cfg, backoff.RuntimeRng{}))
func Must[P Policy](p P, err error) P {
	if err != nil {
		panic(err)
	}
	return p
}

func checkRng(rng Rng) error {
	if isNil(rng) {
		return &ParamError{Param: "Rng", Value: nil, Reason: "must not be nil; use RuntimeRng{} or NewSeededRng"}
	}
	if l, ok := rng.(*LockedRng); ok && l.r == nil {
		return &ParamError{Param: "Rng", Value: "LockedRng{}", Reason: "has no source; use NewSeededRng or NewLockedRng with a non-nil source"}
	}
	return nil
}

// isNil reports whether v is nil or an interface holding a nil pointer,
// func or map, which would otherwise panic on first use, deep inside a
// policy, instead of at construction.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Func, reflect.Map, reflect.Chan, reflect.Slice, reflect.Interface:
		return rv.IsNil()
	}
	return false
}

// saturatingInc returns n+1, or n when that would overflow.
func saturatingInc(n int) int {
	if n == math.MaxInt {
		return n
	}
	return n + 1
}
