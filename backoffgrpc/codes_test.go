package backoffgrpc

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/backoffgo/backoff"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// answering returns a service whose unary and server-streaming methods
// fail as answer says.
func answering(answer func(ctx context.Context) error) *service {
	return &service{
		unary:  func(ctx context.Context, _ *msg) (*msg, error) { return nil, answer(ctx) },
		server: func(_ *msg, ss grpc.ServerStream) error { return answer(ss.Context()) },
	}
}

// callMethod makes a call of method on cc, unary or stream (see
// streamCall), and returns its error.
func callMethod(ctx context.Context, cc *grpc.ClientConn, method string) error {
	var err error
	if method == unaryMethod {
		_, err = call(ctx, cc, "hi")
	} else {
		_, err = streamCall(ctx, cc, method)
	}
	return err
}

// TestInternalAtAttemptTimeout: an INTERNAL answer that arrives as the
// attempt's AttemptTimeout runs out is the server's INTERNAL, not the
// attempt's timeout, and is not retried: 60 calls to a server on loopback
// TCP that answers 0.2 to 2 ms before the deadline it sees.
func TestInternalAtAttemptTimeout(t *testing.T) {
	var calls atomic.Int64
	svc := &service{unary: func(ctx context.Context, _ *msg) (*msg, error) {
		dl, _ := ctx.Deadline()
		margin := [...]time.Duration{200 * time.Microsecond, 500 * time.Microsecond, time.Millisecond, 2 * time.Millisecond}[calls.Add(1)%4]
		time.Sleep(time.Until(dl) - margin)
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

// TestCallerEndCodes: a call that its caller's deadline or cancel ends has
// the status grpc-go's own retries give it, DEADLINE_EXCEEDED or CANCELLED,
// whether the end came during an attempt or during a wait (a retry that
// would start past the deadline is one), unary or stream; the last
// attempt's status is the *backoff.Error's Err's. A MaxElapsed that ends
// first keeps the last attempt's status.
func TestCallerEndCodes(t *testing.T) {
	unavailable := func(context.Context) error { return status.Error(codes.Unavailable, "injected Unavailable") }
	for _, tt := range []struct {
		name       string
		answer     func(ctx context.Context) error
		deadline   time.Duration // the caller's, if not zero
		cancel     time.Duration // the caller cancels after it, if not zero
		maxElapsed time.Duration // the Retrier's MaxElapsed
		want, last codes.Code    // the call's code, and its last attempt's
	}{
		{"deadline during an attempt", silent, time.Second, 0, 0, codes.DeadlineExceeded, codes.DeadlineExceeded},
		{"deadline during a wait", unavailable, 90 * time.Second, 0, 0, codes.DeadlineExceeded, codes.Unavailable},
		{"cancel during an attempt", silent, 0, time.Second, 0, codes.Canceled, codes.Canceled},
		{"cancel during a wait", unavailable, 0, 90 * time.Second, 0, codes.Canceled, codes.Unavailable},
		{"deadline during a wait, MaxElapsed later", unavailable, 90 * time.Second, 0, time.Hour, codes.DeadlineExceeded, codes.Unavailable},
		{"MaxElapsed during a wait", unavailable, 0, 0, 90 * time.Second, codes.Unavailable, codes.Unavailable},
		{"MaxElapsed during a wait, deadline later", unavailable, time.Hour, 0, 90 * time.Second, codes.Unavailable, codes.Unavailable},
	} {
		for _, method := range []string{unaryMethod, serverMethod} {
			t.Run(tt.name+"/"+method, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					svc := answering(tt.answer)
					r := constant(time.Minute, 3)
					r.MaxElapsed = tt.maxElapsed
					c := client(t, ClientConfig{Retrier: r})
					cc := dialBuf(t, svc, grpc.WithUnaryInterceptor(c.UnaryInterceptor()), grpc.WithStreamInterceptor(c.StreamInterceptor()))
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					if tt.deadline > 0 {
						ctx, cancel = context.WithTimeout(ctx, tt.deadline)
						defer cancel()
					}
					if tt.cancel > 0 {
						time.AfterFunc(tt.cancel, cancel)
					}
					err := callMethod(ctx, cc, method)
					var e *backoff.Error
					if status.Code(err) != tt.want || !errors.As(err, &e) || status.Code(e.Err) != tt.last {
						t.Fatalf("error %v (code %v, %T); want %v, a *backoff.Error whose Err is %v", err, status.Code(err), err, tt.want, tt.last)
					}
					if s, _ := status.FromError(err); s.Message() != err.Error() {
						t.Errorf("status message %q, want the error's text %q", s.Message(), err.Error())
					}
					switch tt.want {
					case codes.DeadlineExceeded:
						if !errors.Is(err, context.DeadlineExceeded) || !e.Timeout() {
							t.Errorf("error %v: not context.DeadlineExceeded, or not a timeout", err)
						}
					case codes.Canceled:
						if !errors.Is(err, context.Canceled) || !errors.Is(e.Reason, context.Canceled) {
							t.Errorf("error %v, reason %v: not context.Canceled", err, e.Reason)
						}
					}
				})
			})
		}
	}
}

// TestRefusedSaysSo: a failure that the server said not to retry (pushback
// -1) after one attempt returns the *backoff.Error of 1 attempt that OnDone
// gets, stopped by ErrRetriedBelow, whatever its code: its status is the
// attempt's and its Err reads as grpc's error; a loop around the call
// stands back from it.
func TestRefusedSaysSo(t *testing.T) {
	for _, c := range []codes.Code{codes.Internal, codes.Unavailable} {
		for _, method := range []string{unaryMethod, serverMethod} {
			svc := answering(pushback(c, "-1"))
			cc, done := connect(t, svc, ClientConfig{})
			outer := 0
			err := immediate(3).Do(context.Background(), func(ctx context.Context) error {
				outer++
				return callMethod(ctx, cc, method)
			})
			var e *backoff.Error
			if !errors.As(err, &e) {
				t.Fatalf("%v %s: %v, not a *backoff.Error", c, method, err)
			}
			want := "rpc error: code = " + c.String() + " desc = injected " + c.String()
			inner := e.Err // the interceptor's
			ie, ok := inner.(*backoff.Error)
			if !ok || ie.Reason != backoff.ErrRetriedBelow || ie.Attempts != 1 || ie.Err.Error() != want || !errors.Is(inner, backoff.ErrRetriedBelow) || status.Code(inner) != c {
				t.Errorf("%v %s: the call's error %q (code %v, %T); want the *backoff.Error of 1 attempt, ErrRetriedBelow, its Err grpc's %q, code %v", c, method, inner, status.Code(inner), inner, want, c)
			}
			if *done != inner {
				t.Errorf("%v %s: OnDone got %v; want the call's error", c, method, *done)
			}
			if outer != 1 || svc.count(method) != 1 || !errors.Is(e.Reason, backoff.ErrRetriedBelow) {
				t.Errorf("%v %s: the loop around it made %d calls (%d reached the server) and stopped with %v; want 1, standing back", c, method, outer, svc.count(method), err)
			}
		}
	}
}
