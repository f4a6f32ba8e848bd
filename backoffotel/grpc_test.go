package backoffotel_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/backoffgrpc"
	"github.com/backoffgo/backoff/backoffotel"
	"github.com/backoffgo/backoff/retryshare"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	grpccodes "google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// dial returns a connection to addr through DialOptions of a Client of 3
// attempts 1 ms apart, recording into tm; extra are options of the
// caller's, placed before DialOptions' when first is true, after them
// otherwise.
func dial(t *testing.T, tm *telemetry, addr string, first bool, extra ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	opts, err := backoffotel.DialOptions(backoffgrpc.ClientConfig{Retrier: &backoff.Retrier{Policy: constant(time.Millisecond, 3)}}, tm.config())
	if err != nil {
		t.Fatal(err)
	}
	if first {
		return dialWith(t, addr, append(extra, opts...))
	}
	return dialWith(t, addr, append(opts, extra...))
}

// dialWith returns an insecure connection to addr with opts, closed at the
// end of the test.
func dialWith(t *testing.T, addr string, opts []grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// check makes one health check on conn and returns its error.
func check(conn *grpc.ClientConn) error {
	_, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	return err
}

// checkGRPCSpans checks that spans are the call's span of method, an
// internal root of status callCode and reason, over its attempts' client
// spans in its trace, of the given statuses, the retries' with their
// resend counts.
func checkGRPCSpans(t *testing.T, spans tracetest.SpanStubs, method string, callCode codes.Code, reasonWant string, attempts ...codes.Code) {
	t.Helper()
	if len(spans) != 1+len(attempts) {
		t.Fatalf("%d spans, want %d: %v", len(spans), 1+len(attempts), names(spans))
	}
	c := spans[0]
	if c.Name != "call "+method || c.SpanKind != trace.SpanKindInternal || c.Parent.IsValid() || c.Status.Code != callCode || reason(c) != reasonWant {
		t.Errorf("call span %q kind %v parent %v status %v reason %q; want %q, an internal root span, %v, %q", c.Name, c.SpanKind, c.Parent.SpanID(), c.Status, reason(c), "call "+method, callCode, reasonWant)
	}
	for i, code := range attempts {
		s := spans[1+i]
		if s.Name != method || s.SpanKind != trace.SpanKindClient || s.Parent.SpanID() != c.SpanContext.SpanID() || s.SpanContext.TraceID() != c.SpanContext.TraceID() || s.Status.Code != code {
			t.Errorf("attempt %d: %q kind %v parent %v status %v; want %q, a client span under the call's, in its trace, %v", i+1, s.Name, s.SpanKind, s.Parent.SpanID(), s.Status, method, code)
		}
		if n, ok := resendCount(s); ok != (i > 0) || n != int64(i) {
			t.Errorf("attempt %d: resend_count %d (set: %v), want %d (set: %v)", i+1, n, ok, i, i > 0)
		}
	}
}

// checkGRPCMetrics checks the gRPC instruments of tm, as checkMetrics,
// for a call of method to addr.
func checkGRPCMetrics(t *testing.T, tm *telemetry, method, addr string, w want) {
	t.Helper()
	checkMetrics(t, tm, "grpc.method="+method+" grpc.target=dns:///"+addr, w, backoffotel.GRPCRetriesMetric, backoffotel.GRPCTransparentRetriesMetric,
		backoffotel.GRPCRetryDelayMetric, backoffotel.GRPCGiveUpsMetric)
}

const checkMethod = "grpc.health.v1.Health/Check"

// healthServer starts a health server on loopback TCP behind the given
// interceptors, stopped at the end of the test, and returns its address.
func healthServer(t *testing.T, interceptors ...grpc.UnaryServerInterceptor) string {
	addr, stop := serveHealth(grpc.ChainUnaryInterceptor(interceptors...))
	t.Cleanup(stop)
	return addr
}

// serveHealth starts a server of health and of the test streams
// (streamsDesc) with opts on loopback TCP and returns its address and its
// stop.
func serveHealth(opts ...grpc.ServerOption) (string, func()) {
	srv := grpc.NewServer(opts...)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	srv.RegisterService(&streamsDesc, struct{}{})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go srv.Serve(lis)
	return lis.Addr().String(), srv.Stop
}

// failFirst is a server interceptor that fails the first n calls with
// UNAVAILABLE.
func failFirst(n int64) grpc.UnaryServerInterceptor {
	var calls atomic.Int64
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if calls.Add(1) <= n {
			return nil, status.Error(grpccodes.Unavailable, "injected")
		}
		return handler(ctx, req)
	}
}

