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
// [Do] returns nil or an *[Error] that says why it stopped. The policies,
// [FullJitter] (the default), [EqualJitter], [Decorrelated], [Exponential],
// [RetryAfter] and [PolicyFunc], are immutable; their delays never overflow,
// go negative or pass Cap. [Permanent] and a Retryable() bool method
// classify errors; nested loops retry at the innermost only
// ([ErrRetriedBelow]). A [Retrier] adds a shared [Budget], a time limit and
// hooks; a [Ticker] spreads periodic work. No net, os or fmt is imported.
package backoff
