package sim

import (
	"fmt"
	"math"
	"time"

	"github.com/backoffgo/backoff"
)

// The limits every workload checks before it starts. A configuration whose
// estimate exceeds one of them is refused with a [*ConfigError]; none of
// them depends on the machine, so a configuration accepted here is accepted
// everywhere.
const (
	// MaxWork bounds the work of one call of a workload function: its
	// estimate of the events (calls or messages) it may simulate, over all
	// contenders and runs, times what one event costs (see [EventCost]),
	// must not exceed it. It is about a minute of one core of the machine
	// the costs were measured on; the estimates are upper bounds that hold
	// for any policy, because the simulator also stops a policy that
	// retries past its MaxAttempts (see each workload).
	MaxWork = time.Minute

	// MaxSeries bounds the length, in windows or buckets, of one time
	// series held in memory by Herd or Periodic (8 bytes per entry).
	MaxSeries = 1 << 22

	// MaxLayers bounds AmplificationConfig.Layers, the depth of the
	// simulated call stack (which is also the depth of the simulator's
	// recursion).
	MaxLayers = 10_000

	// MaxClientAttempts bounds the calls one client of Outage may make when
	// MaxAttempts is backoff.Unlimited; a policy that has not reached the
	// end of the outage by then is reported as an error.
	MaxClientAttempts = 1 << 16

	// MaxSweep bounds the number of fleet sizes [Sweep] returns: more
	// distinct sizes than this could never pass contention's work limit.
	MaxSweep = 10_000
)

// A ConfigError reports a workload configuration refused before anything
// runs: a parameter out of range, or a work or memory estimate above its
// limit.
type ConfigError struct {
	// Workload is the workload's name, such as "herd".
	Workload string
	// Param names the parameter at fault as a field path of the
	// configuration ("Clients", "Policy.MaxAttempts", "Window"), or
	// "contenders".
	Param string
	// Reason says what is wrong, with the value and the limit.
	Reason string
	// Also names the other parameters that a refused work or memory
	// estimate is the product of, in the same form as Param: changing any
	// of them can bring the estimate within its limit. It is empty for a
	// parameter out of range.
	Also []string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("sim: %s: %s: %s", e.Workload, e.Param, e.Reason)
}

func cfgErr(workload, param, format string, args ...any) error {
	return &ConfigError{Workload: workload, Param: param, Reason: fmt.Sprintf(format, args...)}
}

// limitErr refuses an estimate above its limit: param and also are the
// parameters it depends on.
func limitErr(workload, param string, also []string, format string, args ...any) error {
	return &ConfigError{Workload: workload, Param: param, Reason: fmt.Sprintf(format, args...), Also: also}
}

// checkPositive refuses v < 1 for the named int parameter.
func checkPositive(workload, param string, v int) error {
	if v < 1 {
		return cfgErr(workload, param, "%d: want at least 1", v)
	}
	return nil
}

// checkPolicy checks the policy parameters shared by every contender:
// Base > 0, Cap >= Base, and MaxAttempts >= 1, or backoff.Unlimited where
// the workload allows it.
func checkPolicy(workload string, c backoff.Config, unlimitedOK bool) error {
	if c.Base <= 0 {
		return cfgErr(workload, "Policy.Base", "%v: want > 0", c.Base)
	}
	if c.Cap < c.Base {
		return cfgErr(workload, "Policy.Cap", "%v is below Policy.Base %v", c.Cap, c.Base)
	}
	if c.MaxAttempts == backoff.Unlimited && !unlimitedOK {
		return cfgErr(workload, "Policy.MaxAttempts", "backoff.Unlimited: want a finite budget, the dependency never recovers")
	}
	if c.MaxAttempts < 1 && c.MaxAttempts != backoff.Unlimited {
		return cfgErr(workload, "Policy.MaxAttempts", "%d: want at least 1, or backoff.Unlimited", c.MaxAttempts)
	}
	return nil
}

