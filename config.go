package backoff

import (
	"time"

	"github.com/backoffgo/backoff/internal/errchain"
)

// Unlimited is the MaxAttempts value meaning no attempt limit: the policy
// keeps retrying until the error is not retryable or, under [Do], the
// context ends. Use it with a context that has a deadline or is cancelled.
const Unlimited = -1

// Config holds the parameters shared by the exponential family of policies.
// A constant delay d is Config{Base: d, Cap: d} with [NewExponential].
type Config struct {
	// Base is the ceiling of the first retry's delay: attempt 1 waits at
	// most Base. It must be positive.
	Base time.Duration

	// Cap bounds every delay. It must be at least Base.
	Cap time.Duration

	// MaxAttempts is the number of calls allowed, the first included: the
	// policy stops with [ErrExhausted] once attempt >= MaxAttempts (8: up to
	// 7 retries). It must be at least 1 or [Unlimited]; zero is rejected.
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
// no randomness, and only when [Config.surelyRetries] is false.
func (c *Config) stop(attempt int, err error) error {
	if !Retryable(err) {
		return ErrPermanent
	}
	if c.exhausted(attempt) {
		return ErrExhausted
	}
	return nil
}

// exhausted reports whether attempt uses up MaxAttempts.
func (c *Config) exhausted(attempt int) bool {
	return c.MaxAttempts != Unlimited && attempt >= c.MaxAttempts
}

// surelyRetries reports whether stop(attempt, err) is certainly nil: err is
// nil or plain (its only answer is "retry") and attempt is below
// MaxAttempts. It is small enough to inline, so a policy's common case makes
// no call before its draw; when it is false the policy asks stop. (A
// constant false is an equivalent mutant: stop gives the same answers, slower.)
func (c *Config) surelyRetries(attempt int, err error) bool {
	return (err == nil || errchain.IsPlain(err)) && !c.exhausted(attempt)
}
