package backoffotel_test

import (
	"context"
	"fmt"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/backoffgrpc"
	"github.com/backoffgo/backoff/backoffotel"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// A health check whose server fails twice with UNAVAILABLE, retried by a
// backoffgrpc.Client that DialOptions instruments: one span for the call,
// one client span per attempt with its resend count, and gRFC A96's
// histograms of the call's retries and retry delay.
func ExampleDialOptions() {
	addr, stop := serveHealth(grpc.UnaryInterceptor(failFirst(2)))
	defer stop()
	tm := newTelemetry() // an SDK TracerProvider and MeterProvider, read in memory

	policy := backoff.Must(backoff.NewExponential(backoff.Config{Base: 5 * time.Millisecond, Cap: 20 * time.Millisecond, MaxAttempts: 3}))
	opts, err := backoffotel.DialOptions(backoffgrpc.ClientConfig{Retrier: &backoff.Retrier{Policy: policy}},
		backoffotel.Config{TracerProvider: tm.tp, MeterProvider: tm.mp})
	if err != nil {
		panic(err)
	}
	conn, err := grpc.NewClient(addr, append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		panic(err)
	}
	defer conn.Close()

	_, err = healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	fmt.Println("call:", err)

	tm.print(4, backoffotel.GRPCRetriesMetric, backoffotel.GRPCRetryDelayMetric)
	// Output:
	// call: <nil>
	// call grpc.health.v1.Health/Check Unset
	//   grpc.health.v1.Health/Check Error
	//   grpc.health.v1.Health/Check Error resend_count=1
	//   grpc.health.v1.Health/Check Unset resend_count=2
	// grpc.client.call.retries count=1 sum=2
	// grpc.client.call.retry_delay count=1 sum=0.015
}
