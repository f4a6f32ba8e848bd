package sim

import (
	"fmt"
	"slices"
	"time"
)

// RecoveryResult is the outcome of [Recovery] for one policy.
type RecoveryResult struct {
	// Policy is the contender's name.
	Policy string
	// Recover holds one view per RecoveryConfig.Recover time, in order.
	Recover []RecoveryView
	// SteadyPeak is the most calls in one window of the steady span
	// [SteadyFrom, SteadyFrom+SteadySpan) with the dependency still down,
	// averaged over runs.
	SteadyPeak float64
	// SteadyMean is the mean calls per window over the steady span,
	// averaged over runs.
	SteadyMean float64
	// SteadyDispersion is the variance of the calls per window over the
	// steady span divided by their mean, averaged over runs (0 for a run
	// without calls there): about 1 for calls placed independently at
	// random (Poisson), far above 1 for calls that bunch together.
	SteadyDispersion float64
	// CapBy is the latest moment, over every client of every run, at which
	// a client's first delay of at least Cap ended (the call it led to);
	// -1 if some client never had a delay of at least Cap before giving up
	// or before the end of the observation.
	CapBy time.Duration
	// GaveUp is the mean number of clients per run that gave up (ran out
	// of attempts) before the end of the last view: for every policy but
	// no backoff, 0 with the defaults, so that every view sees the whole
	// fleet.
	GaveUp float64
	// Events is the number of calls simulated over all runs.
	Events int64
}

// RecoveryView is the load a recovering dependency meets at one recovery
// time T: every client still retrying makes exactly one more call, its
// first at or after T, which succeeds.
type RecoveryView struct {
	// At is the recovery time T.
	At time.Duration
	// FirstSecond is the most calls in one window within [T, T+1s),
	// averaged over runs.
	FirstSecond float64
	// FirstCap is the most calls in one window within [T, T+Cap], the span
	// in which every remaining client calls once, averaged over runs.
	FirstCap float64
	// Clients is the mean number of clients per run still retrying at T.
	Clients float64
}

// steadyWindows is the number of windows that cover the steady span.
func (cfg RecoveryConfig) steadyWindows() int64 {
	return int64((cfg.SteadySpan-1)/cfg.Window) + 1
}

// Validate checks cfg for [Recovery] with the given contenders, without
// running anything: every parameter in range, a work estimate within [MaxWork]
// (Clients·MaxAttempts·Runs per contender) and at most [MaxSeries] windows
// in the series it holds (the steady span and Cap + 1 s after each recovery
// time).
func (cfg RecoveryConfig) Validate(contenders []Contender) error {
	const w = "recovery"
	if err := checkFleet(w, contenders, cfg.Clients, cfg.Runs); err != nil {
		return err
	}
	if cfg.Window <= 0 {
		return cfgErr(w, "Window", "%v: want > 0", cfg.Window)
	}
	if err := checkPolicy(w, cfg.Policy, false); err != nil {
		return err
	}
	if len(cfg.Recover) == 0 || len(cfg.Recover) > MaxRecover {
		return cfgErr(w, "Recover", "%d times: want 1 to MaxRecover = %d", len(cfg.Recover), MaxRecover)
	}
	for i, t := range cfg.Recover {
		if t <= 0 || (i > 0 && t <= cfg.Recover[i-1]) {
			return cfgErr(w, "Recover", "%v: want > 0 and increasing", t)
		}
	}
	if cfg.SteadyFrom < 0 {
		return cfgErr(w, "SteadyFrom", "%v: want >= 0", cfg.SteadyFrom)
	}
	if cfg.SteadySpan < cfg.Window {
		return cfgErr(w, "SteadySpan", "%v: want at least Window %v", cfg.SteadySpan, cfg.Window)
	}
	if _, ok := addTime(cfg.SteadyFrom, cfg.SteadySpan); !ok {
		return cfgErr(w, "SteadySpan", "SteadyFrom %v + %v passes the largest time.Duration", cfg.SteadyFrom, cfg.SteadySpan)
	}
	last := cfg.Recover[len(cfg.Recover)-1]
	after, ok := addTime(last, max(cfg.Policy.Cap, time.Second))
	if _, ok2 := addTime(after, cfg.Window); !ok || !ok2 {
		return cfgErr(w, "Recover", "%v + Policy.Cap %v passes the largest time.Duration", last, cfg.Policy.Cap)
	}
	windows := mulSat(int64(len(cfg.Recover)), seriesLen(max(cfg.Policy.Cap, time.Second), cfg.Window))
	windows = addSat(windows, seriesLen(cfg.SteadySpan, cfg.Window))
	if windows > MaxSeries {
		return limitErr(w, "Window", []string{"Policy.Cap", "SteadySpan", "Recover"}, "%v: the steady span %v and %d × max(Policy.Cap, 1s) after the recovery times need %d windows, above the limit MaxSeries = %d",
			cfg.Window, cfg.SteadySpan, len(cfg.Recover), windows, MaxSeries)
	}
	return checkFleetEvents(w, cfg.Clients, int64(cfg.Policy.MaxAttempts), fmt.Sprintf("Policy.MaxAttempts %d", cfg.Policy.MaxAttempts),
		cfg.Runs, len(contenders))
}

