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

// stackCalls returns the calls one top-level request makes at every layer,
// the dependency included, when every retrying layer uses all its
// attempts: 1 + A + A² + ... + A^L with retries at every layer, and
// RetryLayer + A·(Layers+1-RetryLayer) with retries at one layer; the sum of
// both, saturating.
func (cfg AmplificationConfig) stackCalls() int64 {
	a := int64(cfg.Policy.MaxAttempts)
	every, pow := int64(1), int64(1)
	for range cfg.Layers {
		pow = mulSat(pow, a)
		every = addSat(every, pow)
	}
	one := addSat(int64(cfg.RetryLayer), mulSat(a, int64(cfg.Layers+1-cfg.RetryLayer)))
	return addSat(every, one)
}

// Validate checks cfg for [Amplification] with the given contenders,
// without running anything: every parameter in range, Layers at most
// [MaxLayers] (the simulator recurses once per layer), and at most
// [MaxEvents] calls (Requests times the calls of both stack variants per
// contender).
func (cfg AmplificationConfig) Validate(contenders []Contender) error {
	const w = "amplification"
	if err := checkContenders(w, contenders); err != nil {
		return err
	}
	if cfg.Layers < 1 || cfg.Layers > MaxLayers {
		return cfgErr(w, "Layers", "%d: want 1 to MaxLayers = %d", cfg.Layers, MaxLayers)
	}
	if err := checkPositive(w, "Requests", cfg.Requests); err != nil {
		return err
	}
	if cfg.RetryLayer < 1 || cfg.RetryLayer > cfg.Layers {
		return cfgErr(w, "RetryLayer", "%d: want 1 to Layers = %d", cfg.RetryLayer, cfg.Layers)
	}
	if cfg.CallLatency < 0 {
		return cfgErr(w, "CallLatency", "%v: want >= 0", cfg.CallLatency)
	}
	if err := checkPolicy(w, cfg.Policy, false); err != nil {
		return err
	}
	events := mulSat(mulSat(cfg.stackCalls(), int64(cfg.Requests)), int64(len(contenders)))
	return checkEvents(w, "Layers", []string{"Policy.MaxAttempts", "Requests", "contenders"}, events, fmt.Sprintf("Requests %d × the calls of %d layers of Policy.MaxAttempts %d × %d policies",
		cfg.Requests, cfg.Layers, cfg.Policy.MaxAttempts, len(contenders)))
}

// Amplification simulates a call stack of cfg.Layers layers over a
// dependency that always fails after cfg.CallLatency. Each layer calls the
// one below synchronously; a layer that retries starts one retry sequence per
// call it serves and retries its call below until its policy gives up. It
// reports the load at the dependency per top-level request, with retries at
// every layer and at one layer only.
//
// It refuses cfg as [AmplificationConfig.Validate] does. A policy that has
// not given up after Policy.MaxAttempts calls is reported as an error, and
// so is a request whose virtual time would pass the largest time.Duration.
func Amplification(cfg AmplificationConfig, contenders []Contender, seed uint64) ([]AmplificationResult, error) {
	if err := cfg.Validate(contenders); err != nil {
		return nil, err
	}
	p := plan[struct{}, AmplificationResult]{
		workload: "amplification", contenders: contenders, runs: 1, seed: seed, policy: cfg.Policy, progress: cfg.Progress,
		coords: func(int) []uint64 { return []uint64{4} },
		weight: func(int) int64 { return 2 * int64(cfg.Requests) },
		run: func(u *unit, _ *struct{}) (AmplificationResult, error) {
			r := AmplificationResult{Policy: u.c.Name}
			for v, st := range []*Stack{&r.EveryLayer, &r.OneLayer} {
				s := stackSim{cfg: cfg, pol: u.pol, only: 0}
				if v == 1 {
					s.only = cfg.RetryLayer
				}
				total := mean{n: int64(cfg.Requests)}
				for range cfg.Requests {
					end, err := s.call(1, 0)
					if err != nil {
						return r, err
					}
					total.add(end)
					u.advance(1)
				}
				st.BottomCalls = float64(s.bottom) / float64(cfg.Requests)
				st.TotalCalls = float64(s.total) / float64(cfg.Requests)
				st.TimeToFail = total.value()
				r.Events += s.total
			}
			return r, nil
		},
	}
	out, err := p.execute()
	if err != nil {
		return nil, err
	}
	res := make([]AmplificationResult, len(contenders))
	for ci := range res {
		res[ci] = out[ci][0]
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
		t, ok := addTime(t, s.cfg.CallLatency)
		if !ok {
			return 0, errTimeOverflow
		}
		return t, nil
	}
	if s.only != 0 && layer != s.only {
		return s.call(layer+1, t)
	}
	seq := startSequence(s.pol)
	for attempt := 1; ; attempt++ {
		var err error
		if t, err = s.call(layer+1, t); err != nil {
			return t, err
		}
		d, ok := next(seq, attempt)
		if !ok {
			return t, nil
		}
		if attempt >= s.cfg.Policy.MaxAttempts {
			return t, fmt.Errorf("did not give up after Policy.MaxAttempts = %d calls", s.cfg.Policy.MaxAttempts)
		}
		if t, ok = addTime(t, d); !ok {
			return 0, errTimeOverflow
		}
	}
}
