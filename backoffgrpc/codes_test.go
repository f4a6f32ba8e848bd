package backoffgrpc

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestInternalAtAttemptTimeout: an INTERNAL answer that arrives as the
// attempt's AttemptTimeout runs out is the server's INTERNAL, not the
// attempt's timeout, and is not retried: 60 calls to a server on loopback
// TCP that answers 0.5 ms before the deadline it sees.
func TestInternalAtAttemptTimeout(t *testing.T) {
	svc := &service{unary: func(ctx context.Context, _ *msg) (*msg, error) {
		dl, _ := ctx.Deadline()
		time.Sleep(time.Until(dl) - 500*time.Microsecond)
		return nil, status.Error(codes.Internal, "injected Internal")
	}}
	var seen, retried atomic.Int64 // INTERNAL answers that ShouldRetry saw, and retried
	c := client(t, ClientConfig{Retrier: immediate(2), AttemptTimeout: 20 * time.Millisecond, ShouldRetry: func(f Failure) bool {
		answer := f.Err
		if f.Timeout {
			answer = errors.Unwrap(f.Err) // what the attempt returned
		}
		retry := DefaultShouldRetry(f)
		if status.Code(answer) == codes.Internal {
			seen.Add(1)
			if retry {
				retried.Add(1)
			}
		}
		return retry
	}})
	cc := dial(t, listen(t, svc), grpc.WithUnaryInterceptor(c.UnaryInterceptor()))
	for range 60 {
		call(context.Background(), cc, "hi")
	}
	if retried.Load() != 0 {
		t.Errorf("%d of %d INTERNAL answers retried (taken for the attempt's timeout); want none", retried.Load(), seen.Load())
	}
	if seen.Load() == 0 {
		t.Errorf("no INTERNAL answer came before the attempt's end: the test shows nothing")
	}
}

// TestStreamInternalReadAfterAttemptTimeout: a stream whose server answered
// INTERNAL at once, read only after its AttemptTimeout ran out, fails with
// that INTERNAL after one attempt, not with a timeout that is retried.
func TestStreamInternalReadAfterAttemptTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := &service{server: func(*msg, grpc.ServerStream) error { return status.Error(codes.Internal, "injected Internal") }}
		c := client(t, ClientConfig{Retrier: immediate(3), AttemptTimeout: time.Second})
		cc := dialBuf(t, svc, grpc.WithStreamInterceptor(c.StreamInterceptor()))
		s, err := cc.NewStream(context.Background(), streamDesc(serverMethod), serverMethod)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.SendMsg(&msg{Text: "m"}); err != nil {
			t.Fatal(err)
		}
		s.CloseSend()
		synctest.Wait()             // the server's answer has come
		time.Sleep(2 * time.Second) // the attempt's timer has run out
		_, err = recvTexts(s)
		if status.Code(err) != codes.Internal || isTimeout(err) || svc.count(serverMethod) != 1 {
			t.Errorf("error %v after %d streams; want the server's INTERNAL after 1", err, svc.count(serverMethod))
		}
	})
}
