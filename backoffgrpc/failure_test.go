package backoffgrpc

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/backoffgo/backoff"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// TestEveryFailureIsBackoffError: every failure of a call through the
// interceptors' loop, a unary call's or a stream's before the commit (its
// RecvMsg, after a Header that returned none, or the interceptor's own
// open error), is the *backoff.Error given to OnDone, even after one
// attempt or none: its Reason says why the loop stopped, and status.Code
// and status.FromError read the last attempt's code, or the context's for
// a context that had ended. A stream whose Header returned the server's
// headers is committed there, the loop done (OnDone nil): its RecvMsg then
// returns the stream's error as grpc returns it.
func TestEveryFailureIsBackoffError(t *testing.T) {
	committed := func(ctx context.Context) error {
		grpc.SetHeader(ctx, metadata.Pairs("request-id", "1"))
		return status.Error(codes.Unavailable, "after answering")
	}
	failOpen := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		return nil, status.Error(codes.Internal, "injected: open failed")
	}
	for _, tt := range []struct {
		name     string
		answer   func(context.Context) error
		open     grpc.StreamClientInterceptor // chained after the Client's
		ended    bool                         // the context ended before the call
		reason   error
		attempts int
		code     codes.Code
	}{
		{"not retried", code(codes.Internal), nil, false, backoff.ErrPermanent, 1, codes.Internal},
		{"committed", committed, nil, false, ErrCommitted, 1, codes.Unavailable},
		{"the server said not to retry", pushback(codes.Internal, "-1"), nil, false, backoff.ErrRetriedBelow, 1, codes.Internal},
		{"exhausted", code(codes.Unavailable), nil, false, backoff.ErrExhausted, 3, codes.Unavailable},
		{"the context ended before", code(codes.Unavailable), nil, true, context.Canceled, 0, codes.Canceled},
		{"the stream's open failed", nil, failOpen, false, backoff.ErrPermanent, 1, codes.Internal},
	} {
		for _, method := range []string{unaryMethod, serverMethod, serverMethod + " Header first"} {
			if tt.open != nil && method == unaryMethod {
				continue
			}
			t.Run(tt.name+" "+method, func(t *testing.T) {
				svc := answering(tt.answer)
				var done error
				r := immediate(3)
				r.OnDone = func(_ context.Context, _ int, err error) { done = err }
				c := client(t, ClientConfig{Retrier: r})
				opts := []grpc.DialOption{grpc.WithUnaryInterceptor(c.UnaryInterceptor()), grpc.WithChainStreamInterceptor(c.StreamInterceptor())}
				if tt.open != nil {
					opts = append(opts, grpc.WithChainStreamInterceptor(tt.open))
				}
				cc := dial(t, listen(t, svc), opts...)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if tt.ended {
					cancel()
				}
				var err error
				switch method {
				case unaryMethod:
					_, err = call(ctx, cc, "hi")
				case serverMethod:
					_, err = recvAll(ctx, cc, "m")
				default:
					err = headerThenRecv(ctx, cc)
				}
				var e *backoff.Error
				if tt.reason == ErrCommitted && method != unaryMethod && method != serverMethod {
					if status.Code(err) != tt.code || errors.As(err, &e) || done != nil {
						t.Errorf("error %v (%T), OnDone %v; want grpc's %v, OnDone nil", err, err, done, tt.code)
					}
					return
				}
				if !errors.As(err, &e) || e.Attempts != tt.attempts || !errors.Is(err, tt.reason) || done != err {
					t.Fatalf("error %v (%T), OnDone %v; want the *backoff.Error of %d attempts, %v, given to OnDone", err, err, done, tt.attempts, tt.reason)
				}
				if s, ok := status.FromError(err); !ok || s.Code() != tt.code || status.Code(err) != tt.code {
					t.Errorf("status %v (%v); want code %v", s, ok, tt.code)
				}
				if tt.attempts > 0 && status.Code(e.Err) != tt.code {
					t.Errorf("last attempt's error %v; want code %v", e.Err, tt.code)
				}
			})
		}
	}
}

// headerThenRecv opens a server stream, sends it a message, and calls
// Header, which must return no headers and no error for a stream that
// fails, then RecvMsg, whose error it returns.
func headerThenRecv(ctx context.Context, cc *grpc.ClientConn) error {
	s, err := cc.NewStream(ctx, streamDesc(serverMethod), serverMethod)
	if err != nil {
		return err
	}
	s.SendMsg(&msg{Text: "m"})
	s.CloseSend()
	if md, err := s.Header(); err != nil || md != nil && len(md["request-id"]) == 0 {
		return errors.New("Header returned an error or unexpected headers")
	}
	if err := s.RecvMsg(new(msg)); err != io.EOF {
		return err
	}
	return errors.New("RecvMsg returned io.EOF")
}
