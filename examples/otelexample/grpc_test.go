package otelexample_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/backoffgrpc"
	"github.com/backoffgo/backoff/examples/otelexample"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	grpccodes "google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// checkHealth makes one health check to addr through a Client of 3
// attempts, its call span made by CallSpan, its attempts' by otelgrpc with
// their resend counts, its outcome counted by Instrument, all in tm; it
// returns the call's error.
func checkHealth(t *testing.T, tm *telemetry, addr string) error {
	policy := backoff.Must(backoff.NewExponential(backoff.Config{Base: time.Millisecond, Cap: time.Millisecond, MaxAttempts: 3}))
	r, err := otelexample.Instrument(backoff.Retrier{Policy: policy}, tm.mp.Meter("test"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := backoffgrpc.NewClient(backoffgrpc.ClientConfig{Retrier: r})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(addr, append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(otelexample.CallSpan(tm.tp.Tracer("test"))), // before the retries: outside them
		grpc.WithStatsHandler(otelexample.ResendCount{Handler: otelgrpc.NewClientHandler(otelgrpc.WithTracerProvider(tm.tp))}),
	}, c.DialOptions()...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	return err
}

// checkGRPCSpans checks that spans are the call's client span, a root of
// status callCode, over its attempts' client spans in its trace, of the
// given statuses, the retries' with their resend counts.
func checkGRPCSpans(t *testing.T, spans tracetest.SpanStubs, callCode codes.Code, attempts ...codes.Code) {
	t.Helper()
	if len(spans) != 1+len(attempts) {
		t.Fatalf("%d spans, want %d: %v", len(spans), 1+len(attempts), names(spans))
	}
	call := spans[0]
	if call.Name != "call /grpc.health.v1.Health/Check" || call.SpanKind != trace.SpanKindClient || call.Parent.IsValid() || call.Status.Code != callCode {
		t.Errorf("call span %q kind %v parent %v status %v; want the call's, a client root span, %v", call.Name, call.SpanKind, call.Parent.SpanID(), call.Status, callCode)
	}
	for i, code := range attempts {
		s := spans[1+i]
		if s.Name != "grpc.health.v1.Health/Check" || s.SpanKind != trace.SpanKindClient || s.Parent.SpanID() != call.SpanContext.SpanID() || s.SpanContext.TraceID() != call.SpanContext.TraceID() || s.Status.Code != code {
			t.Errorf("attempt %d: %q kind %v parent %v status %v; want a client span under the call's, in its trace, %v", i+1, s.Name, s.SpanKind, s.Parent.SpanID(), s.Status, code)
		}
		if n, ok := resendCount(s); ok != (i > 0) || n != int64(i) {
			t.Errorf("attempt %d: resend_count %d (set: %v), want %d (set: %v)", i+1, n, ok, i, i > 0)
		}
	}
}

// healthServer starts a health server on loopback TCP behind the given
// interceptors, stopped at the end of the test, and returns its address.
func healthServer(t *testing.T, interceptors ...grpc.UnaryServerInterceptor) string {
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(interceptors...))
	healthpb.RegisterHealthServer(srv, health.NewServer())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

// failWith is a server interceptor that answers every call with err(ctx).
func failWith(err func(ctx context.Context) error) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, _ any, _ *grpc.UnaryServerInfo, _ grpc.UnaryHandler) (any, error) {
		return nil, err(ctx)
	}
}

// TestGRPCStopReasons: a gRPC call that fails is one call span, an error,
// over one client span per attempt with its resend count; the call is
// counted once with the reason it stopped and its retries: exhausted after
// 2 retries over a server that is always UNAVAILABLE, retried_below after
// none over a server whose handler's own retries gave up.
func TestGRPCStopReasons(t *testing.T) {
	unavailable := func(context.Context) error { return status.Error(grpccodes.Unavailable, "injected") }
	for _, tt := range []struct {
		name     string
		server   grpc.UnaryServerInterceptor
		outcome  string
		attempts int
	}{
		{"exhausted", failWith(unavailable), "exhausted", 3},
		{"retried_below", failWith(func(ctx context.Context) error {
			return backoff.Do(ctx, unavailable, backoff.Must(backoff.NewExponential(backoff.Config{Base: time.Nanosecond, Cap: time.Nanosecond, MaxAttempts: 2})))
		}), "retried_below", 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tm := newTelemetry()
			addr := healthServer(t, backoffgrpc.UnaryServerInterceptor(backoffgrpc.ServerConfig{}), tt.server)
			if err := checkHealth(t, tm, addr); status.Code(err) != grpccodes.Unavailable {
				t.Fatalf("call: %v, want Unavailable", err)
			}
			spans, err := tm.ended(1 + tt.attempts)
			if err != nil {
				t.Fatal(err)
			}
			attempts := make([]codes.Code, tt.attempts)
			for i := range attempts {
				attempts[i] = codes.Error
			}
			checkGRPCSpans(t, spans, codes.Error, attempts...)
			checkCalls(t, tm, otelexample.RetriesMetric, tt.outcome, int64(tt.attempts-1))
		})
	}
}
