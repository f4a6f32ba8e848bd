package sim

import (
	"fmt"
	"time"

	"github.com/backoffgo/backoff"
)

// attemptGuard bounds the calls one simulated client may make against a
// dependency that never recovers, so a policy that never gives up is reported
// instead of looping forever.
const attemptGuard = 1 << 16

// windowGuard bounds the length of a time series, in windows.
const windowGuard = 1 << 24

// HerdResult is the outcome of [Herd] for one policy.
type HerdResult struct {
	// Policy is the contender's name.
	Policy string
	// Retries is the number of retries per run (calls after the first),
	// averaged over runs.
	Retries float64
	// PeakShare is the most retries in any one window divided by all
	// retries, averaged over runs.
	PeakShare float64
	// PeakShares holds each run's peak share, in run order.
	PeakShares []float64
	// Series is the first run's retries per window: Series[i] counts the
	// retries made in [i*Window, (i+1)*Window).
	Series []int
	// Window is the window width of Series.
	Window time.Duration
	// Events is the number of calls simulated over all runs.
	Events int64
}

// Herd simulates the thundering herd: every client makes its first call at
// t = 0 and it fails, and the dependency stays down longer than anyone
// retries, so every client uses its whole attempt budget. It reports, per
// contender, the peak share of retries in one window.
func Herd(cfg HerdConfig, contenders []Contender, seed uint64) ([]HerdResult, error) {
	if cfg.Clients < 1 || cfg.Runs < 1 || cfg.Window <= 0 {
		return nil, fmt.Errorf("sim: herd: need Clients >= 1, Runs >= 1, Window > 0 (got %d, %d, %v)", cfg.Clients, cfg.Runs, cfg.Window)
	}
	if cfg.Params.MaxAttempts == backoff.Unlimited {
		return nil, fmt.Errorf("sim: herd: MaxAttempts must be finite: the dependency never recovers")
	}
	type runOut struct {
		series  []int
		retries int64
		peak    int
	}
	out := make([]runOut, len(contenders)*cfg.Runs)
	err := parallel(len(out), func(i int) error {
		c, r := contenders[i/cfg.Runs], i%cfg.Runs
		_, rng := streams(seed, 1, uint64(r))
		pol, err := build(c, cfg.Params, rng)
		if err != nil {
			return err
		}
		var series []int
		var retries int64
		for range cfg.Clients {
			seq := backoff.StartSequence(pol)
			var t time.Duration
			for attempt := 1; ; attempt++ {
				d, stop := seq.NextDelay(attempt, errFailed)
				if stop != nil {
					break
				}
				if attempt > attemptGuard {
					return fmt.Errorf("sim: herd: policy %q did not give up after %d attempts", c.Name, attemptGuard)
				}
				t += max(d, 0)
				w := int64(t / cfg.Window)
				if w >= windowGuard {
					return fmt.Errorf("sim: herd: policy %q retries past %v, more than %d windows", c.Name, t, windowGuard)
				}
				series = count(series, int(w))
				retries++
			}
		}
		peak := 0
		for _, n := range series {
			peak = max(peak, n)
		}
		out[i] = runOut{series, retries, peak}
		return nil
	})
	if err != nil {
		return nil, err
	}
	res := make([]HerdResult, len(contenders))
	for ci, c := range contenders {
		h := HerdResult{Policy: c.Name, Window: cfg.Window, Series: out[ci*cfg.Runs].series}
		var share, retries float64
		for r := range cfg.Runs {
			o := out[ci*cfg.Runs+r]
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
