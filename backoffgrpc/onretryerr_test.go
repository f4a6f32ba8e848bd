package backoffgrpc

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
)

// TestOnRetryErrIsFailureErr: ClientConfig.Retrier's doc promises that
// "OnRetry's error is Failure.Err", the error ShouldRetry saw. With the
// Retrier's RetryInner set, a failure whose server said not to retry
// (pushback -1) is retried when ShouldRetry agrees; ShouldRetry then gets
// grpc's status error, but OnRetry gets a different value, the
// belowError that wraps it (client.go failure: e.err = belowFailure(err)
// after f.Err = err), for unary calls and streams alike.
func TestOnRetryErrIsFailureErr(t *testing.T) {
	for _, method := range []string{unaryMethod, serverMethod} {
		t.Run(method, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fail := failing(1, pushback(codes.Unavailable, "-1"))
				var calls atomic.Int64
				refuse := pushback(codes.Unavailable, "-1")
				svc := &service{
					unary: fail,
					server: func(in *msg, ss grpc.ServerStream) error {
						if calls.Add(1) == 1 {
							return refuse(ss.Context())
						}
						return ss.SendMsg(in)
					},
				}
				var asked, announced []error
				r := immediate(3)
				r.RetryInner = true
				r.OnRetry = func(_ context.Context, _ int, err error, _ time.Duration) { announced = append(announced, err) }
				c := client(t, ClientConfig{Retrier: r, ShouldRetry: func(f Failure) bool {
					asked = append(asked, f.Err)
					return DefaultShouldRetry(f)
				}})
				cc := dialBuf(t, svc, grpc.WithUnaryInterceptor(c.UnaryInterceptor()), grpc.WithStreamInterceptor(c.StreamInterceptor()))
				if err := callMethod(context.Background(), cc, method); err != nil {
					t.Fatalf("call: %v; want the retry's success", err)
				}
				if len(asked) != 1 || len(announced) != 1 {
					t.Fatalf("ShouldRetry asked about %v, OnRetry announced %v; want one retry", asked, announced)
				}
				if announced[0] != asked[0] {
					t.Errorf("OnRetry's error is %T %v; want Failure.Err, the %T that ShouldRetry saw", announced[0], announced[0], asked[0])
				}
			})
		})
	}
}
