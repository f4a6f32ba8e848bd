package sim

import (
	"fmt"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/retryshare"
)

// This file holds every default parameter of the canonical workloads.

// HerdConfig parameterises [Herd].
type HerdConfig struct {
	// Clients is the fleet size, at least 1. Each client's first call fails
	// at t = 0.
	Clients int
	// Policy is handed to every contender's New. MaxAttempts bounds each
	// client's calls (8 attempts: 7 retries) and must be finite.
	Policy backoff.Config
	// Window is the width of a time window, > 0; retries in the same window
	// are simultaneous.
	Window time.Duration
	// Runs is the number of independent fleets simulated, at least 1.
	Runs int
	// Progress, if not nil, receives reports while the workload runs.
	Progress func(Progress)
}

// DefaultHerd returns the canonical herd: 1,000 clients, base 100 ms, cap
// 10 s, 8 attempts, 10 ms windows, 10 runs.
func DefaultHerd() HerdConfig {
	return HerdConfig{
		Clients: 1000,
		Policy:  backoff.Config{Base: 100 * time.Millisecond, Cap: 10 * time.Second, MaxAttempts: 8},
		Window:  10 * time.Millisecond,
		Runs:    10,
	}
}

// OutageConfig parameterises [Outage].
type OutageConfig struct {
	// Clients is the fleet size, at least 1. Each makes its first call at
	// a uniformly random moment during the outage.
	Clients int
	// Outage is how long the dependency is down, starting at t = 0, > 0. A
	// call succeeds if and only if it is made at or after Outage.
	Outage time.Duration
	// Policy is handed to every contender's New. MaxAttempts may be
	// backoff.Unlimited; a client then makes at most [MaxClientAttempts]
	// calls.
	Policy backoff.Config
	// Runs is the number of independent fleets simulated, at least 1.
	Runs int
	// Progress, if not nil, receives reports while the workload runs.
	Progress func(Progress)
}

// DefaultOutage returns the canonical outage: 30 s, 10,000 clients, base
// 100 ms, cap 10 s, 8 attempts, 10 runs.
func DefaultOutage() OutageConfig {
	return OutageConfig{
		Clients: 10000,
		Outage:  30 * time.Second,
		Policy:  backoff.Config{Base: 100 * time.Millisecond, Cap: 10 * time.Second, MaxAttempts: 8},
		Runs:    10,
	}
}

// ContentionConfig parameterises [Contention].
type ContentionConfig struct {
	// Clients lists the fleet sizes to sweep, each at least 1.
	Clients []int
	// Runs is the number of independent runs averaged per fleet size, at
	// least 1.
	Runs int
	// NetMean and NetSD, both >= 0, define every one-way message delay as
	// |X| with X ~ Normal(NetMean, NetSD), drawn per message.
	NetMean, NetSD time.Duration
	// Policy is handed to every contender's New. MaxAttempts is normally
	// backoff.Unlimited: each client retries until its write succeeds.
	Policy backoff.Config
	// Progress, if not nil, receives reports while the workload runs.
	Progress func(Progress)
}

// DefaultContention returns Brooker's sweep: N = 10, 20, ..., 200 clients,
// 100 runs each, network delay |Normal(10 ms, 2 ms)|, first retry ceiling
// 10 ms, cap 2 s, no attempt limit. Brooker starts decorrelated jitter at
// half the base, 5 ms: see [ContentionConfig.Contenders].
func DefaultContention() ContentionConfig {
	return ContentionConfig{
		Clients: []int{10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120, 130, 140, 150, 160, 170, 180, 190, 200},
		Runs:    100,
		NetMean: 10 * time.Millisecond,
		NetSD:   2 * time.Millisecond,
		Policy:  backoff.Config{Base: 10 * time.Millisecond, Cap: 2 * time.Second, MaxAttempts: backoff.Unlimited},
	}
}

// DecorrelatedBase is where cfg's decorrelated jitter starts: half the
// base, as Brooker's does (at least 1 ns).
func (cfg ContentionConfig) DecorrelatedBase() time.Duration {
	return max(cfg.Policy.Base/2, 1)
}

