package backoffgrpc

import (
	"context"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// TestUnarySuccessAllocs: a unary call that succeeds at once allocates,
// through UnaryInterceptor, no more than the same call without it whose
// caller asks grpc for the header and trailer (which grpc copies for each
// attempt, and which the interceptor needs to tell a committed failure and
// read the pushback), whether the caller asks for them (the interceptor
// then reads the caller's) or not; around an invoker that allocates
// nothing, the interceptor allocates nothing. All are measured against one
// server on loopback TCP, in the same process.
func TestUnarySuccessAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	svc := &service{unary: func(_ context.Context, in *msg) (*msg, error) { return in, nil }}
	target := listen(t, svc)
	c := client(t, ClientConfig{Retrier: immediate(3)})
	var header, trailer metadata.MD
	mdOpts := []grpc.CallOption{grpc.Header(&header), grpc.Trailer(&trailer)}
	allocs := func(cc *grpc.ClientConn, opts []grpc.CallOption) float64 {
		in, out := &msg{Text: "hi"}, new(msg)
		return testing.AllocsPerRun(500, func() {
			if err := cc.Invoke(context.Background(), unaryMethod, in, out, opts...); err != nil {
				t.Fatal(err)
			}
		})
	}
	bare, through := dial(t, target), dial(t, target, c.DialOptions()...)
	floor := allocs(bare, mdOpts)
	if ours := allocs(through, nil); ours > floor {
		t.Errorf("%v allocations per call through the interceptor, %v without it for a caller that asks for header and trailer; want no more", ours, floor)
	}
	if ours := allocs(through, mdOpts); ours > floor {
		t.Errorf("%v allocations per call through the interceptor with the caller's header and trailer, %v without it; want no more", ours, floor)
	}
	invoker := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error { return nil }
	interceptor := c.UnaryInterceptor()
	if n := testing.AllocsPerRun(500, func() {
		interceptor(context.Background(), unaryMethod, nil, nil, nil, invoker, grpc.StaticMethod())
	}); n != 0 {
		t.Errorf("%v allocations per call around an invoker that allocates nothing, want 0", n)
	}
}
