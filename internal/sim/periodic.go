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

// executions is the number of times each job runs: Horizon / Interval.
func (cfg PeriodicConfig) executions() int64 { return int64(cfg.Horizon / cfg.Interval) }

// Validate checks cfg for [Periodic] with the given contenders, without
// running anything: every parameter in range, a time series of at most
// [MaxSeries] buckets for offsets of at most Interval (Horizon/Bucket), and
// a work estimate within [MaxWork] (Jobs·(Horizon/Interval)·Runs per contender).
func (cfg PeriodicConfig) Validate(contenders []Contender) error {
	const w = "periodic"
	if err := checkContenders(w, contenders); err != nil {
		return err
	}
	if err := checkPositive(w, "Jobs", cfg.Jobs); err != nil {
		return err
	}
	if err := checkPositive(w, "Runs", cfg.Runs); err != nil {
		return err
	}
	if cfg.Interval <= 0 {
		return cfgErr(w, "Interval", "%v: want > 0", cfg.Interval)
	}
	if cfg.Bucket <= 0 {
		return cfgErr(w, "Bucket", "%v: want > 0", cfg.Bucket)
	}
	if cfg.Horizon < cfg.Interval {
		return cfgErr(w, "Horizon", "%v is below Interval %v", cfg.Horizon, cfg.Interval)
	}
	if n := seriesLen(cfg.Horizon, cfg.Bucket); n > MaxSeries {
		return limitErr(w, "Horizon", []string{"Bucket"}, "%v / Bucket %v is %d buckets, above the limit MaxSeries = %d", cfg.Horizon, cfg.Bucket, n, MaxSeries)
	}
	events := mulSat(mulSat(mulSat(int64(cfg.Jobs), cfg.executions()), int64(cfg.Runs)), int64(len(contenders)))
	return checkEvents(w, "Interval", []string{"Jobs", "Horizon", "Runs", "contenders"}, events, EventCost[w], fmt.Sprintf("Jobs %d × Horizon/Interval %d × Runs %d × %d policies",
		cfg.Jobs, cfg.executions(), cfg.Runs, len(contenders)))
}

// Periodic simulates a fleet of cfg.Jobs jobs that are due at every multiple
// of cfg.Interval and each make one API call per execution. Before calling, an
// execution sleeps a start offset: the first delay of a fresh retry sequence
// of the contender's policy built with Base = Cap = Interval and
// MaxAttempts 2. Full jitter thus offsets uniformly within the interval;
// exponential and no backoff give every job the same offset, so the fleet
// fires together as with no offset at all. It reports the peak per-bucket
// load.
//
// It refuses cfg as [PeriodicConfig.Validate] does. A policy whose offset
// reaches past [MaxSeries] buckets is reported as an error.
func Periodic(cfg PeriodicConfig, contenders []Contender, seed uint64) ([]PeriodicResult, error) {
	if err := cfg.Validate(contenders); err != nil {
		return nil, err
	}
	execs := cfg.executions()
	type runOut struct {
		peak, events int64
	}
	type scratch struct{ buckets []int64 }
	p := plan[scratch, runOut]{
		workload: "periodic", contenders: contenders, runs: cfg.Runs, seed: seed, progress: cfg.Progress,
		policy: backoff.Config{Base: cfg.Interval, Cap: cfg.Interval, MaxAttempts: 2},
		coords: func(r int) []uint64 { return []uint64{5, uint64(r)} },
		weight: func(int) int64 { return int64(cfg.Jobs) },
		run: func(u *unit, s *scratch) (runOut, error) {
			buckets := s.buckets[:0]
			var o runOut
			progress := counter{u: u}
			for range cfg.Jobs {
				for k := range execs {
					d, ok := next(startSequence(u.pol), 1)
					if !ok {
						d = 0
					}
					start := time.Duration(k) * cfg.Interval // below Horizon
					t := clock{w: int64(start / cfg.Bucket), rem: start % cfg.Bucket}
					if !t.add(d, cfg.Bucket, MaxSeries) {
						return o, fmt.Errorf("offsets past MaxSeries = %d buckets of %v", MaxSeries, cfg.Bucket)
					}
					buckets = count(buckets, t.w)
					o.events++
				}
				progress.tick()
			}
			progress.flush()
			o.peak = peakOf(buckets)
			s.buckets = buckets
			return o, nil
		},
	}
	out, err := p.execute()
	if err != nil {
		return nil, err
	}
	res := make([]PeriodicResult, len(contenders))
	for ci, c := range contenders {
		pr := PeriodicResult{Policy: c.Name, Mean: float64(cfg.Jobs) * float64(cfg.Bucket) / float64(cfg.Interval)}
		var peak float64
		for _, o := range out[ci] {
			peak += float64(o.peak)
			pr.Events += o.events
		}
		pr.Peak = peak / float64(cfg.Runs)
		res[ci] = pr
	}
	return res, nil
}
