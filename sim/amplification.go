package sim

import (
	"fmt"
	"time"

	"github.com/backoffgo/backoff"
)

// Stack is the outcome of one variant of [Amplification].
type Stack struct {
	// BottomCalls is the number of calls that reached the failing
	// dependency per top-level request: the load multiplier.
	BottomCalls float64
	// TotalCalls is the number of calls made at every layer, dependency
	// included, per top-level request.
	TotalCalls float64
	// TimeToFail is how long a top-level request took to fail, averaged.
	TimeToFail time.Duration
}

// AmplificationResult is the outcome of [Amplification] for one policy.
type AmplificationResult struct {
	// Policy is the contender's name.
	Policy string
	// EveryLayer is the stack in which every layer retries.
	EveryLayer Stack
	// OneLayer is the stack in which only AmplificationConfig.RetryLayer
	// retries.
	OneLayer Stack
	// Events is the number of calls simulated over both variants.
	Events int64
}

// Amplification simulates a call stack of cfg.Layers layers over a
// dependency that always fails after cfg.CallLatency. Each layer calls the
// one below synchronously; a layer that retries starts one retry sequence per
// call it serves and retries its call below until its policy gives up. It
// reports the load at the dependency per top-level request, with retries at
// every layer and at one layer only.
func Amplification(cfg AmplificationConfig, contenders []Contender, seed uint64) ([]AmplificationResult, error) {
	if cfg.Layers < 1 || cfg.Requests < 1 || cfg.RetryLayer < 1 || cfg.RetryLayer > cfg.Layers || cfg.CallLatency < 0 {
		return nil, fmt.Errorf("sim: amplification: need Layers >= 1, Requests >= 1, 1 <= RetryLayer <= Layers, CallLatency >= 0")
	}
	if cfg.Params.MaxAttempts == backoff.Unlimited {
		return nil, fmt.Errorf("sim: amplification: MaxAttempts must be finite: the dependency never recovers")
	}
	if stackCalls(cfg.Params.MaxAttempts, cfg.Layers, cfg.Requests) > MaxAmplificationCalls {
		return nil, fmt.Errorf("sim: amplification: %d layers of %d attempts for %d requests make more than %d calls at the dependency: lower Layers, MaxAttempts or Requests",
			cfg.Layers, cfg.Params.MaxAttempts, cfg.Requests, MaxAmplificationCalls)
	}
	res := make([]AmplificationResult, len(contenders))
	err := parallel(len(contenders), func(ci int) error {
		c := contenders[ci]
		_, rng := streams(seed, 4)
		pol, err := build(c, cfg.Params, rng)
		if err != nil {
			return err
		}
		r := AmplificationResult{Policy: c.Name}
		for v, st := range []*Stack{&r.EveryLayer, &r.OneLayer} {
			s := stackSim{cfg: cfg, pol: pol, only: 0}
			if v == 1 {
				s.only = cfg.RetryLayer
			}
			var total time.Duration
			for range cfg.Requests {
				end, err := s.call(1, 0)
				if err != nil {
					return fmt.Errorf("sim: amplification: policy %q: %w", c.Name, err)
				}
				total += end
			}
			st.BottomCalls = float64(s.bottom) / float64(cfg.Requests)
			st.TotalCalls = float64(s.total) / float64(cfg.Requests)
			st.TimeToFail = total / time.Duration(cfg.Requests)
			r.Events += s.total
		}
		res[ci] = r
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// stackSim simulates one variant of the layered stack in virtual time.
type stackSim struct {
	cfg           AmplificationConfig
	pol           backoff.Policy
	only          int // the single retrying layer, or 0 for every layer
	bottom, total int64
}

// call serves one call at layer (1 = top; Layers+1 = the dependency) that
// starts at t, and returns when it fails.
func (s *stackSim) call(layer int, t time.Duration) (time.Duration, error) {
	s.total++
	if layer > s.cfg.Layers {
		s.bottom++
		return t + s.cfg.CallLatency, nil
	}
	if s.only != 0 && layer != s.only {
		return s.call(layer+1, t)
	}
	seq := backoff.StartSequence(s.pol)
	for attempt := 1; ; attempt++ {
		var err error
		if t, err = s.call(layer+1, t); err != nil {
			return t, err
		}
		if attempt > attemptGuard {
			return t, fmt.Errorf("did not give up after %d attempts", attemptGuard)
		}
		d, stop := seq.NextDelay(attempt, errFailed)
		if stop != nil {
			return t, nil
		}
		t += max(d, 0)
	}
}

// MaxAmplificationCalls bounds the calls one Amplification run may simulate
// per policy, MaxAttempts^Layers × Requests, so that a deep stack is refused
// with an error instead of running for hours.
const MaxAmplificationCalls = 100_000_000

// stackCalls returns attempts^layers × requests, saturating just above
// MaxAmplificationCalls.
func stackCalls(attempts, layers, requests int) int64 {
	calls := int64(requests)
	for range layers {
		calls *= int64(attempts)
		if calls > MaxAmplificationCalls {
			return MaxAmplificationCalls + 1
		}
	}
	return calls
}
