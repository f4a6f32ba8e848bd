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
	// end of the outage before running out of attempts, averaged over runs.
	SuccessRate float64
	// SuccessRates holds each run's success rate, in run order.
	SuccessRates []float64
	// CallsPerClient is the mean number of calls a client made.
	CallsPerClient float64
	// Events is the number of calls simulated over all runs.
	Events int64
}

// Outage simulates clients arriving uniformly at random during an outage
// that starts at t = 0. A call succeeds if and only if it is made at or after
// the end of the outage; a client that runs out of attempts first fails. The
// arrival times depend on the seed and run only, so every contender faces the
// same arrivals.
func Outage(cfg OutageConfig, contenders []Contender, seed uint64) ([]OutageResult, error) {
	if cfg.Clients < 1 || cfg.Runs < 1 || cfg.Outage <= 0 {
		return nil, fmt.Errorf("sim: outage: need Clients >= 1, Runs >= 1, Outage > 0 (got %d, %d, %v)", cfg.Clients, cfg.Runs, cfg.Outage)
	}
	type runOut struct{ ok, calls int64 }
	out := make([]runOut, len(contenders)*cfg.Runs)
	err := parallel(len(out), func(i int) error {
		c, r := contenders[i/cfg.Runs], i%cfg.Runs
		env, rng := streams(seed, 2, uint64(r))
		pol, err := build(c, cfg.Params, rng)
		if err != nil {
			return err
		}
		var o runOut
		for range cfg.Clients {
			t := time.Duration(env.Int64N(int64(cfg.Outage)))
			seq := backoff.StartSequence(pol)
			for attempt := 1; ; attempt++ {
				o.calls++
				if t >= cfg.Outage {
					o.ok++
					break
				}
				if attempt > attemptGuard {
					return fmt.Errorf("sim: outage: policy %q made %d attempts without reaching the end of the outage", c.Name, attemptGuard)
				}
				d, stop := seq.NextDelay(attempt, errFailed)
				if stop != nil {
					break
				}
				t += max(d, 0)
			}
		}
		out[i] = o
		return nil
	})
	if err != nil {
		return nil, err
	}
	res := make([]OutageResult, len(contenders))
	for ci, c := range contenders {
		o := OutageResult{Policy: c.Name}
		var rate float64
		var calls int64
		for r := range cfg.Runs {
			ro := out[ci*cfg.Runs+r]
			s := float64(ro.ok) / float64(cfg.Clients)
			o.SuccessRates = append(o.SuccessRates, s)
			rate += s
			calls += ro.calls
		}
		o.SuccessRate = rate / float64(cfg.Runs)
		o.CallsPerClient = float64(calls) / float64(cfg.Runs*cfg.Clients)
		o.Events = calls
		res[ci] = o
	}
	return res, nil
}
