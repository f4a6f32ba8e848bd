package sim

import (
	"context"
	"errors"
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
	// retries (by default the top: "the outermost loop owns the retries").
	OneLayer Stack
	// Innermost is the stack in which only the innermost layer (Layers)
	// retries and the others make one attempt: "the innermost retries, the
	// rest stand back", the model the library implements.
	Innermost Stack
	// Library is the library itself: Layers nested backoff.Retrier.Do
	// calls, each over the contender's policy with its delays replaced by
	// zero (its stop decisions kept), over a dependency that always fails,
	// with the library's default (an outer loop does not retry an inner
	// loop's give-up).
	Library Nested
	// LibraryRetryInner is Library with Retrier.RetryInner set at every
	// layer: every layer retries.
	LibraryRetryInner Nested
	// Events is the number of calls simulated over every variant, the
	// library's included.
	Events int64
}

// Nested is the outcome of one variant of the library's own nested calls:
// counts only, no time passes.
type Nested struct {
	// BottomCalls is the number of calls that reached the failing
	// dependency per top-level request.
	BottomCalls float64
	// TotalCalls is the number of calls made at every layer, dependency
	// included, per top-level request (a layer's Do call counts as the call
	// it serves).
	TotalCalls float64
}

// everyLayer returns the calls one top-level request makes at every layer,
// the dependency included, when every layer retries and uses all its
// attempts: 1 + A + A² + ... + A^L, saturating.
func (cfg AmplificationConfig) everyLayer() int64 {
	a := int64(cfg.Policy.MaxAttempts)
	every, pow := int64(1), int64(1)
	for range cfg.Layers {
		pow = mulSat(pow, a)
		every = addSat(every, pow)
	}
	return every
}

// oneLayer returns the calls one top-level request makes when only layer
// retries: layer + A·(Layers+1-layer), saturating.
func (cfg AmplificationConfig) oneLayer(layer int) int64 {
	return addSat(int64(layer), mulSat(int64(cfg.Policy.MaxAttempts), int64(cfg.Layers+1-layer)))
}

// stackCalls returns the calls one top-level request makes in the
// simulated stacks: with retries at every layer, at RetryLayer only and at
// the innermost only; saturating.
func (cfg AmplificationConfig) stackCalls() int64 {
	return addSat(addSat(cfg.everyLayer(), cfg.oneLayer(cfg.RetryLayer)), cfg.oneLayer(cfg.Layers))
}

// libraryCalls returns the calls one top-level request makes through the
// library's nested Do calls: the innermost retrying (the default), then
// every layer (RetryInner); saturating.
func (cfg AmplificationConfig) libraryCalls() int64 {
	return addSat(cfg.oneLayer(cfg.Layers), cfg.everyLayer())
}

// Validate checks cfg for [Amplification] with the given contenders,
// without running anything: every parameter in range, Layers at most
// [MaxLayers] (the simulator recurses once per layer), and a work
// estimate within [MaxWork]: Requests times the calls of every variant,
// the library's included, per contender.
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
	sim := mulSat(mulSat(cfg.stackCalls(), int64(cfg.Requests)), int64(len(contenders)))
	lib := mulSat(mulSat(cfg.libraryCalls(), int64(cfg.Requests)), int64(len(contenders)))
	events := addSat(sim, lib)
	ns := (float64(sim)*EventCost[w] + float64(lib)*EventCost["library"]) / float64(events)
	return checkEvents(w, "Layers", []string{"Policy.MaxAttempts", "Requests", "contenders"}, events, ns, fmt.Sprintf("Requests %d × the calls of %d layers of Policy.MaxAttempts %d (3 simulated stacks and 2 of the library's nested Do) × %d policies",
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
		weight: func(int) int64 { return 5 * int64(cfg.Requests) },
		run: func(u *unit, _ *struct{}) (AmplificationResult, error) {
			r := AmplificationResult{Policy: u.c.Name}
			for v, st := range []*Stack{&r.EveryLayer, &r.OneLayer, &r.Innermost} {
				s := stackSim{cfg: cfg, pol: u.pol, only: []int{0, cfg.RetryLayer, cfg.Layers}[v]}
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
			for v, st := range []*Nested{&r.Library, &r.LibraryRetryInner} {
				s := newLibraryStack(cfg, u.pol, v == 1)
				for range cfg.Requests {
					s.call(context.Background(), 1)
					if s.err != nil {
						return r, s.err
					}
					u.advance(1)
				}
				st.BottomCalls = float64(s.bottom) / float64(cfg.Requests)
				st.TotalCalls = float64(s.total) / float64(cfg.Requests)
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

// libraryStack runs one variant of the library's own nested calls: each
// layer is a backoff.Retrier.Do over the layer below, the last over a
// dependency that always fails.
type libraryStack struct {
	layers        int
	pol           backoff.Policy // the contender's, through zeroDelays
	retryInner    bool
	bottom, total int64
	limitCheck
}

// limitCheck records a policy that did not give up after limit calls.
type limitCheck struct {
	limit int
	err   error
}

func newLibraryStack(cfg AmplificationConfig, pol backoff.Policy, retryInner bool) *libraryStack {
	s := &libraryStack{layers: cfg.Layers, retryInner: retryInner, limitCheck: limitCheck{limit: cfg.Policy.MaxAttempts}}
	s.pol = zeroDelays(pol, &s.limitCheck)
	return s
}

// call serves one call at layer (1 = top; layers+1 = the dependency).
func (s *libraryStack) call(ctx context.Context, layer int) error {
	s.total++
	if layer > s.layers {
		s.bottom++
		return errFailed
	}
	r := backoff.Retrier{Policy: s.pol, RetryInner: s.retryInner}
	return r.Do(ctx, func(ctx context.Context) error { return s.call(ctx, layer+1) })
}

// errPastLimit stops a loop whose policy retried past Policy.MaxAttempts.
var errPastLimit = errors.New("sim: past Policy.MaxAttempts")

// zeroDelays returns p with every delay replaced by zero and its stop
// decisions kept (counting only: nothing waits), stopping a sequence that
// has not given up after s.limit calls and recording that fault in s; a
// backoff.Sequencer stays one, so that Do starts one sequence per call.
func zeroDelays(p backoff.Policy, s *limitCheck) backoff.Policy {
	if _, ok := p.(backoff.Sequencer); ok {
		return zeroSequencer{zero{p, s}}
	}
	return zero{p, s}
}

type zero struct {
	p backoff.Policy
	s *limitCheck
}

func (z zero) NextDelay(attempt int, err error) (time.Duration, error) {
	_, stop := z.p.NextDelay(attempt, err)
	if stop == nil && attempt >= z.s.limit {
		z.s.err = fmt.Errorf("did not give up after Policy.MaxAttempts = %d calls", z.s.limit)
		return 0, errPastLimit
	}
	return 0, stop
}

type zeroSequencer struct{ zero }

func (z zeroSequencer) NewSequence() backoff.Policy {
	return zero{z.p.(backoff.Sequencer).NewSequence(), z.s}
}