// checkFleet checks what the fleet workloads (herd, outage, recovery)
// share: their contenders, Clients and Runs.
func checkFleet(workload string, cs []Contender, clients, runs int) error {
	if err := checkContenders(workload, cs); err != nil {
		return err
	}
	if err := checkPositive(workload, "Clients", clients); err != nil {
		return err
	}
	return checkPositive(workload, "Runs", runs)
}

// checkFleetEvents refuses a fleet workload whose Clients·calls·Runs calls
// per contender cost more than MaxWork; calls describes a client's calls
// for the message.
func checkFleetEvents(workload string, clients int, perClient int64, calls string, runs, contenders int) error {
	events := mulSat(mulSat(mulSat(int64(clients), perClient), int64(runs)), int64(contenders))
	return checkEvents(workload, "Clients", []string{"Policy.MaxAttempts", "Runs", "contenders"}, events, EventCost[workload], fmt.Sprintf("Clients %d × %s × Runs %d × %d policies",
		clients, calls, runs, contenders))
}

// checkContenders refuses an empty list and a contender without a
// constructor.
func checkContenders(workload string, cs []Contender) error {
	if len(cs) == 0 {
		return cfgErr(workload, "contenders", "none given")
	}
	for _, c := range cs {
		if c.New == nil {
			return cfgErr(workload, "contenders", "policy %q has no constructor", c.Name)
		}
	}
	return nil
}

// EventCost is what one event of each workload's estimate costs, in
// nanoseconds of one core of the machine the simulator's limits were
// measured on (a 2-core AMD EPYC virtual machine, Go 1.26; see
// docs/simulations.md for the measurements and the command). Each is the
// costliest of the configurations measured, per event of the estimate
// (contention's estimate bounds a run of no backoff, the costliest
// policy, within about six times its events). The outage with a budget
// costs this much per event and per level of its event heap, log2 of its
// clients. Amplification's simulated stacks cost "amplification" per
// call, the library's own nested Do calls "library" per call. Server-share
// runs the library's Retrier, Budget and RetryShare for every call, with a
// context and a closure each (240 ns an event at its defaults, 460 ns at
// 52,428 chains of five services, measured with the machine loaded by
// other work: 600 ns leaves room). Share-fleet runs a Share's Record and
// Refuse and a policy's NextDelay per call, with an event heap (170 ns an
// event at its defaults, 490 ns at 5,800 replicas at 0.2 requests/s, the
// most MaxFleetMemory allows, every Share out of cache: 600 ns). Overload
// runs a policy's NextDelay and a guard per attempt, with an event heap
// (490 ns an event at its defaults, measured with the machine loaded by
// other work: 600 ns; its estimate counts every attempt of every request,
// several times what a run makes).
var EventCost = map[string]float64{
	"herd":                 75,
	"outage":               70,
	"contention":           40,
	"amplification":        120,
	"library":              300,
	"periodic":             170,
	"recovery":             45,
	"budget-amplification": 130,
	"outage-budget":        80,
	"server-share":         600,
	"share-fleet":          600,
	"overload":             600,
	"hedge":                2000,
}

// maxEvents is the largest estimate of events that costs no more than
// MaxWork at ns per event.
func maxEvents(ns float64) int64 { return int64(float64(MaxWork) / ns) }

// checkEvents refuses a work estimate of events at ns nanoseconds each
// above MaxWork; param and also name the parameters it depends on, and
// what lists its factors for the message.
func checkEvents(workload, param string, also []string, events int64, ns float64, what string) error {
	if events > maxEvents(ns) {
		n := fmt.Sprint(events)
		if events == math.MaxInt64 {
			n = "more than " + n
		}
		work := "more than 100 years"
		if w := float64(events) * ns; w < 100*365*24*float64(time.Hour) {
			work = time.Duration(w).Round(time.Second).String()
		}
		return limitErr(workload, param, also, "%s: up to %s events, about %s of work at %.0f ns each, above the limit MaxWork = %v", what, n, work, ns, MaxWork)
	}
	return nil
}

// seriesLen returns the number of windows of the given width needed to
// cover [0, span], saturating.
func seriesLen(span, width time.Duration) int64 {
	return addSat(int64(span/width), 1)
}
