package backoffgrpc

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
)

// TestStreamHopsAfterCommit is TestHopsThroughHeaders for a server stream
// that a Client has committed (its first message, or its headers read with
// Header, arrived) before its server failed with its give-up: the Client's
// RecvMsg returns an error that matches backoff.ErrRetriedBelow, as a
// committed unary call's does (TestCommittedDontRetrySaysSo), so a service
// that passes it on says not to retry, and 3 streams reach the bottom for
// one at the top, not 9.
func TestStreamHopsAfterCommit(t *testing.T) {
	for _, commit := range []string{"message", "header"} {
		t.Run(commit, func(t *testing.T) {
			interceptor := grpc.StreamInterceptor(StreamServerInterceptor(ServerConfig{}))
			bottom := &service{server: func(*msg, grpc.ServerStream) error { return status.Error(codes.Unavailable, "bottom down") }}
			// lower answers at once (a message, or headers), then relays
			// to the bottom through a Client of 3 attempts.
			lowerClient := client(t, ClientConfig{Retrier: immediate(3)})
			toBottom := dial(t, listen(t, bottom), grpc.WithStreamInterceptor(lowerClient.StreamInterceptor()))
			lower := &service{server: func(in *msg, ss grpc.ServerStream) error {
				if commit == "message" {
					if err := ss.SendMsg(&msg{Text: "first"}); err != nil {
						return err
					}
				} else if err := ss.SendHeader(metadata.Pairs("request-id", "1")); err != nil {
					return err
				}
				_, err := recvAll(ss.Context(), toBottom, in.Text)
				return err
			}}
			// upper reads lower's stream to its end and fails with its
			// error, through a Client of 3 attempts.
			upperClient := client(t, ClientConfig{Retrier: immediate(3)})
			toLower := dial(t, listen(t, lower, interceptor), grpc.WithStreamInterceptor(upperClient.StreamInterceptor()))
			var mu sync.Mutex
			var relayed error // the upper service's last error from its Client
			upper := &service{server: func(in *msg, ss grpc.ServerStream) error {
				s, err := toLower.NewStream(ss.Context(), streamDesc(serverMethod), serverMethod)
				if err != nil {
					return err
				}
				s.SendMsg(in)
				s.CloseSend()
				if commit == "header" {
					s.Header()
				}
				_, err = recvTexts(s)
				mu.Lock()
				relayed = err
				mu.Unlock()
				return err
			}}
			topClient := client(t, ClientConfig{Retrier: immediate(3)})
			top := dial(t, listen(t, upper, interceptor), grpc.WithStreamInterceptor(topClient.StreamInterceptor()))
			_, err := recvAll(context.Background(), top, "hi")
			if status.Code(err) != codes.Unavailable || bottom.count(serverMethod) != 3 || upper.count(serverMethod) != 1 {
				t.Errorf("error %v, %d streams at the bottom, %d at the upper service; want Unavailable, 3 and 1", err, bottom.count(serverMethod), upper.count(serverMethod))
			}
			mu.Lock()
			defer mu.Unlock()
			if !errors.Is(relayed, backoff.ErrRetriedBelow) || status.Code(relayed) != codes.Unavailable {
				t.Errorf("the upper service's Client returned %v (%v); want Unavailable matching ErrRetriedBelow", relayed, status.Code(relayed))
			}
		})
	}
}

