package sim

import (
	"time"

	"github.com/backoffgo/backoff"
)

// This file holds every default parameter of the canonical workloads.

// HerdConfig parameterises [Herd].
type HerdConfig struct {
	// Clients is the fleet size. Each client's first call fails at t = 0.
	Clients int
	// Params are the policy parameters; MaxAttempts bounds each client's
	// calls (8 attempts: 7 retries).
	Params Params
	// Window is the width of a time window; retries in the same window are
	// simultaneous.
	Window time.Duration
	// Runs is the number of independent fleets simulated.
	Runs int
}

// DefaultHerd returns the canonical herd: 1,000 clients, base 100 ms, cap
// 10 s, 8 attempts, 10 ms windows, 10 runs.
func DefaultHerd() HerdConfig {
	return HerdConfig{
		Clients: 1000,
		Params:  Params{Base: 100 * time.Millisecond, Cap: 10 * time.Second, MaxAttempts: 8},
		Window:  10 * time.Millisecond,
		Runs:    10,
	}
}

// OutageConfig parameterises [Outage].
type OutageConfig struct {
	// Clients is the fleet size. Each makes its first call at a uniformly
	// random moment during the outage.
	Clients int
	// Outage is how long the dependency is down, starting at t = 0. A call
	// succeeds if and only if it is made at or after Outage.
	Outage time.Duration
	// Params are the policy parameters.
	Params Params
	// Runs is the number of independent fleets simulated.
	Runs int
}

// DefaultOutage returns the canonical outage: 30 s, 10,000 clients, base
// 100 ms, cap 10 s, 8 attempts, 10 runs.
func DefaultOutage() OutageConfig {
	return OutageConfig{
		Clients: 10000,
		Outage:  30 * time.Second,
		Params:  Params{Base: 100 * time.Millisecond, Cap: 10 * time.Second, MaxAttempts: 8},
		Runs:    10,
	}
}

// ContentionConfig parameterises [Contention].
type ContentionConfig struct {
	// Clients lists the fleet sizes to sweep.
	Clients []int
	// Runs is the number of independent runs averaged per fleet size.
	Runs int
	// NetMean and NetSD define every one-way message delay as |X| with
	// X ~ Normal(NetMean, NetSD), drawn per message.
	NetMean, NetSD time.Duration
	// Params are the policy parameters. MaxAttempts is normally
	// backoff.Unlimited: each client retries until its write succeeds.
	Params Params
}

// DefaultContention returns Brooker's sweep: N = 10, 20, ..., 200 clients,
// 100 runs each, network delay |Normal(10 ms, 2 ms)|, first retry ceiling
// 10 ms, cap 2 s, decorrelated jitter from 5 ms, no attempt limit.
func DefaultContention() ContentionConfig {
	return ContentionConfig{
		Clients: Sweep(10, 200, 10),
		Runs:    100,
		NetMean: 10 * time.Millisecond,
		NetSD:   2 * time.Millisecond,
		Params: Params{
			Base:             10 * time.Millisecond,
			Cap:              2 * time.Second,
			MaxAttempts:      backoff.Unlimited,
			DecorrelatedBase: 5 * time.Millisecond,
		},
	}
}

// AmplificationConfig parameterises [Amplification].
type AmplificationConfig struct {
	// Layers is the depth of the call stack above the failing dependency.
	Layers int
	// Params are the policy parameters of a layer that retries;
	// MaxAttempts is that layer's attempts per call (3: "three retries" in
	// the source's counting of 3, 9, 27, ... 243).
	Params Params
	// CallLatency is how long a call to the dependency takes to fail.
	CallLatency time.Duration
	// Requests is the number of top-level requests simulated.
	Requests int
	// RetryLayer is the one layer (1 = top) that retries in the single-layer
	// variant; every other layer makes one attempt.
	RetryLayer int
}

// DefaultAmplification returns the five-deep stack: 5 layers, 3 attempts
// each, base 100 ms, cap 10 s, the dependency fails after 10 ms, 100
// requests, single-layer retries at the top.
func DefaultAmplification() AmplificationConfig {
	return AmplificationConfig{
		Layers:      5,
		Params:      Params{Base: 100 * time.Millisecond, Cap: 10 * time.Second, MaxAttempts: 3},
		CallLatency: 10 * time.Millisecond,
		Requests:    100,
		RetryLayer:  1,
	}
}

// PeriodicConfig parameterises [Periodic].
type PeriodicConfig struct {
	// Jobs is the number of scheduled jobs, each making one API call per
	// execution.
	Jobs int
	// Interval is the schedule period; every job is due at each multiple of
	// Interval (their clocks agree).
	Interval time.Duration
	// Horizon is how long the schedule is simulated.
	Horizon time.Duration
	// Bucket is the width over which load is counted (per second).
	Bucket time.Duration
	// Runs is the number of independent runs averaged.
	Runs int
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

// Sweep returns from, from+step, ..., up to and including to.
func Sweep(from, to, step int) []int {
	var s []int
	for n := from; n <= to && step > 0; n += step {
		s = append(s, n)
	}
	return s
}
