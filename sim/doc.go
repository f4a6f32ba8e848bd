// Package sim is a deterministic discrete-event simulator, in virtual time,
// for measuring what a backoff policy does to a fleet of clients.
//
// It drives real [backoff.Policy] values: every simulated client (or every
// call, in [Amplification]) starts its own retry sequence with
// [backoff.StartSequence] and then asks that sequence for each delay, exactly
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
//     start by a policy's first delay; report the peak per-second load.
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
// # Cost
//
// Let C be the number of clients, A the attempts each makes, and E the number
// of events (calls or messages) a workload processes.
//
//   - Herd and Outage: clients share no state, so each client's sequence is
//     simulated on its own, which is equivalent to the global event order:
//     O(E) = O(C·A) time; memory O(W) for W windows of the time series, no
//     per-client state is kept.
//   - Contention: a binary heap holds exactly one pending event per client
//     that has not finished; client-side steps that touch no shared state are
//     folded into the next server event, so each write costs two heap
//     operations: O(E log C) time, O(C) memory.
//   - Amplification: O(R·A^L) for R requests through L layers of A attempts
//     (every one of those calls is an event); O(L) memory.
//   - Periodic: O(J·H/I) for J jobs over a horizon H of interval I; O(H/s)
//     memory for the per-second buckets.
package sim
