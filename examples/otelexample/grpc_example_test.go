package otelexample_test

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/backoffgrpc"
	"github.com/backoffgo/backoff/examples/otelexample"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
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
func Example_grpc() {
	addr, stop := flakyHealthServer(2)
	defer stop()

	tm := newTelemetry()
	policy := backoff.Must(backoff.NewFullJitter(backoff.Config{Base: time.Millisecond, Cap: 10 * time.Millisecond, MaxAttempts: 3}, backoff.RuntimeRng{}))
	r, err := otelexample.Instrument(backoff.Retrier{Policy: policy}, tm.mp.Meter("example"))
	if err != nil {
		panic(err)
	}
	c, err := backoffgrpc.NewClient(backoffgrpc.ClientConfig{Retrier: r})
	if err != nil {
		panic(err)
	}
	opts := append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(otelexample.CallSpan(tm.tp.Tracer("example"))), // outside the retries
		grpc.WithStatsHandler(otelexample.ResendCount{Handler: otelgrpc.NewClientHandler(otelgrpc.WithTracerProvider(tm.tp))}),
	}, c.DialOptions()...)
	conn, err := grpc.NewClient(addr, opts...)
	if err != nil {
		panic(err)
	}
	defer conn.Close()

	_, err = healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	fmt.Println("call:", err)

	tm.print(4)
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