// Recovery simulates the herd of [Herd] (every client fails at t = 0) with
// the dependency coming back, and reports the load it meets then, in two
// views. The recovery view: for each time T of cfg.Recover, the dependency
// is down before T and up from T on, so each client still retrying makes
// one more call, its first at or after T; the peak calls per window in
// [T, T+1s) and in [T, T+Cap]. The steady view: the dependency stays down,
// and the peak and mean calls per window over [SteadyFrom,
// SteadyFrom+SteadySpan), where every client has long reached the cap.
// Each client's calls are those of one retry sequence of its policy, so the
// same trajectory gives every view: before T the dependency is down in all
// of them.
//
// A client stops after Policy.MaxAttempts calls, so a policy that gives up
// early (no backoff makes all its calls at t = 0) meets no recovery at all;
// GaveUp counts those clients. A client's trajectory is followed only up to
// the end of the last view.
//
// It refuses cfg as [RecoveryConfig.Validate] does. A policy that has not
// given up after Policy.MaxAttempts calls is reported as an error.
func Recovery(cfg RecoveryConfig, contenders []Contender, seed uint64) ([]RecoveryResult, error) {
	if err := cfg.Validate(contenders); err != nil {
		return nil, err
	}
	type runOut struct {
		first, capSpan []int64 // per recovery time: peak windows
		clients        []int64 // per recovery time: clients still retrying
		steadyPeak     int64
		steadyCalls    int64
		dispersion     float64
		capBy          time.Duration // the latest client's first call after a delay >= Cap
		never          bool          // some client had no delay >= Cap
		gaveUp         int64
		events         int64
	}
	type scratch struct{ steady, after []int64 }
	limit := cfg.Policy.MaxAttempts
	nT := len(cfg.Recover)
	afterSpan := max(cfg.Policy.Cap, time.Second)
	afterLen := int(seriesLen(afterSpan, cfg.Window))
	steadyEnd := cfg.SteadyFrom + cfg.SteadySpan
	end := max(steadyEnd, cfg.Recover[nT-1]+afterSpan+cfg.Window)
	p := plan[scratch, runOut]{
		workload: "recovery", contenders: contenders, runs: cfg.Runs, seed: seed, policy: cfg.Policy, progress: cfg.Progress,
		coords: func(r int) []uint64 { return []uint64{6, uint64(r)} },
		weight: func(int) int64 { return int64(cfg.Clients) },
		run: func(u *unit, s *scratch) (runOut, error) {
			steadyLen := int(cfg.steadyWindows())
			s.steady = slices.Grow(s.steady[:0], steadyLen)[:steadyLen]
			clear(s.steady)
			s.after = slices.Grow(s.after[:0], nT*afterLen)[:nT*afterLen]
			clear(s.after)
			o := runOut{clients: make([]int64, nT)}
			progress := counter{u: u}
			for range cfg.Clients {
				seq := startSequence(u.pol)
				var t time.Duration // the time of call number attempt
				k := 0              // the first recovery time not yet passed
				capAt := time.Duration(-1)
				for attempt := 1; ; attempt++ {
					o.events++
					for k < nT && t >= cfg.Recover[k] {
						// This is the client's first call at or after
						// Recover[k]; it succeeds there.
						o.clients[k]++
						if i := (t - cfg.Recover[k]) / cfg.Window; i < time.Duration(afterLen) {
							s.after[k*afterLen+int(i)]++
						}
						k++
					}
					if t >= cfg.SteadyFrom && t < steadyEnd {
						s.steady[(t-cfg.SteadyFrom)/cfg.Window]++
						o.steadyCalls++
					}
					if t >= end {
						break
					}
					d, ok := next(seq, attempt)
					if !ok {
						o.gaveUp++ // before the end of the observation
						break
					}
					if attempt >= limit {
						return o, fmt.Errorf("did not give up after Policy.MaxAttempts = %d calls", limit)
					}
					if d >= end-t { // past the end of every view
						t = end
					} else {
						t += d
					}
					if d >= cfg.Policy.Cap && capAt < 0 {
						capAt = t
					}
				}
				if capAt < 0 {
					o.never = true
				}
				o.capBy = max(o.capBy, capAt)
				progress.tick()
			}
			progress.flush()
			o.steadyPeak = peakOf(s.steady)
			if o.steadyCalls > 0 {
				m := float64(o.steadyCalls) / float64(len(s.steady))
				var ss float64
				for _, n := range s.steady {
					ss += (float64(n) - m) * (float64(n) - m)
				}
				o.dispersion = ss / float64(len(s.steady)) / m
			}
			o.first, o.capSpan = make([]int64, nT), make([]int64, nT)
			perSecond := int((time.Second + cfg.Window - 1) / cfg.Window) // windows starting in [T, T+1s)
			for i := range nT {
				a := s.after[i*afterLen : (i+1)*afterLen]
				o.first[i] = peakOf(a[:min(perSecond, len(a))])
				o.capSpan[i] = peakOf(a[:seriesLen(cfg.Policy.Cap, cfg.Window)])
			}
			return o, nil
		},
	}
	out, err := p.execute()
	if err != nil {
		return nil, err
	}
	runs := float64(cfg.Runs)
	windows := float64(cfg.steadyWindows())
	res := make([]RecoveryResult, len(contenders))
	for ci, c := range contenders {
		r := RecoveryResult{Policy: c.Name, Recover: make([]RecoveryView, nT)}
		for i := range nT {
			r.Recover[i].At = cfg.Recover[i]
		}
		never := false
		for _, o := range out[ci] {
			for i := range nT {
				r.Recover[i].FirstSecond += float64(o.first[i]) / runs
				r.Recover[i].FirstCap += float64(o.capSpan[i]) / runs
				r.Recover[i].Clients += float64(o.clients[i]) / runs
			}
			r.SteadyPeak += float64(o.steadyPeak) / runs
			r.SteadyMean += float64(o.steadyCalls) / windows / runs
			r.SteadyDispersion += o.dispersion / runs
			r.GaveUp += float64(o.gaveUp) / runs
			r.Events += o.events
			r.CapBy = max(r.CapBy, o.capBy)
			never = never || o.never
		}
		if never {
			r.CapBy = -1
		}
		res[ci] = r
	}
	return res, nil
}

// MaxRecover bounds RecoveryConfig.Recover, the number of recovery times.
const MaxRecover = 100