// Contenders returns cs as cfg runs them: decorrelated jitter started from
// [ContentionConfig.DecorrelatedBase], the others as they are.
func (cfg ContentionConfig) Contenders(cs []Contender) []Contender {
	out := make([]Contender, len(cs))
	for i, c := range cs {
		if c.Name == "decorrelated" {
			c = DecorrelatedFrom(cfg.DecorrelatedBase())
		}
		out[i] = c
	}
	return out
}

// AmplificationConfig parameterises [Amplification].
type AmplificationConfig struct {
	// Layers is the depth of the call stack above the failing dependency,
	// from 1 to [MaxLayers].
	Layers int
	// Policy is handed to every contender's New, for a layer that retries;
	// MaxAttempts, which must be finite, is that layer's attempts per call
	// (3: "three retries" in the source's counting of 3, 9, 27, ... 243).
	Policy backoff.Config
	// CallLatency, >= 0, is how long a call to the dependency takes to fail.
	CallLatency time.Duration
	// Requests is the number of top-level requests simulated, at least 1.
	Requests int
	// RetryLayer is the one layer (1 = top, up to Layers) that retries in
	// the single-layer variant; every other layer makes one attempt.
	RetryLayer int
	// Progress, if not nil, receives reports while the workload runs.
	Progress func(Progress)
}

// DefaultAmplification returns the five-deep stack: 5 layers, 3 attempts
// each, base 100 ms, cap 10 s, the dependency fails after 10 ms, 100
// requests, single-layer retries at the top.
func DefaultAmplification() AmplificationConfig {
	return AmplificationConfig{
		Layers:      5,
		Policy:      backoff.Config{Base: 100 * time.Millisecond, Cap: 10 * time.Second, MaxAttempts: 3},
		CallLatency: 10 * time.Millisecond,
		Requests:    100,
		RetryLayer:  1,
	}
}

// PeriodicConfig parameterises [Periodic].
type PeriodicConfig struct {
	// Jobs is the number of scheduled jobs, at least 1, each making one API
	// call per execution.
	Jobs int
	// Interval, > 0, is the schedule period; every job is due at each
	// multiple of Interval (their clocks agree).
	Interval time.Duration
	// Horizon, at least Interval, is how long the schedule is simulated.
	Horizon time.Duration
	// Bucket, > 0, is the width over which load is counted (per second).
	Bucket time.Duration
	// Runs is the number of independent runs averaged, at least 1.
	Runs int
	// Progress, if not nil, receives reports while the workload runs.
	Progress func(Progress)
}

// DefaultPeriodic returns the cron fleet: 1,000 jobs every 5 minutes for
// one hour, load counted per second, 10 runs.
func DefaultPeriodic() PeriodicConfig {
	return PeriodicConfig{
		Jobs:     1000,
		Interval: 5 * time.Minute,
		Horizon:  time.Hour,
		Bucket:   time.Second,
		Runs:     10,
	}
}

// Contenders returns cs as [Periodic] compares them: after its two offset
// sources, [NoOffset] and [Ticker].
func (PeriodicConfig) Contenders(cs []Contender) []Contender {
	return append(built(offsetSources), cs...)
}

// Sweep returns from, from+step, ..., up to and including to. It returns
// an error if step < 1, to < from, or the sweep would hold more than
// [MaxSweep] sizes.
func Sweep(from, to, step int) ([]int, error) {
	if step < 1 {
		return nil, fmt.Errorf("sim: sweep step %d: want at least 1", step)
	}
	if to < from {
		return nil, fmt.Errorf("sim: sweep to %d is below from %d", to, from)
	}
	n := (uint64(to)-uint64(from))/uint64(step) + 1 // to - from fits in a uint64
	if n > MaxSweep {
		return nil, fmt.Errorf("sim: sweep %d:%d:%d has %d sizes, more than MaxSweep = %d", from, to, step, n, MaxSweep)
	}
	s := make([]int, n)
	for i := range s {
		s[i] = from + i*step // at most to: no overflow
	}
	return s, nil
}

