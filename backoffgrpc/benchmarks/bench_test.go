// Package benchmarks measures the cost of a successful unary gRPC call
// through backoffgrpc's interceptor, against no interceptor,
// go-grpc-middleware v2's retry interceptor and grpc-go's built-in retries,
// over loopback TCP and over an in-memory connection (bufconn). It is a
// module of its own so that backoffgrpc requires none of the peers.
package benchmarks

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/backoffgrpc"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/retry"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/test/bufconn"
)

// builtinConfig turns grpc-go's own retries on for the health service: 3
// attempts of UNAVAILABLE.
const builtinConfig = `{"methodConfig": [{
	"name": [{"service": "grpc.health.v1.Health"}],
	"retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s",
		"backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}`

// A client is a configuration compared: its dial options, and the options
// of each call.
type client struct {
	name     string
	opts     []grpc.DialOption
	callOpts []grpc.CallOption
}

// clients are the configurations compared. none-Header-Trailer is no
// interceptor with a caller that asks grpc for each call's header and
// trailer, as an interceptor must to tell a committed call and read the
// pushback: the floor of such an interceptor's allocations.
func clients(b *testing.B) []client {
	c, err := backoffgrpc.NewClient(backoffgrpc.ClientConfig{Retrier: &backoff.Retrier{
		Policy: backoff.Must(backoff.NewFullJitter(backoff.Config{Base: 100 * time.Millisecond, Cap: time.Second, MaxAttempts: 3}, backoff.RuntimeRng{})),
	}})
	if err != nil {
		b.Fatal(err)
	}
	var header, trailer metadata.MD
	return []client{
		{"none", nil, nil},
		{"none-Header-Trailer", nil, []grpc.CallOption{grpc.Header(&header), grpc.Trailer(&trailer)}},
		{"backoffgrpc", []grpc.DialOption{grpc.WithUnaryInterceptor(c.UnaryInterceptor())}, nil},
		{"backoffgrpc-DialOptions", c.DialOptions(), nil},
		{"backoffgrpc-Header-Trailer", []grpc.DialOption{grpc.WithUnaryInterceptor(c.UnaryInterceptor())}, []grpc.CallOption{grpc.Header(&header), grpc.Trailer(&trailer)}},
		{"backoffgrpc-over-builtin", []grpc.DialOption{grpc.WithDefaultServiceConfig(builtinConfig), grpc.WithUnaryInterceptor(c.UnaryInterceptor())}, nil},
		{"middleware-retry", []grpc.DialOption{grpc.WithUnaryInterceptor(retry.UnaryClientInterceptor(
			retry.WithMax(3), retry.WithBackoff(retry.BackoffExponentialWithJitter(100*time.Millisecond, 0.5))))}, nil},
		{"grpc-builtin", []grpc.DialOption{grpc.WithDefaultServiceConfig(builtinConfig)}, nil},
		{"none-WithDisableRetry", []grpc.DialOption{grpc.WithDisableRetry()}, nil},
	}
}

// BenchmarkUnary: one successful health check per iteration.
func BenchmarkUnary(b *testing.B) {
	for _, network := range []string{"tcp", "bufconn"} {
		for _, c := range clients(b) {
			b.Run("net="+network+"/client="+c.name, func(b *testing.B) {
				client := healthpb.NewHealthClient(connect(b, network, c.opts))
				ctx := context.Background()
				req := &healthpb.HealthCheckRequest{}
				if _, err := client.Check(ctx, req, c.callOpts...); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := client.Check(ctx, req, c.callOpts...); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// connect starts a health server on network ("tcp" on loopback, or
// "bufconn") and returns a connection to it with opts.
func connect(b *testing.B, network string, opts []grpc.DialOption) *grpc.ClientConn {
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, health.NewServer())
	b.Cleanup(srv.Stop)
	target := "passthrough:///bufconn"
	var lis net.Listener
	if network == "tcp" {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		lis, target = l, l.Addr().String()
	} else {
		l := bufconn.Listen(1 << 20)
		lis = l
		opts = append(opts, grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return l.DialContext(ctx) }))
	}
	go srv.Serve(lis)
	cc, err := grpc.NewClient(target, append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cc.Close() })
	return cc
}

// BenchmarkInterceptor: the interceptors alone, around an invoker that
// succeeds at once without a network (grpc then fills no header or
// trailer), with the one call option that generated code passes: what each
// costs of itself, apart from grpc.
func BenchmarkInterceptor(b *testing.B) {
	c, err := backoffgrpc.NewClient(backoffgrpc.ClientConfig{})
	if err != nil {
		b.Fatal(err)
	}
	invoker := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error { return nil }
	opts := []grpc.CallOption{grpc.StaticMethod()}
	for _, tt := range []struct {
		name        string
		interceptor grpc.UnaryClientInterceptor
	}{
		{"backoffgrpc", c.UnaryInterceptor()},
		{"middleware-retry", retry.UnaryClientInterceptor(retry.WithMax(3))},
	} {
		b.Run("client="+tt.name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if err := tt.interceptor(ctx, "/grpc.health.v1.Health/Check", nil, nil, nil, invoker, opts...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
