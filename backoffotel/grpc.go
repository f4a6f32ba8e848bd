package backoffotel

import (
	"context"
	"errors"
	"io"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/backoffgo/backoff/backoffgrpc"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
)

// The instruments of a gRPC call retried by a backoffgrpc.Client. The
// first three are gRFC A96's ("OTel Metrics for Retries", draft of
// 2025-04-02, grpc/proposal commit cbe7612) as grpc.io's OpenTelemetry
// metrics guide lists them ("Client Per-Call Retry Instruments"):
// histograms recorded once per call with its grpc.method and grpc.target,
// as A66 defines them. grpc.client.call.retries counts retry and hedging
// attempts, neither the first attempt nor transparent retries, and, like
// transparent_retries, is not recorded for a call that made none, as the
// guide says; grpc.client.call.hedges counts a hedged call's copies after
// the first. A later revision of A96 (commit 173e638, "In Review")
// proposes the label grpc.attempt_type on grpc.client.attempt.started in
// place of the two retry histograms, keeping retry_delay. The give-ups
// and hedge wins counters are this module's.
const (
	// GRPCRetriesMetric is A96's Histogram of the retries of each call
	// ({retry}): the Client's attempts but the first, a hedged call's
	// copies included.
	GRPCRetriesMetric = "grpc.client.call.retries"
	// GRPCTransparentRetriesMetric is A96's Histogram of grpc-go's
	// transparent retries within each call ({transparent_retry}): its
	// attempts that stats.Begin reports as IsTransparentRetryAttempt.
	GRPCTransparentRetriesMetric = "grpc.client.call.transparent_retries"
	// GRPCRetryDelayMetric is A96's Histogram of each call's total delay
	// while no attempt is active (s): here the sum of the waits before
	// the Client's retries, as its OnRetry hook announces them (the
	// policy's delay or the server's pushback), 0 for a call not retried.
	GRPCRetryDelayMetric = "grpc.client.call.retry_delay"
	// GRPCGiveUpsMetric counts the calls whose Client stopped without
	// success ({call}), by [ReasonKey], with grpc.method and grpc.target.
	GRPCGiveUpsMetric = "backoff.grpc.client.call.give_ups"
	// GRPCHedgesMetric is A96's Histogram of the hedges of each hedged
	// call that sent any ({hedge}): its copies after the first.
	GRPCHedgesMetric = "grpc.client.call.hedges"
	// GRPCHedgeWinsMetric counts the hedged calls won by a copy after the
	// first ({call}).
	GRPCHedgeWinsMetric = "backoff.grpc.client.call.hedge_wins"
)

var grpcNames = names{retries: GRPCRetriesMetric, transparent: GRPCTransparentRetriesMetric,
	delay: GRPCRetryDelayMetric, giveUps: GRPCGiveUpsMetric, unit: "{call}",
	hedges: GRPCHedgesMetric, hedgeWins: GRPCHedgeWinsMetric}

// DialOptions returns the options of a channel whose calls a
// backoffgrpc.Client of cfg retries, traced and measured, in the one order
// that works: first the interceptors that make each call's span, then
// otelgrpc's stats handler, which makes one client span per attempt, then
// the Client's DialOptions, whose interceptors retry. Pass them to
// grpc.NewClient with the others, in any place among them, but with no
// stats handler of otelgrpc's and no backoffgrpc interceptors of their
// own (each attempt would be traced, or the calls retried, twice):
//
//	opts, err := backoffotel.DialOptions(backoffgrpc.ClientConfig{}, backoffotel.Config{})
//	conn, err := grpc.NewClient(target, append(opts, creds)...)
//
// The call's span, named "call" and the method (without its leading
// slash), of kind internal, is the parent of its attempts' spans; it has
// status Error and the [ReasonKey] of a give-up when the call fails. A
// unary call's span ends when the call returns; a stream's when RecvMsg
// returns an error (io.EOF: success), the response of a stream that sends
// one has arrived, or the stream's context ends. Each attempt's span
// carries http.request.resend_count, the number of attempts of the call
// before it, as OpenTelemetry's conventions ask of a resend (they name no
// gRPC attribute for it). cfg.Retrier's hooks are still called, after the
// metrics: [GRPCRetriesMetric], [GRPCTransparentRetriesMetric],
// [GRPCRetryDelayMetric] and [GRPCGiveUpsMetric]; with cfg.Hedging, a
// hedged call's [GRPCHedgesMetric] and [GRPCHedgeWinsMetric], and then
// its own OnWin.
//
// DialOptions adds its hooks to a copy of cfg.Retrier (nil:
// backoffgrpc.DefaultRetrier(), as NewClient's). It returns the
// *backoff.ParamError that backoffgrpc.NewClient returns for cfg, or the
// meter's error when it cannot make the instruments.
func DialOptions(cfg backoffgrpc.ClientConfig, tel Config) ([]grpc.DialOption, error) {
	in, err := newInstruments(tel, grpcNames)
	if err != nil {
		return nil, err
	}
	cfg.Retrier = in.retrier(cfg.Retrier, backoffgrpc.DefaultRetrier)
	hedging := cfg.Hedging != nil
	if hedging {
		h := *cfg.Hedging
		h.OnWin = in.onWin(h.OnWin)
		cfg.Hedging = &h
	}
	c, err := backoffgrpc.NewClient(cfg)
	if err != nil {
		return nil, err
	}
	tracer := tel.tracerProvider().Tracer(scope)
	return append([]grpc.DialOption{
		grpc.WithChainUnaryInterceptor(unaryCall(tracer, hedging)),
		grpc.WithChainStreamInterceptor(streamCall(tracer, hedging)),
		grpc.WithStatsHandler(attemptHandler{otelgrpc.NewClientHandler(
			otelgrpc.WithTracerProvider(tel.tracerProvider()), otelgrpc.WithMeterProvider(tel.meterProvider()),
			otelgrpc.WithPropagators(tel.propagators()))}),
	}, c.DialOptions()...), nil
}

