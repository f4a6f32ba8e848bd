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
// [Do] returns nil or an *[Error] whose stop reason ([ErrPermanent],
// [ErrExhausted], [ErrDeadline], [ErrBudget], [ErrRetriedBelow], a
// policy's own, the context's)
// and last error both match with errors.Is. Delays never overflow, go
// negative or pass their cap; policies are immutable and safe to share.
//
// [FullJitter] is the default for a fleet; [EqualJitter], [Decorrelated] and
// [Exponential] are the alternatives, [RetryAfter] honours a server's hint,
// and a [PolicyFunc] is a policy of one's own. A constant delay d is
// Config{Base: d, Cap: d}. [Permanent] and a Retryable() bool method classify
// errors. A [Retrier] adds a shared [Budget], a limit on the elapsed time and
// hooks; a [Ticker] spreads periodic work over its interval. Jittered
// policies draw from the [Rng] they are given, never from a global source.
// Nested loops retry at one layer, the innermost: a loop does not retry an
// inner loop's give-up ([ErrRetriedBelow]) unless told to (RetryInner).
//
// The package imports no net, os or fmt package; HTTP lives in backoffhttp.
package backoff
