package backoffgrpc

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/test/bufconn"
)

// The tests' service, written by hand so that no protoc is needed: one
// method of each kind, messages of one string field, and a codec that
// sends the string's bytes.

type msg struct{ Text string }

type codec struct{}

func (codec) Marshal(v any) ([]byte, error)      { return []byte(v.(*msg).Text), nil }
func (codec) Unmarshal(data []byte, v any) error { v.(*msg).Text = string(data); return nil }
func (codec) Name() string                       { return "backoffgrpc-test" }

func init() { encoding.RegisterCodec(codec{}) }

const (
	unaryMethod  = "/test.Test/Unary"
	serverMethod = "/test.Test/Server"
	clientMethod = "/test.Test/Client"
	bidiMethod   = "/test.Test/Bidi"
)

// service is the tests' server: each field handles its method (nil fails
// the call). Every call is recorded in calls, by method.
type service struct {
	unary  func(ctx context.Context, in *msg) (*msg, error)
	server func(in *msg, ss grpc.ServerStream) error
	client func(ss grpc.ServerStream) error
	bidi   func(ss grpc.ServerStream) error

	mu    sync.Mutex
	calls map[string][]string // the calls' PreviousAttemptsKey values, joined by ","; "" for none
}

func (s *service) record(ctx context.Context, method string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.calls == nil {
		s.calls = map[string][]string{}
	}
	v := strings.Join(metadata.ValueFromIncomingContext(ctx, PreviousAttemptsKey), ",")
	s.calls[method] = append(s.calls[method], v)
}

// attempts returns the PreviousAttemptsKey values of method's calls so far.
func (s *service) attempts(method string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls[method]...)
}

func (s *service) count(method string) int { return len(s.attempts(method)) }

var serviceDesc = grpc.ServiceDesc{
	ServiceName: "test.Test",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Unary",
		Handler: func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
			in := new(msg)
			if err := dec(in); err != nil {
				return nil, err
			}
			s := srv.(*service)
			handler := func(ctx context.Context, req any) (any, error) {
				s.record(ctx, unaryMethod)
				return s.unary(ctx, req.(*msg))
			}
			if interceptor == nil {
				return handler(ctx, in)
			}
			return interceptor(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: unaryMethod}, handler)
		},
	}},
	Streams: []grpc.StreamDesc{
		{StreamName: "Server", ServerStreams: true, Handler: func(srv any, ss grpc.ServerStream) error {
			s := srv.(*service)
			s.record(ss.Context(), serverMethod)
			in := new(msg)
			if err := ss.RecvMsg(in); err != nil {
				return err
			}
			return s.server(in, ss)
		}},
		{StreamName: "Client", ClientStreams: true, Handler: func(srv any, ss grpc.ServerStream) error {
			s := srv.(*service)
			s.record(ss.Context(), clientMethod)
			return s.client(ss)
		}},
		{StreamName: "Bidi", ServerStreams: true, ClientStreams: true, Handler: func(srv any, ss grpc.ServerStream) error {
			s := srv.(*service)
			s.record(ss.Context(), bidiMethod)
			return s.bidi(ss)
		}},
	},
}

// streamDesc returns the descriptor of a stream method.
func streamDesc(method string) *grpc.StreamDesc {
	for i := range serviceDesc.Streams {
		if "/test.Test/"+serviceDesc.Streams[i].StreamName == method {
			return &serviceDesc.Streams[i]
		}
	}
	panic(method)
}

// serve starts a grpc server for svc on lis, stopped at the end of the test.
func serve(t testing.TB, lis net.Listener, svc *service, opts ...grpc.ServerOption) {
	srv := grpc.NewServer(opts...)
	srv.RegisterService(&serviceDesc, svc)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
}

// listen starts svc on a loopback TCP port and returns its address.
func listen(t testing.TB, svc *service, opts ...grpc.ServerOption) string {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serve(t, lis, svc, opts...)
	return lis.Addr().String()
}

// dial returns a connection to target with the tests' codec, closed at the
// end of the test.
func dial(t testing.TB, target string, opts ...grpc.DialOption) *grpc.ClientConn {
	opts = append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.CallContentSubtype(codec{}.Name())),
	}, opts...)
	cc, err := grpc.NewClient(target, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// dialBuf returns a connection to svc over an in-memory listener, which
// works inside a synctest bubble.
func dialBuf(t testing.TB, svc *service, opts ...grpc.DialOption) *grpc.ClientConn {
	lis := bufconn.Listen(1 << 20)
	serve(t, lis, svc)
	opts = append(opts, grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
		return lis.DialContext(ctx)
	}))
	return dial(t, "passthrough:///bufconn", opts...)
}

// client returns the interceptors of cfg, failing the test on an error.
func client(t testing.TB, cfg ClientConfig) *Client {
	t.Helper()
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// connect returns a connection to svc on loopback TCP through both of
// cfg's interceptors (cfg.Retrier nil meaning immediate(3)), and a pointer
// to the last error given to OnDone.
func connect(t *testing.T, svc *service, cfg ClientConfig) (*grpc.ClientConn, *error) {
	done := new(error)
	r := cfg.Retrier
	if r == nil {
		r = immediate(3)
	}
	r2 := *r
	r2.OnDone = func(_ context.Context, _ int, err error) { *done = err }
	cfg.Retrier = &r2
	c := client(t, cfg)
	return dial(t, listen(t, svc), grpc.WithUnaryInterceptor(c.UnaryInterceptor()), grpc.WithStreamInterceptor(c.StreamInterceptor())), done
}

// call makes a unary call of text on cc.
func call(ctx context.Context, cc *grpc.ClientConn, text string, opts ...grpc.CallOption) (string, error) {
	out := new(msg)
	err := cc.Invoke(ctx, unaryMethod, &msg{Text: text}, out, opts...)
	return out.Text, err
}

// immediate retries at once, n attempts in all.
func immediate(n int) *backoff.Retrier {
	return &backoff.Retrier{Policy: backoff.Must(backoff.NewExponential(backoff.Config{Base: time.Nanosecond, Cap: time.Nanosecond, MaxAttempts: n}))}
}

// constant waits d between attempts, n attempts in all.
func constant(d time.Duration, n int) *backoff.Retrier {
	return &backoff.Retrier{Policy: backoff.Must(backoff.NewExponential(backoff.Config{Base: d, Cap: d, MaxAttempts: n}))}
}
