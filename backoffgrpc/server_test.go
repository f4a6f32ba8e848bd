package backoffgrpc

import (
	"context"
	"errors"
	"testing"

	"github.com/backoffgo/backoff"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// gaveUp runs a loop of 2 attempts over a dependency that is down, as a
// handler's own retries would, and returns its give-up, whose status is
// the dependency's.
func gaveUp(ctx context.Context) error {
	return backoff.Do(ctx, func(context.Context) error { return status.Error(codes.Unavailable, "dependency down") }, immediate(2).Policy)
}

// TestServerInterceptorPaths: what a handler whose loop gave up (or did
// not) answers through UnaryServerInterceptor, read by a plain grpc client:
// the trailer says not to retry the give-up the handler returns, as a
// Trailers-Only response unless the handler had set or sent a header; a
// success, or a failure that is not the give-up, carries no pushback.
func TestServerInterceptorPaths(t *testing.T) {
	for _, tt := range []struct {
		name     string
		handler  func(ctx context.Context) error
		code     codes.Code
		pushback []string
		header   bool // the answer has response headers
	}{
		{"gave up", gaveUp, codes.Unavailable, []string{"-1"}, false},
		{"gave up after SendHeader", func(ctx context.Context) error {
			grpc.SendHeader(ctx, metadata.Pairs("request-id", "1"))
			return gaveUp(ctx)
		}, codes.Unavailable, []string{"-1"}, true},
		{"gave up after SetHeader", func(ctx context.Context) error {
			grpc.SetHeader(ctx, metadata.Pairs("request-id", "1"))
			return gaveUp(ctx)
		}, codes.Unavailable, []string{"-1"}, true},
		{"gave up, returns a plain error", func(ctx context.Context) error {
			gaveUp(ctx)
			return errors.New("plain")
		}, codes.Unknown, nil, false},
		{"gave up, then succeeds", func(ctx context.Context) error {
			gaveUp(ctx)
			return nil
		}, codes.OK, nil, true},
		{"retried and succeeded, then fails", func(ctx context.Context) error {
			n := 0
			backoff.Do(ctx, func(context.Context) error {
				if n++; n == 1 {
					return errors.New("once")
				}
				return nil
			}, immediate(2).Policy)
			return status.Error(codes.Unavailable, "later")
		}, codes.Unavailable, nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			svc := &service{unary: func(ctx context.Context, in *msg) (*msg, error) {
				if err := tt.handler(ctx); err != nil {
					return nil, err
				}
				return in, nil
			}}
			cc := dial(t, listen(t, svc, grpc.UnaryInterceptor(UnaryServerInterceptor(ServerConfig{}))))
			var header, trailer metadata.MD
			_, err := call(context.Background(), cc, "hi", grpc.Header(&header), grpc.Trailer(&trailer))
			if status.Code(err) != tt.code || !equal(trailer[PushbackKey], tt.pushback...) || (header != nil) != tt.header {
				t.Errorf("error %v, header %v, trailer %v; want %v, pushback %q, header %v", err, header, trailer, tt.code, tt.pushback, tt.header)
			}
		})
	}
}

// TestStreamServerInterceptorPaths: the same through
// StreamServerInterceptor: a Trailers-Only "do not retry" for a handler
// that gave up before sending anything, which grpc-go's own retries of the
// stream honour (1 stream, not 3); after a message, the trailer still says
// so and a Client stops, committed.
func TestStreamServerInterceptorPaths(t *testing.T) {
	for _, tt := range []struct {
		name   string
		first  bool // the handler sends a message before it gives up
		header bool
	}{{"gave up", false, false}, {"gave up after a message", true, true}} {
		t.Run(tt.name, func(t *testing.T) {
			svc := &service{server: func(in *msg, ss grpc.ServerStream) error {
				if tt.first {
					if err := ss.SendMsg(in); err != nil {
						return err
					}
				}
				return gaveUp(ss.Context())
			}}
			addr := listen(t, svc, grpc.StreamInterceptor(StreamServerInterceptor(ServerConfig{})))
			s, err := dial(t, addr).NewStream(context.Background(), streamDesc(serverMethod), serverMethod)
			if err != nil {
				t.Fatal(err)
			}
			s.SendMsg(&msg{Text: "m"})
			s.CloseSend()
			for err = s.RecvMsg(new(msg)); err == nil; err = s.RecvMsg(new(msg)) {
			}
			header, _ := s.Header()
			if status.Code(err) != codes.Unavailable || !equal(s.Trailer()[PushbackKey], "-1") || (header != nil) != tt.header {
				t.Errorf("error %v, header %v, trailer %v; want Unavailable, pushback -1, header %v", err, header, s.Trailer(), tt.header)
			}

			builtin := dial(t, addr, grpc.WithDefaultServiceConfig(retryConfig))
			before := svc.count(serverMethod)
			if _, err := recvAll(context.Background(), builtin, "m"); status.Code(err) != codes.Unavailable || svc.count(serverMethod)-before != 1 {
				t.Errorf("grpc-go's retries: %v after %d streams, want Unavailable after 1", err, svc.count(serverMethod)-before)
			}

			var done error
			r := immediate(3)
			r.OnDone = func(_ context.Context, _ int, err error) { done = err }
			c := client(t, ClientConfig{Retrier: r})
			before = svc.count(serverMethod)
			_, err = recvAll(context.Background(), dial(t, addr, grpc.WithStreamInterceptor(c.StreamInterceptor())), "m")
			// OnDone is told at the commit, the first message: nil.
			if status.Code(err) != codes.Unavailable || (tt.first != (done == nil)) || !tt.first && !errors.Is(done, backoff.ErrRetriedBelow) || svc.count(serverMethod)-before != 1 {
				t.Errorf("Client: %v (OnDone %v) after %d streams, want Unavailable after 1, OnDone nil after a message and ErrRetriedBelow before", err, done, svc.count(serverMethod)-before)
			}
		})
	}
}

