package otelexample

import (
	"context"
	"strconv"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/backoffgrpc"
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

// RetriesMetric is gRFC A96's histogram of the retries of each gRPC call,
// recorded by Instrument.
const RetriesMetric = "grpc.client.call.retries"

// Instrument returns a copy of r whose OnDone records each call on meter's
// instruments (and then calls r's own OnDone, if any): one count in
// CallsMetric with the call's OutcomeKey, and its retries in RetriesMetric.
// It returns an error when meter cannot make them.
func Instrument(r backoff.Retrier, meter metric.Meter) (*backoff.Retrier, error) {
	in, err := newInstruments(meter, RetriesMetric)
	if err != nil {
		return nil, err
	}
	onDone := r.OnDone
	r.OnDone = func(ctx context.Context, attempts int, err error) {
		in.record(ctx, attempts, err)
		if onDone != nil {
			onDone(ctx, attempts, err)
		}
	}
	return &r, nil
}
