// Package backoff retries failing calls with capped exponential backoff and
// jitter, correctly: delays never overflow, never go negative and never pass
// their cap; shared policies are safe across goroutines; and the loop always
// tells you why it stopped and what the last error was.
//
// # Why backoff, and why jitter
//
// When a dependency fails, retrying at once multiplies its load just when it
// can least take it. Exponential backoff waits longer after each failure:
// min(Cap, Base·2^(n−1)) after the n-th attempt. But clients that failed
// together then retry together, in lockstep, and the recovering service meets
// a periodic wall of requests. Jitter fixes that by having each client draw
// its own delay. With full jitter, the recommended default, each delay is
// uniform over [0, min(Cap, Base·2^(n−1))].
//
// The price: full jitter waits half as long on average, so with the same
// attempt budget it gives up sooner in elapsed time and, through an outage
// longer than its patience, succeeds less often than plain exponential
// backoff. Size MaxAttempts (or the context's deadline) for the outage you
// want to ride out. The measurements behind both statements are in the
// repository's docs/simulations.md.
//
// # Choosing a policy
//
//   - [FullJitter]: the default for anything with more than one client.
//   - [EqualJitter]: keeps at least half of each delay, when the full
//     backoff duration matters more than spreading the fleet.
//   - [Decorrelated]: each delay drawn from the previous one.
//   - [Exponential]: no randomness; for a single client, or where the delay
//     must be derivable from the attempt number alone.
//   - [RetryAfter]: wraps any of them and obeys the server's Retry-After,
//     capped, when there is one.
//
// Any function can be a policy through [PolicyFunc]; a policy that needs
// memory within one retry sequence implements [Sequencer].
//
// # Attempts and stop reasons
//
// A policy is asked after a failure, with the number of attempts made so
// far: NextDelay(1, err) follows the first call. It returns the delay, or
// the reason to stop, which [Do] reports as is. MaxAttempts counts every
// call, the first included: 8 allows 7 retries. [Unlimited] retries until
// the error is permanent or the context ends.
//
// # Fleets
//
// A [Loop] gives Do a shared retry [Budget], which keeps a fleet's retries
// within a ratio of its calls, and hooks for logs and metrics. A [Ticker]
// spreads a fleet's periodic work over each interval.
//
// # Randomness
//
// Jittered policies draw from the [Rng] given at construction and never from
// a global source. [RuntimeRng] is the fast, lock-free, concurrency-safe
// choice for production; [NewSeededRng] gives reproducible sequences for
// tests and simulations.
//
// # Cost
//
// The package imports no net, os or fmt package: HTTP support lives in the
// subpackage backoffhttp. Do allocates nothing when the call succeeds at
// once.
//
// # Quick start
//
//	var policy = backoff.Must(backoff.NewFullJitter(backoff.Config{
//		Base:        100 * time.Millisecond,
//		Cap:         10 * time.Second,
//		MaxAttempts: 8,
//	}, backoff.RuntimeRng{}))
//
//	err := backoff.Do(ctx, func(ctx context.Context) error {
//		return db.PingContext(ctx)
//	}, policy)
//
// [Do] returns nil on success or an *[Error] whose reason ([ErrPermanent],
// [ErrExhausted], [ErrDeadline], [ErrBudget], the policy's own reason or the
// context's error) and last error from the function are both reachable with
// errors.Is and errors.As.
package backoff