// RecoveryConfig parameterises [Recovery].
type RecoveryConfig struct {
	// Clients is the fleet size, at least 1. Each client's first call fails
	// at t = 0.
	Clients int
	// Policy is handed to every contender's New. MaxAttempts must be finite
	// and is normally large enough that no client gives up before the end
	// of the last view (no backoff gives up at t = 0 whatever it is).
	Policy backoff.Config
	// Window, > 0, is the width of a time window over which calls count as
	// simultaneous.
	Window time.Duration
	// Recover lists the recovery times T, > 0 and increasing, at most
	// [MaxRecover]: each is one scenario in which the dependency is down
	// before T and up from T on.
	Recover []time.Duration
	// SteadyFrom, >= 0, and SteadySpan, at least Window, give the steady
	// span, over which the dependency is still down and every client has
	// long reached the cap.
	SteadyFrom, SteadySpan time.Duration
	// Runs is the number of independent fleets simulated, at least 1.
	Runs int
	// Progress, if not nil, receives reports while the workload runs.
	Progress func(Progress)
}

// DefaultRecovery returns the canonical recovery: the herd's fleet and
// policy (1,000 clients, base 100 ms, cap 10 s, 10 ms windows, 10 runs) with
// 1,000 attempts, enough that no jittered client gives up within the 600 s
// observed; the dependency comes back at 30 s (every client's ceiling has
// reached the cap by 14.1 s, but for decorrelated jitter, whose delay
// wanders) or at 300 s; the steady span is [300 s, 600 s).
func DefaultRecovery() RecoveryConfig {
	h := DefaultHerd()
	h.Policy.MaxAttempts = 1000
	return RecoveryConfig{
		Clients:    h.Clients,
		Policy:     h.Policy,
		Window:     h.Window,
		Recover:    []time.Duration{30 * time.Second, 300 * time.Second},
		SteadyFrom: 300 * time.Second,
		SteadySpan: 300 * time.Second,
		Runs:       h.Runs,
	}
}

// BudgetAmplificationConfig parameterises [BudgetAmplification].
type BudgetAmplificationConfig struct {
	// Layers is the depth of the call stack above the failing dependency,
	// from 1 to [MaxLayers].
	Layers int
	// Policy is handed to every contender's New; MaxAttempts, finite, is
	// each layer's attempts per call. Its delays play no part (see
	// BudgetAmplification).
	Policy backoff.Config
	// Budget configures every budget (zero fields take the library's
	// defaults); Now must be nil: the simulator sets the clock.
	Budget backoff.BudgetConfig
	// Rates lists the top-level request rates simulated, in requests per
	// second, each in (0, [MaxRate]].
	Rates []float64
	// Warmup, >= 0, is how long requests run before the load is measured,
	// and Span, > 0, how long it is measured; Warmup + Span is at most
	// 1e6 s.
	Warmup, Span time.Duration
	// Progress, if not nil, receives reports while the workload runs.
	Progress func(Progress)
}

// DefaultBudgetAmplification returns the budgeted five-deep stack: the
// stack of [DefaultAmplification] (5 layers, 3 attempts) with the library's
// default budget (BudgetConfig{}: Ratio 0.1, Reserve 10 retries/s, Burst
// 100), at 1, 10, 100, 1,000 and 10,000 requests per second, measured over
// 60 s after a 20 s warm-up (twice Burst/Reserve, so that the initial store
// is spent at every rate).
func DefaultBudgetAmplification() BudgetAmplificationConfig {
	a := DefaultAmplification()
	return BudgetAmplificationConfig{
		Layers: a.Layers,
		Policy: a.Policy,
		Rates:  []float64{1, 10, 100, 1000, 10000},
		Warmup: 20 * time.Second,
		Span:   60 * time.Second,
	}
}

// OutageBudgetConfig parameterises [OutageBudget]: the outage of
// [OutageConfig] with one retry budget shared by the fleet.
type OutageBudgetConfig struct {
	OutageConfig
	// Budget configures the fleet's budget (zero fields take the
	// library's defaults); Now must be nil: the simulator sets the clock.
	Budget backoff.BudgetConfig
}

