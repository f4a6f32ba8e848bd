package sim

import (
	"fmt"
	"time"

	"github.com/backoffgo/backoff"
)

// PeriodicResult is the outcome of [Periodic] for one start-offset source.
type PeriodicResult struct {
	// Policy is the contender whose first delay offsets each execution.
	Policy string
	// Peak is the most calls in any one bucket (per-second load), averaged
	// over runs.
	Peak float64
	// Mean is the average calls per bucket: Jobs per Interval.
	Mean float64
	// Events is the number of calls simulated over all runs.
	Events int64
}

// Periodic simulates a fleet of cfg.Jobs jobs that are due at every multiple
// of cfg.Interval and each make one API call per execution. Before calling, an
// execution sleeps a start offset: the first delay of a fresh retry sequence
// of the contender's policy built with Base = Cap = Interval. Full jitter
// thus offsets uniformly within the interval; exponential and no backoff
// give every job the same offset, so the fleet fires together as with no
// offset at all. It reports the peak per-bucket load.
func Periodic(cfg PeriodicConfig, contenders []Contender, seed uint64) ([]PeriodicResult, error) {
	if cfg.Jobs < 1 || cfg.Runs < 1 || cfg.Interval <= 0 || cfg.Bucket <= 0 || cfg.Horizon < cfg.Interval {
		return nil, fmt.Errorf("sim: periodic: need Jobs >= 1, Runs >= 1, Interval > 0, Bucket > 0, Horizon >= Interval")
	}
	execs := int(cfg.Horizon / cfg.Interval)
	p := Params{Base: cfg.Interval, Cap: cfg.Interval, MaxAttempts: 2}
	type runOut struct {
		peak   int
		events int64
	}
	out := make([]runOut, len(contenders)*cfg.Runs)
	err := parallel(len(out), func(i int) error {
		c, r := contenders[i/cfg.Runs], i%cfg.Runs
		_, rng := streams(seed, 5, uint64(r))
		pol, err := build(c, p, rng)
		if err != nil {
			return err
		}
		var buckets []int
		var o runOut
		for range cfg.Jobs {
			for k := range execs {
				d, stop := backoff.StartSequence(pol).NextDelay(1, errFailed)
				if stop != nil {
					d = 0
				}
				t := time.Duration(k)*cfg.Interval + max(d, 0)
				b := int64(t / cfg.Bucket)
				if b >= windowGuard {
					return fmt.Errorf("sim: periodic: policy %q offsets past %v, more than %d buckets", c.Name, t, windowGuard)
				}
				buckets = count(buckets, int(b))
				o.events++
			}
		}
		for _, n := range buckets {
			o.peak = max(o.peak, n)
		}
		out[i] = o
		return nil
	})
	if err != nil {
		return nil, err
	}
	res := make([]PeriodicResult, len(contenders))
	for ci, c := range contenders {
		pr := PeriodicResult{Policy: c.Name, Mean: float64(cfg.Jobs) * float64(cfg.Bucket) / float64(cfg.Interval)}
		var peak float64
		for r := range cfg.Runs {
			peak += float64(out[ci*cfg.Runs+r].peak)
			pr.Events += out[ci*cfg.Runs+r].events
		}
		pr.Peak = peak / float64(cfg.Runs)
		res[ci] = pr
	}
	return res, nil
}
