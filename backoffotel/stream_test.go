package backoffotel_test

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	"google.golang.org/grpc"
	grpccodes "google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// The finite streams of a test service, whose messages are the health
// service's: Count answers a request with its two responses (a server
// stream), Collect reads the requests to their end and answers once (a
// client stream).
var (
	countDesc   = grpc.StreamDesc{StreamName: "Count", ServerStreams: true, Handler: count}
	collectDesc = grpc.StreamDesc{StreamName: "Collect", ClientStreams: true, Handler: collect}
	streamsDesc = grpc.ServiceDesc{ServiceName: "test.Streams", HandlerType: (*any)(nil), Streams: []grpc.StreamDesc{countDesc, collectDesc}}
)

func count(_ any, ss grpc.ServerStream) error {
	if err := ss.RecvMsg(new(healthpb.HealthCheckRequest)); err != nil {
		return err
	}
	for range 2 {
		if err := ss.SendMsg(&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}); err != nil {
			return err
		}
	}
	return nil
}

func collect(_ any, ss grpc.ServerStream) error {
	for {
		if err := ss.RecvMsg(new(healthpb.HealthCheckRequest)); errors.Is(err, io.EOF) {
			return ss.SendMsg(&healthpb.HealthCheckResponse{})
		} else if err != nil {
			return err
		}
	}
}

// streamsServer starts the test service (and health) on loopback TCP, its first fail
// stream calls failing with UNAVAILABLE, and returns its address.
func streamsServer(t *testing.T, fail int64) string {
	var calls atomic.Int64
	addr, stop := serveHealth(grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if calls.Add(1) <= fail {
			return status.Error(grpccodes.Unavailable, "injected")
		}
		return handler(srv, ss)
	}))
	t.Cleanup(stop)
	return addr
}

// openStream opens desc's stream of the test service on conn, sends one
// request and closes the send side.
func openStream(t *testing.T, conn *grpc.ClientConn, desc *grpc.StreamDesc) grpc.ClientStream {
	t.Helper()
	s, err := conn.NewStream(context.Background(), desc, "/test.Streams/"+desc.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SendMsg(&healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	if err := s.CloseSend(); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestGRPCStreamEnds: a stream's span ends with it: a server stream's when
// RecvMsg returns io.EOF, a client stream's when its response has come,
// both Unset after one retry; a stream that fails three times ends, an
// error of reason exhausted, at its first RecvMsg.
func TestGRPCStreamEnds(t *testing.T) {
	for _, tt := range []struct {
		desc     *grpc.StreamDesc
		fail     int64
		messages int
		reason   string
	}{
		{&countDesc, 1, 2, ""},
		{&collectDesc, 1, 1, ""},
		{&countDesc, 1 << 30, 0, "exhausted"},
	} {
		t.Run(tt.desc.StreamName+tt.reason, func(t *testing.T) {
			tm := newTelemetry()
			addr := streamsServer(t, tt.fail)
			s := openStream(t, dial(t, tm, addr, false), tt.desc)
			var err error
			n := 0 // messages received
			for {
				if err = s.RecvMsg(new(healthpb.HealthCheckResponse)); err != nil {
					break
				}
				if n++; !tt.desc.ServerStreams {
					break
				}
			}
			attempts := 2
			callCode, last := codes.Unset, codes.Unset
			if tt.reason != "" {
				attempts, callCode, last = 3, codes.Error, codes.Error
				if status.Code(err) != grpccodes.Unavailable {
					t.Errorf("RecvMsg = %v, want UNAVAILABLE", err)
				}
			} else if end := map[bool]error{true: io.EOF, false: nil}[tt.desc.ServerStreams]; n != tt.messages || err != end {
				t.Errorf("%d messages, then %v; want %d, then %v", n, err, tt.messages, end)
			}
			// The call's span has ended: before any wait, as RecvMsg ended.
			spans := tm.spans.GetSpans()
			var call []string
			for _, sp := range spans {
				if !sp.Parent.IsValid() {
					call = append(call, sp.Name+" "+sp.Status.Code.String())
				}
			}
			if want := "call test.Streams/" + tt.desc.StreamName + " " + callCode.String(); len(call) != 1 || call[0] != want {
				t.Errorf("root spans ended as RecvMsg returned: %v, want [%s]", call, want)
			}
			method := "test.Streams/" + tt.desc.StreamName
			all, err := tm.ended(1 + attempts)
			if err != nil {
				t.Fatal(err)
			}
			codesWant := make([]codes.Code, attempts)
			for i := range codesWant {
				codesWant[i] = all[1+i].Status.Code // a failed attempt's is grpc-go's (see TestGRPCStream)
			}
			codesWant[attempts-1] = last
			checkGRPCSpans(t, all, method, callCode, tt.reason, codesWant...)
			checkGRPCMetrics(t, tm, method, addr, want{retries: attempts - 1, delay: time.Duration(attempts-1) * time.Millisecond, reason: tt.reason})
		})
	}
}

// TestGRPCStreamNotOpened: a stream that cannot open, its context ended
// before, is a call span of status Error with the context's error, over no
// attempt, and a give-up, canceled, without retries.
func TestGRPCStreamNotOpened(t *testing.T) {
	tm := newTelemetry()
	addr := streamsServer(t, 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := dial(t, tm, addr, false).NewStream(ctx, &countDesc, "/test.Streams/Count"); status.Code(err) != grpccodes.Canceled {
		t.Fatalf("NewStream = %v, want Canceled", err)
	}
	spans, err := tm.ended(1)
	if err != nil {
		t.Fatal(err)
	}
	checkGRPCSpans(t, spans, "test.Streams/Count", codes.Error, "canceled")
	checkGRPCMetrics(t, tm, "test.Streams/Count", addr, want{reason: "canceled"})
}
