package otelexample_test

import (
	"context"
	"fmt"
	"net"
	"sort"
	"sync/atomic"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/backoffgrpc"
	"github.com/backoffgo/backoff/backoffgrpc/otelexample"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// A health check whose server fails twice with UNAVAILABLE, retried by
// backoffgrpc and traced by otelgrpc: one span for the call, one per
// attempt with its resend count, and the call counted by outcome.
func Example() {
	addr, stop := flakyHealthServer(2)
	defer stop()

	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))

	policy := backoff.Must(backoff.NewFullJitter(backoff.Config{Base: time.Millisecond, Cap: 10 * time.Millisecond, MaxAttempts: 3}, backoff.RuntimeRng{}))
	r, err := otelexample.Instrument(backoff.Retrier{Policy: policy}, mp.Meter("example"))
	if err != nil {
		panic(err)
	}
	c, err := backoffgrpc.NewClient(backoffgrpc.ClientConfig{Retrier: r})
	if err != nil {
		panic(err)
	}
	opts := append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(otelexample.CallSpan(tp.Tracer("example"))), // outside the retries
		grpc.WithStatsHandler(otelexample.ResendCount{Handler: otelgrpc.NewClientHandler(otelgrpc.WithTracerProvider(tp))}),
	}, c.DialOptions()...)
	conn, err := grpc.NewClient(addr, opts...)
	if err != nil {
		panic(err)
	}
	defer conn.Close()

	_, err = healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	fmt.Println("call:", err)

	ended := spans.Ended()
	sort.SliceStable(ended, func(i, j int) bool { return ended[i].StartTime().Before(ended[j].StartTime()) })
	for _, s := range ended {
		line := s.Name() + " " + s.Status().Code.String()
		for _, a := range s.Attributes() {
			if a.Key == "http.request.resend_count" {
				line += fmt.Sprintf(" resend_count=%d", a.Value.AsInt64())
			}
		}
		if s.Parent().SpanID() == ended[0].SpanContext().SpanID() {
			line = "  " + line
		}
		fmt.Println(line)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if sum, ok := m.Data.(metricdata.Sum[int64]); ok {
			for _, dp := range sum.DataPoints {
				outcome, _ := dp.Attributes.Value(otelexample.OutcomeKey)
				fmt.Printf("%s{%s=%s} %d\n", m.Name, otelexample.OutcomeKey, outcome.AsString(), dp.Value)
			}
		}
	}
	// Output:
	// call: <nil>
	// call /grpc.health.v1.Health/Check Unset
	//   grpc.health.v1.Health/Check Error
	//   grpc.health.v1.Health/Check Error resend_count=1
	//   grpc.health.v1.Health/Check Unset resend_count=2
	// backoff.calls{backoff.outcome=success_after_retry} 1
}

// flakyHealthServer starts a health server on loopback TCP whose first n
// calls fail with UNAVAILABLE; it returns its address and its stop.
func flakyHealthServer(n int64) (string, func()) {
	var calls atomic.Int64
	srv := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if calls.Add(1) <= n {
			return nil, status.Error(codes.Unavailable, "injected")
		}
		return handler(ctx, req)
	}))
	healthpb.RegisterHealthServer(srv, health.NewServer())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go srv.Serve(lis)
	return lis.Addr().String(), srv.Stop
}
