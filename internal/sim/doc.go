// Package sim is a deterministic discrete-event simulator, in virtual time,
// for measuring what a backoff policy does to a fleet of clients.
//
// It drives real [backoff.Policy] values: every simulated client (or every
// call, in [Amplification]) starts its own retry sequence (the
// policy's NewSequence if it is a [backoff.Sequencer]) and then asks that sequence for each delay, exactly
// as [backoff.Do] would, so a policy with per-sequence state such as
// decorrelated jitter keeps per-client memory. Nothing in this package
// re-implements a policy's formula; the two hand-written [Baselines] are
// comparison policies that are not part of the library, and say so.
//
// # Workloads
//
// Five canonical workloads are provided, each with a configuration type whose
// Default function holds every parameter in one documented place
// (see params.go):
//
//   - [Herd]: every client fails at t = 0 against a dependency that stays down;
//     report the largest share of all retries that land in one 10 ms window.
//   - [Outage]: clients arrive uniformly during a 30 s outage; report the share
//     that get through before running out of attempts.
//   - [Contention]: the optimistic-concurrency workload of Marc Brooker's
//     "Exponential Backoff And Jitter" (AWS Architecture Blog, 2015); report
//     the writes the server processed and the completion time.
//   - [Amplification]: a five-deep call stack over a failing dependency, with
//     retries at every layer or at one layer only; report the load multiplier.
//   - [Periodic]: a fleet of jobs on a 5-minute schedule, each delaying its
//     start by a policy's first delay, or by the offset of the library's
//     Ticker ([Ticker], against [NoOffset]); report the peak per-second load.
//
// Four more measure the fleet features (retry budget, recovery, ticker, the
// server's retry count) (see recovery.go, budget.go and servershare.go):
//
//   - [Recovery]: the herd with the dependency coming back; report the peak
//     load per window after it returns and in steady state at the cap.
//   - [BudgetAmplification]: the call stack with a [backoff.Budget] per
//     layer or one shared, by request rate; report the load multiplier.
//   - [OutageBudget]: the outage with one budget shared by the fleet;
//     report calls while down and success after.
//   - [ServerShare]: the budgeted stack as chains of services, each
//     counting its incoming retries in a [retryshare.Share] (see
//     servershare.go), for one client at several rates and for a fleet of
//     clients; report the load multiplier through an outage, the time the
//     dependency takes to say "do not retry", and what a healthy service
//     loses.
//
// One more puts issue 33's scenarios in the simulator (see sharefleet.go):
//
//   - [ShareFleet]: fleets of clients, each request a retry loop of the
//     contender's policy, over replicas behind a balancer that each decide
//     with a [retryshare.Share] as backoffhttp.Handler does (herds,
//     replicas, routes, random failures, a caller that lies), with Poisson
//     arrivals and network and service delays; report the load through an
//     outage and the success that the Shares cost.
//
// And issue 30's (see overload.go):
//
//   - [Overload]: an open-loop server of limited capacity (slots, a
//     bounded FIFO queue, client timeouts after which it still serves the
//     attempt), a load spike or a capacity drop that ends, and each client
//     policy (no retries, full jitter, with a Budget, a server Share, a
//     throttle.Throttle, a breaker, AWS's retry quota, the library's
//     defaults); report whether goodput comes back after the trigger, when,
//     and the load the retries add.
//
// The budgeted workloads couple clients through the budget (and
// ServerShare and ShareFleet through the servers' Shares), so they process
// every deposit, withdrawal and decision in virtual-time order, with the
// clock of the budget or Share (BudgetConfig.Now, retryshare.Config.Now)
// on the virtual time.
//
// # Determinism
//
// Every run of every workload draws from two *math/rand/v2.Rand PCG streams
// derived from the seed, the run index and the workload point (never from the
// policy), one for the environment (arrival times, network delays) and one
// handed to the policy. The same seed therefore gives the same numbers, and
// every policy sees the same environment draws where the workload allows it.
// Runs are independent and are spread over GOMAXPROCS goroutines; results are
// collected by run index and reduced in order, so the output does not depend
// on scheduling or on the number of cores.
//
// # Limits
//
// Every workload function validates its whole configuration before it
// starts (each configuration type has a Validate method doing exactly the
// same): parameters in range, a work estimate (events over all contenders
// and runs, each at its workload's [EventCost]) within [MaxWork], and a memory estimate within
// [MaxSeries], [MaxLayers] and [MaxSweep]. A refusal is a [*ConfigError]
// naming the parameter and the limit. The estimates are upper bounds for
// any policy, because a policy that retries past Config.MaxAttempts (or,
// in Outage with an unlimited budget, past [MaxClientAttempts]) is stopped
// and reported. A panic in a contender's New or policy, and a nil policy,
// are returned as errors naming the contender; no panic escapes a worker
// goroutine.
//
// Virtual time is exact or refused: Herd, Outage and Periodic keep time as
// a window index and an offset, so no sum of delays can wrap; Contention
// and Amplification return an error when a time would pass the largest
// time.Duration.
//
// # Cost
//
// Let C be the number of clients, A the attempts each makes, E the number
// of events (calls or messages) a workload processes, P the number of
// contenders and G the number of worker goroutines (at most GOMAXPROCS).
//
//   - Herd and Outage: clients share no state, so each client's sequence is
//     simulated on its own, which is equivalent to the global event order:
//     O(E) = O(C·A) time, no per-client state. Herd holds P + G series of
//     at most W windows each (the first run's series per contender, which
//     it returns, and one scratch series per goroutine, reused across
//     runs), W <= MaxSeries; Outage holds O(1).
//   - Contention: a binary heap holds exactly one pending event per client
//     that has not finished; client-side steps that touch no shared state are
//     folded into the next server event, so each write costs two heap
//     operations: O(E log C) time, O(C) memory per goroutine.
//   - Amplification: O(R·A^L) for R requests through L layers of A attempts
//     (every one of those calls is an event); O(L) memory (recursion depth).
//   - Periodic: O(J·H/I) for J jobs over a horizon H of interval I; one
//     scratch series of O(H/B) buckets of width B per goroutine.
//   - Overload: a binary heap of the pending events (an arrival, and per
//     attempt its answer or its timeout, which may outlive the answer):
//     O(E log E) time; a record per request of the run, the queue, and a
//     guard per client, each run's memory bounded by [MaxOverloadMemory].
//
// # Progress
//
// Each configuration has a Progress field: a function that, when not nil,
// receives a [Progress] report about every [ProgressInterval] of wall time
// while the workload runs, from one goroutine at a time, and a last report
// with Done == Total before the workload returns successfully. No report
// arrives after the workload function has returned.
package sim