// TestRetriedBelowStatusForwarded: a service passes on, as its handler's
// error, its Client's failure whose server said not to retry (INTERNAL or
// UNAVAILABLE: the Client's *backoff.Error of 1 attempt). Its caller gets
// the bottom's code and details exactly, the bottom's text in the message,
// and pushback -1; in the service, the error compares as the bottom's
// status, its Err reads as it, and it matches backoff.ErrRetriedBelow.
func TestRetriedBelowStatusForwarded(t *testing.T) {
	for _, code := range []codes.Code{codes.Internal, codes.Unavailable} {
		t.Run(code.String(), func(t *testing.T) {
			st, err := status.New(code, "broken").WithDetails(durationpb.New(1500 * time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			bottom := &service{unary: func(ctx context.Context, _ *msg) (*msg, error) {
				grpc.SetTrailer(ctx, metadata.Pairs(PushbackKey, "-1"))
				return nil, st.Err()
			}}
			toBottom := dial(t, listen(t, bottom), grpc.WithUnaryInterceptor(client(t, ClientConfig{Retrier: immediate(3)}).UnaryInterceptor()))
			var mu sync.Mutex
			var relayed error
			middle := &service{unary: func(ctx context.Context, in *msg) (*msg, error) {
				_, err := call(ctx, toBottom, in.Text)
				mu.Lock()
				relayed = err
				mu.Unlock()
				return nil, err
			}}
			var trailer metadata.MD
			_, err = call(context.Background(), dial(t, listen(t, middle, grpc.UnaryInterceptor(UnaryServerInterceptor(ServerConfig{})))), "hi", grpc.Trailer(&trailer))
			got := status.Convert(err)
			if got.Code() != code || !proto.Equal(got.Proto().Details[0], st.Proto().Details[0]) || !equal(trailer[PushbackKey], "-1") || bottom.count(unaryMethod) != 1 {
				t.Errorf("the caller got %v, details %v, pushback %q, after %d calls at the bottom; want %v, %v, [-1], 1", err, got.Details(), trailer[PushbackKey], bottom.count(unaryMethod), code, st.Details())
			}
			mu.Lock()
			defer mu.Unlock()
			if !errors.Is(relayed, backoff.ErrRetriedBelow) || !errors.Is(relayed, st.Err()) || status.Code(relayed) != code {
				t.Errorf("in the service: %v; want it to match ErrRetriedBelow and the bottom's status", relayed)
			}
			var e *backoff.Error
			if !strings.HasSuffix(got.Message(), "desc = broken") || !errors.As(relayed, &e) || e.Err.Error() != st.Err().Error() {
				t.Errorf("the caller got message %q, the service's error reads %q; want the bottom's text in both, the service's Err %q", got.Message(), relayed, st.Err())
			}
		})
	}
}

// TestBuiltinRetriedCommittedHops: a service whose Client sits on a channel
// with grpc-go's retryPolicy, and whose call grpc-go retried twice before
// its third attempt was committed (headers, then UNAVAILABLE), passes the
// failure on: grpc-go's loop retried for this request, so the service's
// caller is told not to retry (pushback -1), as it is when grpc-go gives up
// on an uncommitted call.
func TestBuiltinRetriedCommittedHops(t *testing.T) {
	for _, committed := range []bool{false, true} {
		var n atomic.Int64
		bottom := &service{unary: func(ctx context.Context, _ *msg) (*msg, error) {
			if n.Add(1) == 3 && committed {
				grpc.SendHeader(ctx, metadata.Pairs("request-id", "1"))
			}
			return nil, status.Error(codes.Unavailable, "bottom down")
		}}
		c := client(t, ClientConfig{Retrier: immediate(3)})
		toBottom := dial(t, listen(t, bottom), grpc.WithDefaultServiceConfig(retryConfig), grpc.WithUnaryInterceptor(c.UnaryInterceptor()))
		middle := &service{unary: func(ctx context.Context, in *msg) (*msg, error) {
			_, err := call(ctx, toBottom, in.Text)
			return nil, err
		}}
		var trailer metadata.MD
		_, err := call(context.Background(), dial(t, listen(t, middle, grpc.UnaryInterceptor(UnaryServerInterceptor(ServerConfig{})))), "hi", grpc.Trailer(&trailer))
		if status.Code(err) != codes.Unavailable || bottom.count(unaryMethod) != 3 || !equal(trailer[PushbackKey], "-1") {
			t.Errorf("last attempt committed %v: %v after %d calls at the bottom, pushback %q; want Unavailable after 3, [-1]", committed, err, bottom.count(unaryMethod), trailer[PushbackKey])
		}
	}
}
