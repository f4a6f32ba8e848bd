package sim

import (
	"errors"
	"fmt"
	"time"

	"github.com/backoffgo/backoff"
)

// A Contender is a named backoff policy under test.
//
// New builds the policy for one simulation run from the workload's policy
// parameters and the run's random source; a contender's closure may adjust
// the parameters (as [DecorrelatedFrom] does with Base). A run is simulated
// by one goroutine, so the policy may use rng without locking. The
// simulator starts a sequence of the result (its NewSequence, if it is a
// backoff.Sequencer) once per client or per call. New must return a non-nil policy or an error, and the policy
// must give up by cfg.MaxAttempts when that is finite; a nil policy, a
// policy that retries past MaxAttempts, and a panic in New or in the policy
// are reported as errors naming the contender.
type Contender struct {
	// Name identifies the policy in tables and charts.
	Name string
	// Baseline marks a hand-written comparison policy that is not part of the
	// library.
	Baseline bool
	// New builds the policy for one run.
	New func(cfg backoff.Config, rng backoff.Rng) (backoff.Policy, error)
}

// TimidSpread is the additive noise range of the timid-jitter baseline: the
// "plus a random 0-200 ms" found in many retry helpers.
const TimidSpread = 200 * time.Millisecond

// Exponential returns the library's un-jittered exponential backoff.
func Exponential() Contender {
	return Contender{Name: "exponential", New: func(c backoff.Config, _ backoff.Rng) (backoff.Policy, error) {
		return backoff.NewExponential(c)
	}}
}

// FullJitter returns the library's exponential backoff with full jitter.
func FullJitter() Contender {
	return Contender{Name: "full-jitter", New: func(c backoff.Config, rng backoff.Rng) (backoff.Policy, error) {
		return backoff.NewFullJitter(c, rng)
	}}
}

// EqualJitter returns the library's exponential backoff with equal jitter.
func EqualJitter() Contender {
	return Contender{Name: "equal-jitter", New: func(c backoff.Config, rng backoff.Rng) (backoff.Policy, error) {
		return backoff.NewEqualJitter(c, rng)
	}}
}

// Decorrelated returns the library's decorrelated jitter, started from the
// workload's Base.
func Decorrelated() Contender {
	return DecorrelatedFrom(0)
}

// DecorrelatedFrom returns the library's decorrelated jitter started from
// base instead of the workload's Base; base <= 0 means the workload's Base.
// Its name is "decorrelated" either way.
func DecorrelatedFrom(base time.Duration) Contender {
	return Contender{Name: "decorrelated", New: func(c backoff.Config, rng backoff.Rng) (backoff.Policy, error) {
		if base > 0 {
			c.Base = base
		}
		return backoff.NewDecorrelated(c, rng)
	}}
}

// NoBackoff returns the "no backoff" baseline: retry at once, until
// MaxAttempts calls have been made. It is not part of the library.
func NoBackoff() Contender {
	return Contender{Name: "no-backoff", Baseline: true, New: func(c backoff.Config, _ backoff.Rng) (backoff.Policy, error) {
		if c.MaxAttempts < 1 && c.MaxAttempts != backoff.Unlimited {
			return nil, fmt.Errorf("MaxAttempts %d: want >= 1 or backoff.Unlimited", c.MaxAttempts)
		}
		limit := c.MaxAttempts
		return backoff.PolicyFunc(func(attempt int, _ error) (time.Duration, error) {
			if limit != backoff.Unlimited && attempt >= limit {
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
	return Contender{Name: "timid-jitter", Baseline: true, New: func(c backoff.Config, rng backoff.Rng) (backoff.Policy, error) {
		exp, err := backoff.NewExponential(c)
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

// The table of the simulator's contenders, in table order: the one list
// that All, Builtins, Baselines, Lookup, Names and the workloads'
// comparisons read.
var (
	// builtins are the library's policies.
	builtins = []func() Contender{Exponential, FullJitter, EqualJitter, Decorrelated}
	// baselines are the hand-written comparison policies.
	baselines = []func() Contender{NoBackoff, TimidJitter}
	// offsetSources are [Periodic]'s own comparisons, which are not retry
	// policies: no offset, and the library's Ticker.
	offsetSources = []func() Contender{NoOffset, Ticker}
)

// built returns the contenders of the table's lists, in order.
func built(lists ...[]func() Contender) []Contender {
	var cs []Contender
	for _, l := range lists {
		for _, c := range l {
			cs = append(cs, c())
		}
	}
	return cs
}

// Builtins returns the library's policies in table order: exponential, full
// jitter, equal jitter, decorrelated jitter.
func Builtins() []Contender { return built(builtins) }

// Baselines returns the two hand-written comparison policies: no backoff and
// timid jitter.
func Baselines() []Contender { return built(baselines) }

// All returns [Builtins] followed by [Baselines].
func All() []Contender { return built(builtins, baselines) }

// Names returns the name of every contender of the simulator: [All]'s,
// then [Periodic]'s offset sources ([NoOffset], [Ticker]).
func Names() []string {
	var names []string
	for _, c := range built(builtins, baselines, offsetSources) {
		names = append(names, c.Name)
	}
	return names
}

// IsBaseline reports whether the contender called name is a hand-written
// baseline, not part of the library.
func IsBaseline(name string) bool {
	for _, c := range built(baselines, offsetSources) {
		if c.Name == name {
			return c.Baseline
		}
	}
	return false
}

// Brooker returns the five policies of Brooker's contention sweep: the four
// built-ins and no backoff, decorrelated jitter started as
// [ContentionConfig.Contenders] starts it for [DefaultContention].
func Brooker() []Contender {
	return DefaultContention().Contenders(append(Builtins(), NoBackoff()))
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

// next asks a retry sequence for the delay after the attempt-th failed
// call; ok is false when the policy gives up (returns a non-nil error).
// Negative delays count as zero, as in backoff.Do.
func next(seq backoff.Policy, attempt int) (d time.Duration, ok bool) {
	d, stop := seq.NextDelay(attempt, errFailed)
	return max(d, 0), stop == nil
}

// build constructs c's policy for one run, wrapping any error with the name.
func build(c Contender, cfg backoff.Config, rng backoff.Rng) (backoff.Policy, error) {
	pol, err := c.New(cfg, rng)
	if err != nil {
		return nil, fmt.Errorf("policy %q: %w", c.Name, err)
	}
	if pol == nil {
		return nil, fmt.Errorf("policy %q: New returned a nil policy and no error", c.Name)
	}
	return pol, nil
}

// startSequence returns the retry sequence of p for one client or call:
// p.NewSequence() if p is a backoff.Sequencer, p itself otherwise, as
// backoff.Do starts one.
func startSequence(p backoff.Policy) backoff.Policy {
	if s, ok := p.(backoff.Sequencer); ok {
		return s.NewSequence()
	}
	return p
}