// TestServerInterceptorKeepsHandlersPushback: a handler that set its own
// PushbackKey and whose loop gave up answers with more than one value,
// which says "do not retry" to a Client and to grpc-go's retries alike.
func TestServerInterceptorKeepsHandlersPushback(t *testing.T) {
	svc := &service{unary: func(ctx context.Context, in *msg) (*msg, error) {
		grpc.SetTrailer(ctx, metadata.Pairs(PushbackKey, "250"))
		return nil, gaveUp(ctx)
	}}
	addr := listen(t, svc, grpc.UnaryInterceptor(UnaryServerInterceptor(ServerConfig{})))
	var trailer metadata.MD
	if _, err := call(context.Background(), dial(t, addr), "hi", grpc.Trailer(&trailer)); status.Code(err) != codes.Unavailable || !equal(trailer[PushbackKey], "250", "-1") {
		t.Errorf("error %v, trailer %v; want Unavailable and pushback 250, -1", err, trailer)
	}
	for _, cc := range []*grpc.ClientConn{
		dial(t, addr, grpc.WithDefaultServiceConfig(retryConfig)),
		dial(t, addr, grpc.WithUnaryInterceptor(client(t, ClientConfig{Retrier: immediate(3)}).UnaryInterceptor())),
	} {
		before := svc.count(unaryMethod)
		if _, err := call(context.Background(), cc, "hi"); status.Code(err) != codes.Unavailable || svc.count(unaryMethod)-before != 1 {
			t.Errorf("error %v after %d calls, want Unavailable after 1", err, svc.count(unaryMethod)-before)
		}
	}
}

// TestZeroServerConfigCountsRetries: the zero ServerConfig counts the
// calls with a Share of retryshare's defaults, one for each interceptor: a
// failure says not to retry (pushback -1) once the allowance of 4 is spent
// and the failures are significant. A server sees first calls, which
// succeed, then retries, which fail: after 18 first calls, the retries'
// failures are not significant until the fifth (5 of 23: P = 0.07 ≤ 0.1),
// and 4 were let be retried by then; after 1 first call, the caller's
// retries are over from the second (2 of 3: significant, P = 0.028), which
// is refused, and so are the next ones as they arrive. Each
// interceptor counts its own: the second method's retries find a Share
// of their own, untouched.
func TestZeroServerConfigCountsRetries(t *testing.T) {
	for _, tt := range []struct {
		first, retries int
		marked         []bool // per retry
	}{
		{18, 5, []bool{false, false, false, false, true}},
		{1, 5, []bool{false, true, true, true, true}},
	} {
		var cfg ServerConfig
		fail := func(ctx context.Context) error {
			if len(metadata.ValueFromIncomingContext(ctx, PreviousAttemptsKey)) == 0 {
				return nil
			}
			return status.Error(codes.Unavailable, "down")
		}
		svc := &service{
			unary: func(ctx context.Context, in *msg) (*msg, error) {
				if err := fail(ctx); err != nil {
					return nil, err
				}
				return in, nil
			},
			server: func(_ *msg, ss grpc.ServerStream) error { return fail(ss.Context()) },
		}
		cc := dial(t, listen(t, svc, grpc.UnaryInterceptor(UnaryServerInterceptor(cfg)), grpc.StreamInterceptor(StreamServerInterceptor(cfg))))
		for _, method := range []string{unaryMethod, serverMethod} {
			for i := range tt.first {
				if _, pushback := answerCtx(t, context.Background(), cc, method); len(pushback) != 0 {
					t.Errorf("%s, %d first calls: first call %d answered pushback %q, want none", method, tt.first, i+1, pushback)
				}
			}
			retry := metadata.AppendToOutgoingContext(context.Background(), PreviousAttemptsKey, "1")
			for i, marked := range tt.marked {
				_, pushback := answerCtx(t, retry, cc, method)
				if got := len(pushback) == 1 && pushback[0] == "-1"; got != marked || !got && len(pushback) != 0 {
					t.Errorf("%s, %d first calls: retry %d answered pushback %q, want -1: %v", method, tt.first, i+1, pushback, marked)
				}
			}
		}
	}
}

// answerCtx makes a call of method on cc with ctx, a unary call or a
// server stream, and returns its code and the pushback of its trailer.
func answerCtx(t *testing.T, ctx context.Context, cc *grpc.ClientConn, method string) (codes.Code, []string) {
	t.Helper()
	var trailer metadata.MD
	var err error
	if method == unaryMethod {
		_, err = call(ctx, cc, "hi", grpc.Trailer(&trailer))
	} else {
		s, serr := cc.NewStream(ctx, streamDesc(method), method)
		if serr != nil {
			t.Fatal(serr)
		}
		s.SendMsg(&msg{Text: "m"})
		s.CloseSend()
		_, err = recvTexts(s)
		trailer = s.Trailer()
	}
	return status.Code(err), trailer[PushbackKey]
}