// TestGRPCStopReasons: a gRPC call is one call span over one client span
// per attempt with its resend count, and its retries, waits and give-up
// are recorded: succeeded after 2 retries; exhausted after 2 retries over
// a server that is always UNAVAILABLE; retried_below after none over a
// server whose handler's own retries gave up.
func TestGRPCStopReasons(t *testing.T) {
	unavailable := func(context.Context) error { return status.Error(grpccodes.Unavailable, "injected") }
	for _, tt := range []struct {
		name     string
		server   grpc.UnaryServerInterceptor
		reason   string
		attempts int
	}{
		{"success", failFirst(2), "", 3},
		{"exhausted", failFirst(1 << 30), "exhausted", 3},
		{"retried_below", func(ctx context.Context, _ any, _ *grpc.UnaryServerInfo, _ grpc.UnaryHandler) (any, error) {
			return nil, backoff.Do(ctx, unavailable, constant(time.Nanosecond, 2)) // the give-up itself: marked
		}, "retried_below", 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tm := newTelemetry()
			// A Share that is never over: only a give-up says "don't retry".
			never := backoff.Must(retryshare.New(retryshare.Config{Threshold: 1}))
			addr := healthServer(t, backoffgrpc.UnaryServerInterceptor(backoffgrpc.ServerConfig{Share: never}), tt.server)
			err := check(dial(t, tm, addr, false))
			callCode := codes.Error
			if tt.reason == "" {
				callCode = codes.Unset
				if err != nil {
					t.Fatalf("call: %v, want success", err)
				}
			} else if status.Code(err) != grpccodes.Unavailable {
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
			if tt.reason == "" {
				attempts[tt.attempts-1] = codes.Unset
			}
			checkGRPCSpans(t, spans, checkMethod, callCode, tt.reason, attempts...)
			checkGRPCMetrics(t, tm, checkMethod, addr, want{retries: tt.attempts - 1, delay: time.Duration(tt.attempts-1) * time.Millisecond, reason: tt.reason})
		})
	}
}

// TestGRPCOptionsAnywhere: DialOptions' options placed before or after
// the caller's own chained interceptor give the same spans and metrics:
// the call's span above the retries, whose attempts are its children, and
// the caller's interceptor outside the retries when first, inside them
// (once per attempt) when after.
func TestGRPCOptionsAnywhere(t *testing.T) {
	for _, first := range []bool{true, false} {
		tm := newTelemetry()
		addr := healthServer(t, failFirst(2))
		var seen atomic.Int64
		mine := grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			seen.Add(1)
			return invoker(ctx, method, req, reply, cc, opts...)
		})
		if err := check(dial(t, tm, addr, first, mine)); err != nil {
			t.Fatalf("first %v: call: %v", first, err)
		}
		spans, err := tm.ended(4)
		if err != nil {
			t.Fatal(err)
		}
		checkGRPCSpans(t, spans, checkMethod, codes.Unset, "", codes.Error, codes.Error, codes.Unset)
		checkGRPCMetrics(t, tm, checkMethod, addr, want{retries: 2, delay: 2 * time.Millisecond})
		if want := map[bool]int64{true: 1, false: 3}[first]; seen.Load() != want {
			t.Errorf("first %v: the caller's interceptor saw %d calls, want %d", first, seen.Load(), want)
		}
	}
}

// TestGRPCStream: a server stream whose first two attempts fail with
// UNAVAILABLE is one call span over three attempts' spans; its span ends
// when the caller cancels it after the first message, with the context's
// error, and the call made 2 retries.
func TestGRPCStream(t *testing.T) {
	var calls atomic.Int64
	addr, stop := serveHealth(grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if calls.Add(1) <= 2 {
			return status.Error(grpccodes.Unavailable, "injected")
		}
		return handler(srv, ss)
	}))
	defer stop()
	tm := newTelemetry()
	conn := dial(t, tm, addr, false)
	ctx, cancel := context.WithCancel(context.Background())
	stream, err := healthpb.NewHealthClient(conn).Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if msg, err := stream.Recv(); err != nil || msg.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("Recv = %v, %v; want SERVING", msg, err)
	}
	cancel()
	spans, err := tm.ended(4)
	if err != nil {
		t.Fatal(err)
	}
	const watch = "grpc.health.v1.Health/Watch"
	// otelgrpc's status of a failed stream attempt is grpc-go's: without
	// an error at times (3 runs in 25 under -race), as the failure races
	// the request's send; not checked.
	checkGRPCSpans(t, spans, watch, codes.Error, "", spans[1].Status.Code, spans[2].Status.Code, codes.Error)
	if spans[0].Status.Description != context.Canceled.Error() {
		t.Errorf("call span's status %q, want %q", spans[0].Status.Description, context.Canceled)
	}
	checkGRPCMetrics(t, tm, watch, addr, want{retries: 2, delay: 2 * time.Millisecond})
}

