package sim

import (
	"errors"
	"fmt"
	"time"

	"github.com/backoffgo/backoff"
)

// Params are the backoff parameters a workload hands to every policy it runs.
type Params struct {
	// Base is the first retry's ceiling (attempt 1 waits at most Base).
	Base time.Duration
	// Cap bounds every delay of the exponential family.
	Cap time.Duration
	// MaxAttempts is the total number of calls including the first, or
	// backoff.Unlimited.
	MaxAttempts int
	// DecorrelatedBase, if non-zero, replaces Base for decorrelated jitter.
	// Brooker's contention runs start decorrelated jitter from 5 ms while the
	// exponential family's first retry ceiling is 10 ms.
	DecorrelatedBase time.Duration
}

// Config returns p as a backoff.Config.
func (p Params) Config() backoff.Config {
	return backoff.Config{Base: p.Base, Cap: p.Cap, MaxAttempts: p.MaxAttempts}
}

// A Contender is a named backoff policy under test.
//
// New builds the policy for one simulation run from the workload's parameters
// and the run's random source. A run is simulated by one goroutine, so the
// policy may use rng without locking. The simulator calls
// backoff.StartSequence on the result once per client or per call.
type Contender struct {
	// Name identifies the policy in tables and charts.
	Name string
	// Baseline marks a hand-written comparison policy that is not part of the
	// library.
	Baseline bool
	// New builds the policy for one run.
	New func(p Params, rng backoff.Rng) (backoff.Policy, error)
}

// TimidSpread is the additive noise range of the timid-jitter baseline: the
// "plus a random 0-200 ms" found in many retry helpers.
const TimidSpread = 200 * time.Millisecond

// Exponential returns the library's un-jittered exponential backoff.
func Exponential() Contender {
	return Contender{Name: "exponential", New: func(p Params, _ backoff.Rng) (backoff.Policy, error) {
		return backoff.NewExponential(p.Config())
	}}
}

// FullJitter returns the library's exponential backoff with full jitter.
func FullJitter() Contender {
	return Contender{Name: "full-jitter", New: func(p Params, rng backoff.Rng) (backoff.Policy, error) {
		return backoff.NewFullJitter(p.Config(), rng)
	}}
}

// EqualJitter returns the library's exponential backoff with equal jitter.
func EqualJitter() Contender {
	return Contender{Name: "equal-jitter", New: func(p Params, rng backoff.Rng) (backoff.Policy, error) {
		return backoff.NewEqualJitter(p.Config(), rng)
	}}
}

// Decorrelated returns the library's decorrelated jitter, started from
// Params.DecorrelatedBase when that is set.
func Decorrelated() Contender {
	return Contender{Name: "decorrelated", New: func(p Params, rng backoff.Rng) (backoff.Policy, error) {
		c := p.Config()
		if p.DecorrelatedBase > 0 {
			c.Base = p.DecorrelatedBase
		}
		return backoff.NewDecorrelated(c, rng)
	}}
}

// NoBackoff returns the "no backoff" baseline: retry at once, until
// MaxAttempts calls have been made. It is not part of the library.
func NoBackoff() Contender {
	return Contender{Name: "no-backoff", Baseline: true, New: func(p Params, _ backoff.Rng) (backoff.Policy, error) {
		if err := checkAttempts(p.MaxAttempts); err != nil {
			return nil, err
		}
		max := p.MaxAttempts
		return backoff.PolicyFunc(func(attempt int, _ error) (time.Duration, error) {
			if max != backoff.Unlimited && attempt >= max {
				return 0, backoff.ErrExhausted
			}
			return 0, nil
		}), nil
	}}
}

// TimidJitter returns the "timid jitter" baseline: the library's un-jittered
// exponential delay plus a uniform 0 to [TimidSpread] of additive noise. It is
// not part of the library; it is the trap the documentation warns about.
func TimidJitter() Contender {
	return Contender{Name: "timid-jitter", Baseline: true, New: func(p Params, rng backoff.Rng) (backoff.Policy, error) {
		exp, err := backoff.NewExponential(p.Config())
		if err != nil {
			return nil, err
		}
		return backoff.PolicyFunc(func(attempt int, err error) (time.Duration, error) {
			d, stop := exp.NextDelay(attempt, err)
			if stop != nil {
				return 0, stop
			}
			return d + time.Duration(rng.Int64N(int64(TimidSpread)+1)), nil
		}), nil
	}}
}

func checkAttempts(n int) error {
	if n < 1 && n != backoff.Unlimited {
		return fmt.Errorf("sim: MaxAttempts %d: want >= 1 or backoff.Unlimited", n)
	}
	return nil
}

// Builtins returns the library's policies in table order: exponential, full
// jitter, equal jitter, decorrelated jitter.
func Builtins() []Contender {
	return []Contender{Exponential(), FullJitter(), EqualJitter(), Decorrelated()}
}

// Baselines returns the two hand-written comparison policies: no backoff and
// timid jitter.
func Baselines() []Contender {
	return []Contender{NoBackoff(), TimidJitter()}
}

// All returns [Builtins] followed by [Baselines].
func All() []Contender {
	return append(Builtins(), Baselines()...)
}

// Brooker returns the five policies of Brooker's contention sweep: the four
// built-ins and no backoff.
func Brooker() []Contender {
	return append(Builtins(), NoBackoff())
}

// Lookup returns the contender from [All] with the given name.
func Lookup(name string) (Contender, error) {
	for _, c := range All() {
		if c.Name == name {
			return c, nil
		}
	}
	return Contender{}, fmt.Errorf("sim: unknown policy %q", name)
}

// errFailed is the error every simulated failed call reports to its policy.
var errFailed = errors.New("sim: simulated failure")

// build constructs c's policy for one run, wrapping any error with the name.
func build(c Contender, p Params, rng backoff.Rng) (backoff.Policy, error) {
	if c.New == nil {
		return nil, fmt.Errorf("sim: policy %q has no constructor", c.Name)
	}
	pol, err := c.New(p, rng)
	if err != nil {
		return nil, fmt.Errorf("sim: policy %q: %w", c.Name, err)
	}
	return pol, nil
}