// DefaultOutageBudget returns [DefaultOutage] with the library's default
// budget, BudgetConfig{}, shared by its 10,000 clients.
func DefaultOutageBudget() OutageBudgetConfig {
	return OutageBudgetConfig{OutageConfig: DefaultOutage()}
}

// ServerShareConfig parameterises [ServerShare].
type ServerShareConfig struct {
	// Layers is the depth of each chain of services above the dependency,
	// from 1 to [MaxLayers].
	Layers int
	// Policy is handed to every contender's New; MaxAttempts, finite, is
	// each service's attempts per call. Its delays play no part.
	Policy backoff.Config
	// Budget configures every service's budget and Share every RetryShare
	// (zero fields take the library's defaults); their Now must be nil:
	// the simulator sets the clock.
	Budget backoff.BudgetConfig
	Share  retryshare.Config
	// Scenarios lists the fleets simulated, each Clients chains (1 to
	// MaxServices-1 services in all) at Rate requests per second each, in
	// (0, [MaxRate]]; at most [MaxSweep] of them.
	Scenarios []ShareScenario
	// HealthyRequests, >= 0 (rounded up to a whole number per client), is
	// the number of requests of the healthy span, during which the
	// dependency fails each call with probability Background, in [0, 1).
	HealthyRequests int
	Background      float64
	// Outage is how long the dependency then fails every call, from twice
	// Share.Window to 1e6 s.
	Outage time.Duration
	// Progress, if not nil, receives reports while the workload runs.
	Progress func(Progress)
}

// DefaultServerShare returns the chains of [DefaultBudgetAmplification]
// (5 layers, 3 attempts, the default budget) with the default RetryShare
// (retryshare.Config{}) at every service: one client at 1, 100 and 10,000
// requests per second, and 10,000 clients at 1 per second each; 100,000
// requests at a 1 % background failure rate, then a 30 s outage.
func DefaultServerShare() ServerShareConfig {
	b := DefaultBudgetAmplification()
	return ServerShareConfig{
		Layers:          b.Layers,
		Policy:          b.Policy,
		Scenarios:       []ShareScenario{{1, 1}, {1, 100}, {1, 10000}, {10000, 1}},
		HealthyRequests: 100_000,
		Background:      0.01,
		Outage:          30 * time.Second,
	}
}

// ShareFleetConfig parameterises [ShareFleet].
type ShareFleetConfig struct {
	// Policy is handed to every contender's New: each request's retry
	// loop, MaxAttempts (finite) calls at most.
	Policy backoff.Config
	// Share configures every replica's Share (zero fields take the
	// library's defaults; a row's Threshold replaces its own); Now must be
	// nil: the simulator sets the clock.
	Share retryshare.Config
	// NetMin and NetMax bound the one-way network delay, drawn uniformly
	// per message; ServiceMin and ServiceMax a replica's time to answer,
	// drawn per call. Each in [0, 1m], min <= max.
	NetMin, NetMax         time.Duration
	ServiceMin, ServiceMax time.Duration
	// Fixed sends a row's requests at fixed intervals instead of Poisson
	// arrivals.
	Fixed bool
	// Memory, when its Span is positive, makes every client remember the
	// service's "don't retry" (see [ClientMemory]).
	Memory ClientMemory
	// Warmup, from 0 to 1e6 s, is how long every row runs before its
	// outage or its measured span.
	Warmup time.Duration
	// Outage is how long an outage row's measured route fails every
	// answer, from twice Share.Window to 1e6 s.
	Outage time.Duration
	// Rows lists the scenarios, 1 to [MaxSweep] of them.
	Rows []FleetRow
	// Progress, if not nil, receives reports while the workload runs.
	Progress func(Progress)
}

// ClientMemory is what a client remembers of its target's "don't retry":
// after an answer that says so, from any replica of the service (the
// balancer's address is the target), the client does not retry a failing
// answer from the service for Span, and with ForgetOnSuccess it forgets
// at its first success from the service before then. Zero Span: no memory,
// every failing answer is decided by its own "don't retry" alone.
type ClientMemory struct {
	Span            time.Duration
	ForgetOnSuccess bool
}

