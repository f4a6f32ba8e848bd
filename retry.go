package backoff

import "context"

// Do calls fn(ctx) until it succeeds, retrying failures as the policy p
// directs, and returns nil or an *[Error] that says why it stopped. It never
// calls fn with a done ctx. After a failure, in order, Do stops with
//
//   - ctx.Err() as the reason if ctx is done;
//   - [ErrPermanent] if the error is not [Retryable];
//   - [ErrRetriedBelow] if it is an inner loop's give-up (see there);
//   - p's reason, if p gives one for this attempt (1 after the first call);
//   - [ErrDeadline] if p's delay would end at or after ctx's deadline;
//
// and otherwise waits for the delay, or until ctx is done, and calls fn again.
// fn's own context errors, while ctx is live, are retried. A [Sequencer] gets
// one sequence per call; a negative delay counts as zero. Do starts no
// goroutine, uses at most one timer, does not allocate when fn succeeds at
// once, and lets fn's panics through. A nil fn or p (a typed nil once fn has
// failed) panics with a *[ParamError].
func Do(ctx context.Context, fn func(context.Context) error, p Policy) error {
	r := Retrier{Policy: p}
	return r.Do(ctx, fn)
}

// DoValue is [Do] for a function that returns a value: fn's on success,
// otherwise the zero value of T with the *[Error].
func DoValue[T any](ctx context.Context, fn func(context.Context) (T, error), p Policy) (T, error) {
	r := Retrier{Policy: p}
	return doValue(ctx, fn, &r)
}
