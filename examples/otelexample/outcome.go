package otelexample

import (
	"context"
	"errors"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/backoffgrpc"
	"github.com/backoffgo/backoff/backoffhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// The instruments' names and attribute shared by HTTP and gRPC.
const (
	// CallsMetric counts the calls that ended, by OutcomeKey.
	CallsMetric = "backoff.calls"
	// OutcomeKey is the attribute that says how a call ended: "success",
	// "success_after_retry", or the reason it stopped (see Outcome).
	OutcomeKey = attribute.Key("backoff.outcome")
)

// instruments are the meter's instruments of a call's end: the count of
// calls by outcome and the histogram of their retries.
type instruments struct {
	calls   metric.Int64Counter
	retries metric.Int64Histogram
}

// newInstruments makes the instruments on meter, the histogram of retries
// named retriesName.
func newInstruments(meter metric.Meter, retriesName string) (*instruments, error) {
	calls, err := meter.Int64Counter(CallsMetric, metric.WithDescription("Calls that ended, by outcome."), metric.WithUnit("{call}"))
	if err != nil {
		return nil, err
	}
	retries, err := meter.Int64Histogram(retriesName, metric.WithDescription("Retries of each call."), metric.WithUnit("{retry}"),
		metric.WithExplicitBucketBoundaries(0, 1, 2, 3, 4, 5))
	if err != nil {
		return nil, err
	}
	return &instruments{calls: calls, retries: retries}, nil
}

// record records the end of a call of attempts attempts with err, as
// OnDone reports it: one count with its outcome, and its retries.
func (in *instruments) record(ctx context.Context, attempts int, err error) {
	set := metric.WithAttributeSet(attribute.NewSet(OutcomeKey.String(Outcome(attempts, err))))
	in.calls.Add(ctx, 1, set)
	in.retries.Record(ctx, int64(max(attempts-1, 0)), set)
}

// Outcome names how a call of attempts attempts ended with err, as the
// OnDone of a backoff.Retrier or a backoffhttp.Transport sees it:
// "success", "success_after_retry", or the reason the loop stopped:
// "exhausted", "deadline", "budget", "retried_below", "permanent",
// "committed", "not_replayable", "not_repeatable", "hint_too_long",
// "canceled", "deadline_exceeded", or "other" for a policy's own reason.
func Outcome(attempts int, err error) string {
	if err == nil {
		if attempts > 1 {
			return "success_after_retry"
		}
		return "success"
	}
	var e *backoff.Error
	if !errors.As(err, &e) {
		return "other"
	}
	for _, r := range reasons {
		if errors.Is(e.Reason, r.err) {
			return r.name
		}
	}
	return "other"
}

// reasons are the stop reasons Outcome names, ErrDeadline before
// context.DeadlineExceeded, which it matches.
var reasons = [...]struct {
	err  error
	name string
}{
	{backoff.ErrExhausted, "exhausted"},
	{backoff.ErrDeadline, "deadline"},
	{backoff.ErrBudget, "budget"},
	{backoff.ErrRetriedBelow, "retried_below"},
	{backoff.ErrPermanent, "permanent"},
	{backoffgrpc.ErrCommitted, "committed"},
	{backoffgrpc.ErrNotReplayable, "not_replayable"},
	{backoffhttp.ErrNotRepeatable, "not_repeatable"},
	{backoff.ErrHintTooLong, "hint_too_long"},
	{context.Canceled, "canceled"},
	{context.DeadlineExceeded, "deadline_exceeded"},
}
