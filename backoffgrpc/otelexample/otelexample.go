// Package otelexample shows backoffgrpc's retries in OpenTelemetry, as its
// semantic conventions describe them: otelgrpc's stats handler makes one
// client span per attempt, [ResendCount] adds each retry's
// http.request.resend_count to it, [CallSpan] makes one span for the
// logical call above its attempts, and [Instrument] counts the calls by
// outcome (the stop reason) and records their retries. It is a module of
// its own, so that neither backoff nor backoffgrpc requires OpenTelemetry.
package otelexample

import (
	"context"
	"errors"
	"strconv"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/backoffgrpc"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
)

// ResendCount wraps a client stats.Handler that starts a span per RPC, such
// as otelgrpc.NewClientHandler's: on a channel whose interceptors retry,
// each RPC it sees is one attempt, and ResendCount sets
// http.request.resend_count on the span of every retry, read from the
// attempt's backoffgrpc.PreviousAttemptsKey.
type ResendCount struct{ stats.Handler }

// TagRPC starts the attempt's span through the wrapped handler and sets
// its resend count when the attempt is a retry.
func (h ResendCount) TagRPC(ctx context.Context, info *stats.RPCTagInfo) context.Context {
	ctx = h.Handler.TagRPC(ctx, info)
	if n := previousAttempts(ctx); n > 0 {
		trace.SpanFromContext(ctx).SetAttributes(semconv.HTTPRequestResendCount(n))
	}
	return ctx
}

// previousAttempts returns the attempts made before the outgoing call of
// ctx, 0 for a first attempt.
func previousAttempts(ctx context.Context) int {
	md, _ := metadata.FromOutgoingContext(ctx)
	v := md.Get(backoffgrpc.PreviousAttemptsKey)
	if len(v) == 0 {
		return 0
	}
	n, err := strconv.Atoi(v[len(v)-1])
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// CallSpan returns a unary client interceptor that makes one client span for
// each logical call, named by its method, with the call's outcome: install
// it before the retrying interceptor, so that the attempts' spans are its
// children.
func CallSpan(tracer trace.Tracer) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		ctx, span := tracer.Start(ctx, "call "+method, trace.WithSpanKind(trace.SpanKindClient))
		defer span.End()
		err := invoker(ctx, method, req, reply, cc, opts...)
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
		}
		return err
	}
}

// The instruments of Instrument.
const (
	// CallsMetric counts the calls that ended, by OutcomeKey.
	CallsMetric = "backoff.calls"
	// RetriesMetric is gRFC A96's histogram of the retries of each call.
	RetriesMetric = "grpc.client.call.retries"
	// OutcomeKey is the attribute that says how a call ended: "success",
	// "success_after_retry", or the reason it stopped (see Outcome).
	OutcomeKey = attribute.Key("backoff.outcome")
)

// Instrument returns a copy of r whose OnDone records each call on meter's
// instruments (and then calls r's own OnDone, if any): one count in
// CallsMetric with the call's OutcomeKey, and its retries in RetriesMetric.
// It returns an error when meter cannot make them.
func Instrument(r backoff.Retrier, meter metric.Meter) (*backoff.Retrier, error) {
	calls, err := meter.Int64Counter(CallsMetric, metric.WithDescription("Calls that ended, by outcome."), metric.WithUnit("{call}"))
	if err != nil {
		return nil, err
	}
	retries, err := meter.Int64Histogram(RetriesMetric, metric.WithDescription("Retries of each call."), metric.WithUnit("{retry}"),
		metric.WithExplicitBucketBoundaries(0, 1, 2, 3, 4, 5))
	if err != nil {
		return nil, err
	}
	onDone := r.OnDone
	r.OnDone = func(ctx context.Context, attempts int, err error) {
		set := metric.WithAttributeSet(attribute.NewSet(OutcomeKey.String(Outcome(attempts, err))))
		calls.Add(ctx, 1, set)
		retries.Record(ctx, int64(max(attempts-1, 0)), set)
		if onDone != nil {
			onDone(ctx, attempts, err)
		}
	}
	return &r, nil
}

// Outcome names how a call of attempts attempts ended with err, as a
// Retrier's OnDone sees it: "success", "success_after_retry", or the reason
// the loop stopped: "exhausted", "deadline", "budget", "retried_below",
// "permanent", "committed", "not_replayable", "hint_too_long", "canceled",
// "deadline_exceeded", or "other" for a policy's own reason.
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
	{backoff.ErrHintTooLong, "hint_too_long"},
	{context.Canceled, "canceled"},
	{context.DeadlineExceeded, "deadline_exceeded"},
}