// startCall starts the span and the call of a gRPC call of method on cc.
func startCall(ctx context.Context, tracer trace.Tracer, method string, cc *grpc.ClientConn) (context.Context, trace.Span, *call) {
	ctx, span := tracer.Start(ctx, "call "+strings.TrimPrefix(method, "/"), trace.WithSpanKind(trace.SpanKindInternal))
	ctx, c := withCall(ctx, attribute.String("grpc.method", strings.TrimPrefix(method, "/")), attribute.String("grpc.target", cc.CanonicalTarget()))
	return ctx, span, c
}

// endCall ends span, the span of c, which ended with err.
func endCall(span trace.Span, c *call, err error) {
	if reason := c.gaveUp(); reason != "" {
		span.SetAttributes(ReasonKey.String(reason))
	}
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// unaryCall makes the span of a unary call; with hedging, a call that the
// Client hedges (its reply a non-nil pointer) counts its hedges.
func unaryCall(tracer trace.Tracer, hedging bool) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		ctx, span, c := startCall(ctx, tracer, method, cc)
		if hedging {
			v := reflect.ValueOf(reply)
			c.hedged.Store(v.Kind() == reflect.Pointer && !v.IsNil())
		}
		err := invoker(ctx, method, req, reply, cc, opts...)
		endCall(span, c, err)
		return err
	}
}

// streamCall makes the span of a stream; with hedging, a stream whose
// CloseSend returns before its first RecvMsg or Header begins counts its
// retries as hedges (the Client hedges it, unless its first attempt
// failed before, or it sent more than it keeps).
func streamCall(tracer trace.Tracer, hedging bool) grpc.StreamClientInterceptor {
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		ctx, span, c := startCall(ctx, tracer, method, cc)
		s, err := streamer(ctx, desc, cc, method, opts...)
		if err != nil {
			endCall(span, c, err)
			return nil, err
		}
		cs := &callStream{ClientStream: s, desc: desc, c: c, hedging: hedging}
		cs.end = sync.OnceFunc(func() { endCall(span, c, cs.err) })
		stop := context.AfterFunc(ctx, func() {
			cs.err = ctx.Err()
			cs.end()
		})
		cs.stop = func() bool { return stop() }
		return cs, nil
	}
}

// callStream ends the call's span when the stream ends, and tells
// whether the Client hedges it.
type callStream struct {
	grpc.ClientStream
	desc     *grpc.StreamDesc
	end      func()
	stop     func() bool // stops the end at the context's end; false if it ran
	err      error       // the stream's end, written before end runs
	c        *call
	hedging  bool        // the Client hedges
	received atomic.Bool // a RecvMsg or Header has begun
}

func (s *callStream) CloseSend() error {
	if s.hedging && !s.received.Load() {
		s.c.hedged.Store(true)
	}
	return s.ClientStream.CloseSend()
}

func (s *callStream) Header() (metadata.MD, error) {
	s.received.Store(true)
	return s.ClientStream.Header()
}

func (s *callStream) RecvMsg(m any) error {
	s.received.Store(true)
	err := s.ClientStream.RecvMsg(m)
	if err != nil || !s.desc.ServerStreams {
		if s.stop() {
			if !errors.Is(err, io.EOF) {
				s.err = err
			}
			s.end()
		}
	}
	return err
}

// attemptHandler is otelgrpc's client handler, which starts a span per
// attempt, that sets each span's resend count and counts the call's
// transparent retries.
type attemptHandler struct{ stats.Handler }

func (h attemptHandler) TagRPC(ctx context.Context, info *stats.RPCTagInfo) context.Context {
	ctx = h.Handler.TagRPC(ctx, info)
	if c := callFrom(ctx); c != nil {
		if n := c.resendCount(); n > 0 {
			trace.SpanFromContext(ctx).SetAttributes(semconv.HTTPRequestResendCount(n))
		}
	}
	return ctx
}

func (h attemptHandler) HandleRPC(ctx context.Context, s stats.RPCStats) {
	if b, ok := s.(*stats.Begin); ok && b.IsTransparentRetryAttempt {
		if c := callFrom(ctx); c != nil {
			c.transparent.Add(1)
		}
	}
	h.Handler.HandleRPC(ctx, s)
}
