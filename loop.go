package backoff

import (
	"context"
	"time"
)

// Loop is a Policy together with what [Do] applies around it for a whole
// fleet: a shared retry [Budget], and hooks that see each retry and the end
// of the loop, for logs and metrics. Pass a *Loop to Do or [DoValue] in place
// of the policy:
//
//	loop := &backoff.Loop{Policy: policy, Budget: budget, OnRetry: logRetry}
//	err := backoff.Do(ctx, fn, loop)
//
// For each Do call given a *Loop as its policy, in order:
//
//   - before the first call, Do deposits one call in Budget;
//   - after a failure that the policy would retry, and only once the
//     deadline check has passed, Do withdraws one retry from Budget, and
//     when the budget refuses, stops at once with the refusal, a
//     *[BudgetError] that matches [ErrBudget], as the reason;
//   - then Do calls OnRetry, just before it waits: OnRetry sees exactly the
//     retries that are made, never one that a stop reason cancels;
//   - when Do returns, it calls OnDone once with the number of calls made
//     and the error it is about to return (nil on success).
//
// The policy's delays are those it gives alone, and a [Sequencer] policy
// keeps one fresh sequence per Do call. Every field but Policy may be nil.
// A Loop must not be changed once in use; the Budget it points to is shared
// on purpose and may serve any number of Loops and goroutines. The hooks run
// on Do's goroutine and delay the loop by the time they take; they must be
// safe for concurrent use when the Loop is shared.
//
// Do recognises a *Loop only as its own policy argument: a Loop wrapped in
// another policy acts as its Policy alone.
type Loop struct {
	// Policy decides every delay and every stop, as when passed to Do
	// alone. It must not be nil.
	Policy Policy

	// Budget, when not nil, limits the retries of all the Do calls that
	// share it to a ratio of their calls.
	Budget *Budget

	// OnRetry, when not nil, is called when Do is about to wait delay
	// before the next call; attempt is the number of calls made so far and
	// err is the last one's error.
	OnRetry func(ctx context.Context, attempt int, err error, delay time.Duration)

	// OnDone, when not nil, is called once when Do returns: attempts is the
	// number of calls made (0 when ctx was done before the first) and err
	// is Do's result, nil on success or an *[Error].
	OnDone func(ctx context.Context, attempts int, err error)
}

// NextDelay returns l.Policy.NextDelay(attempt, err): outside Do, a Loop is
// its Policy.
func (l *Loop) NextDelay(attempt int, err error) (time.Duration, error) {
	return l.Policy.NextDelay(attempt, err)
}

// NewSequence returns a new sequence of l.Policy (see [StartSequence]). The
// budget and the hooks are Do's and take no part in a sequence.
func (l *Loop) NewSequence() Policy {
	return StartSequence(l.Policy)
}

// start is Do's first step with a Loop.
func (l *Loop) start() {
	if l.Policy == nil {
		panic(&ParamError{Param: "Loop.Policy", Value: nil, Reason: "must not be nil"})
	}
	if l.Budget != nil {
		l.Budget.Deposit()
	}
}

// retry is Do's last step before it waits d after attempt failed with err:
// it returns the budget's refusal, or nil after announcing the retry.
func (l *Loop) retry(ctx context.Context, attempt int, err error, d time.Duration) error {
	if l.Budget != nil {
		if refusal := l.Budget.Withdraw(); refusal != nil {
			return refusal
		}
	}
	if l.OnRetry != nil {
		l.OnRetry(ctx, attempt, err, d)
	}
	return nil
}

// done reports the end of the loop to OnDone and returns err. It accepts a
// nil l, for the callers that have no Loop.
func (l *Loop) done(ctx context.Context, err error, attempts int) error {
	if l != nil && l.OnDone != nil {
		l.OnDone(ctx, attempts, err)
	}
	return err
}
