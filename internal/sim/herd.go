package sim

import (
	"fmt"
	"time"
)

// HerdResult is the outcome of [Herd] for one policy.
type HerdResult struct {
	// Policy is the contender's name.
	Policy string
	// Retries is the number of retries per run (calls after the first),
	// averaged over runs.
	Retries float64
	// PeakShare is the most retries in any one window divided by all
	// retries, averaged over runs; 0 for a run without retries.
	PeakShare float64
	// PeakShares holds each run's peak share, in run order.
	PeakShares []float64
	// Series is the first run's retries per window: Series[i] counts the
	// retries made in [i*Window, (i+1)*Window). Its last entry is the last
	// non-empty window; it is empty if nobody retried.
	Series []int64
	// Window is the window width of Series.
	Window time.Duration
	// Events is the number of calls simulated over all runs.
	Events int64
}

// Validate checks cfg for [Herd] with the given contenders, without running
// anything: every parameter in range, a work estimate within [MaxWork]
// (Clients·MaxAttempts·Runs per contender), and a time series of at most
// [MaxSeries] windows for retries that stay within (MaxAttempts-1)·Cap.
func (cfg HerdConfig) Validate(contenders []Contender) error {
	const w = "herd"
	if err := checkFleet(w, contenders, cfg.Clients, cfg.Runs); err != nil {
		return err
	}
	if cfg.Window <= 0 {
		return cfgErr(w, "Window", "%v: want > 0", cfg.Window)
	}
	if err := checkPolicy(w, cfg.Policy, false); err != nil {
		return err
	}
	if err := checkFleetEvents(w, cfg.Clients, int64(cfg.Policy.MaxAttempts), fmt.Sprintf("Policy.MaxAttempts %d", cfg.Policy.MaxAttempts),
		cfg.Runs, len(contenders)); err != nil {
		return err
	}
	span := mulSat(int64(cfg.Policy.MaxAttempts-1), int64(cfg.Policy.Cap))
	if n := seriesLen(time.Duration(span), cfg.Window); n > MaxSeries {
		return limitErr(w, "Window", []string{"Policy.Cap", "Policy.MaxAttempts"}, "%v: retries may last (Policy.MaxAttempts-1)·Policy.Cap = %d × %v, %d windows, above the limit MaxSeries = %d",
			cfg.Window, cfg.Policy.MaxAttempts-1, cfg.Policy.Cap, n, MaxSeries)
	}
	return nil
}

// Herd simulates the thundering herd: every client makes its first call at
// t = 0 and it fails, and the dependency stays down longer than anyone
// retries, so every client uses its whole attempt budget. It reports, per
// contender, the peak share of retries in one window.
//
// It refuses cfg as [HerdConfig.Validate] does. A policy that has not given
// up after Policy.MaxAttempts calls, or that retries past [MaxSeries]
// windows, is reported as an error. Virtual time is exact: it may run past
// the largest time.Duration.
func Herd(cfg HerdConfig, contenders []Contender, seed uint64) ([]HerdResult, error) {
	if err := cfg.Validate(contenders); err != nil {
		return nil, err
	}
	type runOut struct {
		series        []int64 // run 0 only
		retries, peak int64
	}
	type scratch struct{ series []int64 }
	limit := cfg.Policy.MaxAttempts
	p := plan[scratch, runOut]{
		workload: "herd", contenders: contenders, runs: cfg.Runs, seed: seed, policy: cfg.Policy, progress: cfg.Progress,
		coords: func(r int) []uint64 { return []uint64{1, uint64(r)} },
		weight: func(int) int64 { return int64(cfg.Clients) },
		run: func(u *unit, s *scratch) (runOut, error) {
			series := s.series
			var retries int64
			progress := counter{u: u}
			for range cfg.Clients {
				seq := startSequence(u.pol)
				var t clock
				for attempt := 1; ; attempt++ {
					d, ok := next(seq, attempt)
					if !ok {
						break
					}
					if attempt >= limit {
						return runOut{}, fmt.Errorf("did not give up after Policy.MaxAttempts = %d calls", limit)
					}
					if !t.add(d, cfg.Window, MaxSeries) {
						return runOut{}, fmt.Errorf("retries past MaxSeries = %d windows of %v", MaxSeries, cfg.Window)
					}
					series = count(series, t.w)
					retries++
				}
				progress.tick()
			}
			progress.flush()
			o := runOut{retries: retries, peak: peakOf(series)}
			if u.r == 0 {
				o.series = series // handed over; the next run starts a new one
				s.series = nil
			} else {
				s.series = series[:0] // count zeroes what it grows into
			}
			return o, nil
		},
	}
	out, err := p.execute()
	if err != nil {
		return nil, err
	}
	res := make([]HerdResult, len(contenders))
	for ci, c := range contenders {
		h := HerdResult{Policy: c.Name, Window: cfg.Window, Series: out[ci][0].series}
		var share, retries float64
		for _, o := range out[ci] {
			s := 0.0
			if o.retries > 0 {
				s = float64(o.peak) / float64(o.retries)
			}
			h.PeakShares = append(h.PeakShares, s)
			share += s
			retries += float64(o.retries)
			h.Events += o.retries + int64(cfg.Clients)
		}
		h.PeakShare = share / float64(cfg.Runs)
		h.Retries = retries / float64(cfg.Runs)
		res[ci] = h
	}
	return res, nil
}
