package sim

import (
	"fmt"
	"time"

	"github.com/backoffgo/backoff"
)

// OutageResult is the outcome of [Outage] for one policy.
type OutageResult struct {
	// Policy is the contender's name.
	Policy string
	// SuccessRate is the share of clients that made a call at or after the
	// end of the outage before running out of attempts, averaged over runs:
	// in [0, 1].
	SuccessRate float64
	// SuccessRates holds each run's success rate, in run order.
	SuccessRates []float64
	// CallsPerClient is the mean number of calls a client made, at least 1.
	CallsPerClient float64
	// Events is the number of calls simulated over all runs.
	Events int64
}

// clientCalls is the most calls one outage client may make.
func (cfg OutageConfig) clientCalls() int64 {
	if cfg.Policy.MaxAttempts == backoff.Unlimited {
		return MaxClientAttempts
	}
	return int64(cfg.Policy.MaxAttempts)
}

// Validate checks cfg for [Outage] with the given contenders, without
// running anything: every parameter in range and a work estimate within [MaxWork]
// (Clients·MaxAttempts·Runs per contender, with [MaxClientAttempts] for an
// unlimited budget). Outage keeps no per-client state.
func (cfg OutageConfig) Validate(contenders []Contender) error {
	const w = "outage"
	if err := cfg.checkParams(w, contenders); err != nil {
		return err
	}
	return checkFleetEvents(w, cfg.Clients, cfg.clientCalls(), fmt.Sprintf("%d calls each", cfg.clientCalls()),
		cfg.Runs, len(contenders))
}

// checkParams checks the parameters of the outage for workload w, not its
// work.
func (cfg OutageConfig) checkParams(w string, contenders []Contender) error {
	if err := checkFleet(w, contenders, cfg.Clients, cfg.Runs); err != nil {
		return err
	}
	if cfg.Outage <= 0 {
		return cfgErr(w, "Outage", "%v: want > 0", cfg.Outage)
	}
	return checkPolicy(w, cfg.Policy, true)
}

// Outage simulates clients arriving uniformly at random during an outage
// that starts at t = 0. A call succeeds if and only if it is made at or after
// the end of the outage; a client that runs out of attempts first fails. The
// arrival times depend on the seed and run only, so every contender faces the
// same arrivals.
//
// It refuses cfg as [OutageConfig.Validate] does. A policy that has not
// given up after Policy.MaxAttempts calls, or after [MaxClientAttempts]
// with an unlimited budget, is reported as an error. Virtual time is exact
// for any delays.
func Outage(cfg OutageConfig, contenders []Contender, seed uint64) ([]OutageResult, error) {
	if err := cfg.Validate(contenders); err != nil {
		return nil, err
	}
	type runOut struct{ ok, calls int64 }
	limit := cfg.clientCalls()
	p := plan[struct{}, runOut]{
		workload: "outage", contenders: contenders, runs: cfg.Runs, seed: seed, policy: cfg.Policy, progress: cfg.Progress,
		coords: func(r int) []uint64 { return []uint64{2, uint64(r)} },
		weight: func(int) int64 { return int64(cfg.Clients) },
		run: func(u *unit, _ *struct{}) (runOut, error) {
			var o runOut
			progress := counter{u: u}
			for range cfg.Clients {
				t := time.Duration(u.env.Int64N(int64(cfg.Outage)))
				seq := startSequence(u.pol)
				for attempt := int64(1); ; attempt++ {
					o.calls++
					if t >= cfg.Outage {
						o.ok++
						break
					}
					d, ok := next(seq, int(attempt))
					if !ok {
						break
					}
					if attempt >= limit {
						return o, fmt.Errorf("did not give up after %d calls without reaching the end of the outage", limit)
					}
					// t < Outage: the next call is at t+d, which only needs
					// comparing with Outage, so it never overflows.
					if d >= cfg.Outage-t { // equivalent mutant: > ends at t+d = Outage all the same
						t = cfg.Outage
					} else {
						t += d
					}
				}
				progress.tick()
			}
			progress.flush()
			return o, nil
		},
	}
	out, err := p.execute()
	if err != nil {
		return nil, err
	}
	res := make([]OutageResult, len(contenders))
	for ci, c := range contenders {
		o := OutageResult{Policy: c.Name}
		var rate float64
		for _, ro := range out[ci] {
			s := float64(ro.ok) / float64(cfg.Clients)
			o.SuccessRates = append(o.SuccessRates, s)
			rate += s
			o.Events += ro.calls
		}
		o.SuccessRate = rate / float64(cfg.Runs)
		o.CallsPerClient = float64(o.Events) / (float64(cfg.Runs) * float64(cfg.Clients))
		res[ci] = o
	}
	return res, nil
}