// DefaultShareFleet returns the scenarios of issue 33, each row a fleet of
// clients over replicas that each hold a default Share
// (retryshare.Config{}): full jitter's parameters of 100 ms base, 10 s
// cap, 3 attempts; network delays of 1 to 9 ms each way and service times
// of 2 to 18 ms; Poisson arrivals; a 10 s warm-up (one Share window), then
// a 60 s outage or the measured span.
//
//   - herd: 1,000 clients on one replica in synchronized bursts every
//     10 s, 5 s and 1 s, and steady (1 request/s each, Poisson);
//   - replicas: 10 at 10 requests/s each, 1,000 at 10/s, 200 at 0.5/s and
//     5,000 at 0.2/s (issue 33's 50,000 scaled down: the load per request
//     depends on each replica's rate, not on their number, and 50,000
//     Shares with every caller slot in use take about 1 GB), 10,000
//     clients, random then round-robin balancing;
//   - routes: a failing route at 100/s beside a healthy one at 10,000/s on
//     one replica, counted by one Share, then by a Share per route;
//   - failures: 5 % and 20 % random failures at 0.1, 1, 100 and 10,000
//     requests/s (1 client up to 1/s, 100 at 100/s, 10,000 at 10,000/s),
//     100,000 requests measured, with and without the Shares;
//   - threshold: Threshold 0.05, 0.1 and 0.2 against 5, 10 and 20 %
//     failures at 100/s (100 clients), 50,000 requests;
//   - liar: 100 honest clients at 100/s and 5 % failures beside one caller
//     that sends 7, 12 or 35 % of the requests, each saying it is a retry;
//     100,000 requests.
func DefaultShareFleet() ShareFleetConfig {
	var rows []FleetRow
	for _, b := range []time.Duration{10 * time.Second, 5 * time.Second, time.Second} {
		rows = append(rows, FleetRow{Group: "herd", Clients: 1000, Replicas: 1, Burst: b, Outage: true})
	}
	rows = append(rows, FleetRow{Group: "herd", Clients: 1000, Replicas: 1, Rate: 1000, Outage: true})
	for _, rr := range []bool{false, true} {
		for _, r := range []struct {
			replicas int
			rate     float64
		}{{10, 10}, {1000, 10}, {200, 0.5}, {5000, 0.2}} {
			rows = append(rows, FleetRow{Group: "replicas", Clients: 10_000, Replicas: r.replicas, RoundRobin: rr, Rate: r.rate, Outage: true})
		}
	}
	for _, per := range []bool{false, true} {
		rows = append(rows, FleetRow{Group: "routes", Clients: 1000, Replicas: 1, Rate: 100, Healthy: 10_000, PerRoute: per, Outage: true})
	}
	for _, fail := range []float64{0.05, 0.2} {
		for _, r := range []struct {
			rate    float64
			clients int
		}{{0.1, 1}, {1, 1}, {100, 100}, {10_000, 10_000}} {
			rows = append(rows, FleetRow{Group: "failures", Clients: r.clients, Replicas: 1, Rate: r.rate, Fail: fail, Requests: 100_000})
		}
	}
	for _, th := range []float64{0.05, 0.1, 0.2} {
		for _, fail := range []float64{0.05, 0.1, 0.2} {
			rows = append(rows, FleetRow{Group: "threshold", Clients: 100, Replicas: 1, Rate: 100, Fail: fail, Threshold: th, Requests: 50_000})
		}
	}
	for _, liar := range []float64{0.07, 0.12, 0.35} {
		rows = append(rows, FleetRow{Group: "liar", Clients: 100, Replicas: 1, Rate: 100, Fail: 0.05, Liar: liar, Requests: 100_000})
	}
	return ShareFleetConfig{
		Policy:     backoff.Config{Base: 100 * time.Millisecond, Cap: 10 * time.Second, MaxAttempts: 3},
		NetMin:     time.Millisecond,
		NetMax:     9 * time.Millisecond,
		ServiceMin: 2 * time.Millisecond,
		ServiceMax: 18 * time.Millisecond,
		Warmup:     10 * time.Second,
		Outage:     60 * time.Second,
		Rows:       rows,
	}
}