// TestDialOptionsRefuses: DialOptions passes on NewClient's ParamError.
func TestDialOptionsRefuses(t *testing.T) {
	cfg := newTelemetry().config()
	var pe *backoff.ParamError
	bad := backoffgrpc.ClientConfig{Retrier: &backoff.Retrier{Policy: constant(time.Millisecond, 2)}, MaxReplayBytes: -1}
	if _, err := backoffotel.DialOptions(bad, cfg); !errors.As(err, &pe) {
		t.Errorf("DialOptions(MaxReplayBytes -1) = %v, want NewClient's ParamError", err)
	}
}

// TestDialOptionsNilRetrier: a nil Retrier is backoffgrpc's default, with
// the metrics' hooks added: a call whose first attempt fails is retried
// once, under one call span.
func TestDialOptionsNilRetrier(t *testing.T) {
	tm := newTelemetry()
	addr := healthServer(t, failFirst(1))
	opts, err := backoffotel.DialOptions(backoffgrpc.ClientConfig{}, tm.config())
	if err != nil {
		t.Fatal(err)
	}
	if err := check(dialWith(t, addr, opts)); err != nil {
		t.Fatalf("call: %v, want success after a retry", err)
	}
	spans, err := tm.ended(3)
	if err != nil {
		t.Fatal(err)
	}
	checkGRPCSpans(t, spans, checkMethod, codes.Unset, "", codes.Error, codes.Unset)
}

// TestGRPCHedgesAndWins: a hedged call records its hedges in
// GRPCHedgesMetric and a win by a hedge in GRPCHedgeWinsMetric, and the
// Hedging's own OnWin still hears the winner; a call whose first copy
// answers in time records neither. A stream closed before it receives is
// hedged: its first copy's UNAVAILABLE sends the second at once, which
// wins.
func TestGRPCHedgesAndWins(t *testing.T) {
	hang := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	answer := func(context.Context) error { return nil }
	late := func(context.Context) error { time.Sleep(60 * time.Millisecond); return nil }
	for _, c := range []struct {
		name         string
		copies       []func(context.Context) error // by copy number
		stream       bool                          // a Count stream whose first copy fails
		hedges, wins int                           // 0: not recorded
		onWin        string
	}{
		{"hedge wins", []func(context.Context) error{hang, answer}, false, 1, 1, "[2]"},
		{"first wins after the hedge", []func(context.Context) error{late, hang}, false, 1, 0, "[1]"},
		{"first in time", []func(context.Context) error{answer}, false, 0, 0, "[]"},
		{"stream closed before it receives", nil, true, 1, 1, "[2]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var addr string
			if c.stream {
				addr = streamsServer(t, 1)
			} else {
				addr = healthServer(t, func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
					n := 1
					if v := metadata.ValueFromIncomingContext(ctx, backoffgrpc.PreviousAttemptsKey); len(v) == 1 {
						n, _ = strconv.Atoi(v[0])
						n++
					}
					if err := c.copies[min(n, len(c.copies))-1](ctx); err != nil {
						return nil, err
					}
					return handler(ctx, req)
				})
			}
			tm := newTelemetry()
			heard := &wins{}
			opts, err := backoffotel.DialOptions(backoffgrpc.ClientConfig{Retrier: &backoff.Retrier{Policy: constant(time.Millisecond, 3)},
				Hedging: &backoffgrpc.Hedging{Delay: 20 * time.Millisecond, OnWin: heard.onWin}}, tm.config())
			if err != nil {
				t.Fatal(err)
			}
			conn := dialWith(t, addr, opts)
			method := checkMethod
			if c.stream {
				s := openStream(t, conn, &countDesc)
				for err == nil {
					err = s.RecvMsg(new(healthpb.HealthCheckResponse))
				}
				if err != io.EOF {
					t.Fatalf("stream: %v, want its end", err)
				}
				method = "test.Streams/Count"
				if got, want := fmt.Sprint(tm.points(t, backoffotel.GRPCRetriesMetric)), fmt.Sprintf("[{grpc.method=%s grpc.target=dns:///%s} count=1 sum=1]", method, addr); got != want {
					t.Errorf("%s = %s, want %s: one copy after the first", backoffotel.GRPCRetriesMetric, got, want)
				}
			} else if err := check(conn); err != nil {
				t.Fatal(err)
			}
			points := func(n int) string {
				if n == 0 {
					return "[]"
				}
				return fmt.Sprintf("[{grpc.method=%s grpc.target=dns:///%s} count=1 sum=%d]", method, addr, n)
			}
			for _, m := range []struct {
				name string
				n    int
			}{{backoffotel.GRPCHedgesMetric, c.hedges}, {backoffotel.GRPCHedgeWinsMetric, c.wins}} {
				if got := fmt.Sprint(tm.points(t, m.name)); got != points(m.n) {
					t.Errorf("%s = %s, want %s", m.name, got, points(m.n))
				}
			}
			heard.check(t, c.onWin)
		})
	}
}
