// Package backoff retries failing calls with capped exponential backoff and
// jitter:
//
//	policy := backoff.Must(backoff.NewFullJitter(backoff.Config{
//		Base: 100 * time.Millisecond, Cap: 10 * time.Second, MaxAttempts: 8,
//	}, backoff.RuntimeRng{}))
//	err := backoff.Do(ctx, func(ctx context.Context) error {
//		return db.PingContext(ctx)
//	}, policy)
//
// [Do] returns nil or an *[Error] that says why it stopped. [FullJitter] is
// the default for a fleet; [EqualJitter], [Decorrelated], [Exponential],
// [RetryAfter] (a server's hint) and [PolicyFunc] are the others. Delays never
// overflow, go negative or pass their cap; policies are immutable, and the
// jittered ones draw only from the [Rng] they are given. [Permanent] and a
// Retryable() bool method classify errors. A [Retrier] adds a shared
// [Budget], a time limit and hooks; a [Ticker] spreads periodic work. Nested
// loops retry at the innermost layer only ([ErrRetriedBelow]). The package
// imports no net, os or fmt; HTTP lives in backoffhttp.
package backoff
