package backoffgrpc

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/backoffgo/backoff"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestPushbackValues: PushbackKey read literally, for a unary call and a
// server stream: a decimal count of milliseconds is the delay (zero, "-0"
// included, waits as the policy says); a negative, malformed or repeated
// value stops the call with ErrRetriedBelow after one attempt.
func TestPushbackValues(t *testing.T) {
	for _, tt := range []struct {
		values []string
		wait   time.Duration // between the two attempts; -1: no retry
	}{
		{[]string{"0"}, time.Minute},
		{[]string{"-0"}, time.Minute},
		{[]string{"7"}, 7 * time.Millisecond},
		{[]string{"-1"}, -1},
		{[]string{" 5"}, -1},
		{[]string{"5 "}, -1},
		{[]string{"5.5"}, -1},
		{[]string{"5ms"}, -1},
		{[]string{"0x10"}, -1},
		{[]string{"7", "7"}, -1},
		{[]string{"-1", "7"}, -1},
	} {
		t.Run(strings.Join(tt.values, ","), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fail := pushback(codes.Unavailable, tt.values...)
				svc := &service{
					unary:  failing(1, fail),
					server: func(in *msg, ss grpc.ServerStream) error { return fail(ss.Context()) },
				}
				c := client(t, ClientConfig{Retrier: constant(time.Minute, 2)})
				cc := dialBuf(t, svc, grpc.WithUnaryInterceptor(c.UnaryInterceptor()), grpc.WithStreamInterceptor(c.StreamInterceptor()))
				start := time.Now()
				_, err := call(context.Background(), cc, "hi")
				took := time.Since(start)
				if tt.wait < 0 {
					if !errors.Is(err, backoff.ErrRetriedBelow) || svc.count(unaryMethod) != 1 || took != 0 {
						t.Errorf("unary: %v after %d calls and %v; want ErrRetriedBelow after 1 call, at once", err, svc.count(unaryMethod), took)
					}
				} else if err != nil || svc.count(unaryMethod) != 2 || took != tt.wait {
					t.Errorf("unary: %v after %d calls and %v; want success after 2 calls and %v", err, svc.count(unaryMethod), took, tt.wait)
				}
				if tt.wait < 0 {
					_, err = recvAll(context.Background(), cc, "m")
					if !errors.Is(err, backoff.ErrRetriedBelow) || svc.count(serverMethod) != 1 {
						t.Errorf("stream: %v after %d streams; want ErrRetriedBelow after 1", err, svc.count(serverMethod))
					}
				}
			})
		})
	}
}

// TestPushbackOverflow: a pushback too large for a time.Duration, or for
// an int64, is longer than MaxPushback, as its doc counts it:
// ErrHintTooLong, or MaxPushback's wait with ClampPushback; it is not
// "malformed" (ErrRetriedBelow) at 2⁶³ ms when it is not at 2⁶³−1 ms (nor,
// on 32 bits, at 2³¹ ms).
func TestPushbackOverflow(t *testing.T) {
	for _, v := range []string{"2147483648", "9223372036854775807", "9223372036854775808", "99999999999999999999"} {
		t.Run(v, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				for _, clamp := range []bool{false, true} {
					svc := &service{unary: failing(1, pushback(codes.Unavailable, v))}
					c := client(t, ClientConfig{Retrier: constant(time.Hour, 2), ClampPushback: clamp})
					cc := dialBuf(t, svc, grpc.WithUnaryInterceptor(c.UnaryInterceptor()))
					start := time.Now()
					_, err := call(context.Background(), cc, "hi")
					if !clamp && !errors.Is(err, backoff.ErrHintTooLong) {
						t.Errorf("error %v, want ErrHintTooLong", err)
					}
					if clamp && (err != nil || time.Since(start) != DefaultMaxPushback) {
						t.Errorf("ClampPushback: %v after %v, want success after %v", err, time.Since(start), DefaultMaxPushback)
					}
				}
			})
		})
	}
}

// TestPushbackPastDeadline: a pushback that would end after the caller's
// deadline is not waited for: the call returns at once, ErrDeadline, with
// the caller's DEADLINE_EXCEEDED and the attempt's RESOURCE_EXHAUSTED as
// its last error; RESOURCE_EXHAUSTED without a pushback is not retried at
// all.
func TestPushbackPastDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := &service{unary: failing(10, pushback(codes.ResourceExhausted, "5000"))}
		c := client(t, ClientConfig{Retrier: immediate(3)})
		cc := dialBuf(t, svc, grpc.WithUnaryInterceptor(c.UnaryInterceptor()))
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		start := time.Now()
		_, err := call(ctx, cc, "hi")
		var e *backoff.Error
		if !errors.Is(err, backoff.ErrDeadline) || status.Code(err) != codes.DeadlineExceeded || !errors.As(err, &e) || status.Code(e.Err) != codes.ResourceExhausted ||
			time.Since(start) != 0 || svc.count(unaryMethod) != 1 {
			t.Errorf("error %v after %v and %d calls; want ErrDeadline, DEADLINE_EXCEEDED after RESOURCE_EXHAUSTED, at once, 1 call", err, time.Since(start), svc.count(unaryMethod))
		}
	})
}
