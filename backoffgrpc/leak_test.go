package backoffgrpc

import (
	"context"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// firstAttemptFails returns an error for a call's first attempt (no
// PreviousAttemptsKey), nil for a retry.
func firstAttemptFails(ctx context.Context) error {
	if len(metadata.ValueFromIncomingContext(ctx, PreviousAttemptsKey)) == 0 {
		return status.Error(codes.Unavailable, "injected: first attempt")
	}
	return nil
}

// TestStreamsAbandonedLeakNothing: streams that their callers abandon (no
// RecvMsg, then a cancel; a cancel during the wait; a cancel after the
// first message, of the first attempt or of a retry) or read to the end, with and without AttemptTimeout,
// leave no goroutine behind on a connection that stays open: the count
// returns to where it started.
func TestStreamsAbandonedLeakNothing(t *testing.T) {
	svc := &service{server: func(in *msg, ss grpc.ServerStream) error {
		if in.Text == "fail" {
			return status.Error(codes.Unavailable, "injected")
		}
		if in.Text == "fail once" {
			if err := firstAttemptFails(ss.Context()); err != nil {
				return err
			}
		}
		for {
			if err := ss.SendMsg(in); err != nil {
				return err
			}
			time.Sleep(time.Millisecond)
			if in.Text == "short" {
				return nil
			}
		}
	}}
	addr := listen(t, svc)
	for _, timeout := range []time.Duration{0, time.Hour} {
		c := client(t, ClientConfig{Retrier: constant(time.Hour, 3), AttemptTimeout: timeout})
		cc := dial(t, addr, grpc.WithStreamInterceptor(c.StreamInterceptor()))
		now := client(t, ClientConfig{Retrier: immediate(3), AttemptTimeout: timeout})
		ccNow := dial(t, addr, grpc.WithStreamInterceptor(now.StreamInterceptor()))
		open := func(ctx context.Context, text string) grpc.ClientStream {
			cc := cc
			if text == "fail once" {
				cc = ccNow // retried at once, its request replayed
			}
			s, err := cc.NewStream(ctx, streamDesc(serverMethod), serverMethod)
			if err != nil {
				t.Fatal(err)
			}
			s.SendMsg(&msg{Text: text})
			s.CloseSend()
			return s
		}
		recvAll(context.Background(), cc, "short") // the connections are up
		recvAll(context.Background(), ccNow, "short")
		start := runtime.NumGoroutine()
		for range 20 {
			ctx, cancel := context.WithCancel(context.Background())
			open(ctx, "forever") // never received from
			cancel()

			ctx, cancel = context.WithCancel(context.Background())
			s := open(ctx, "fail")
			done := make(chan error)
			go func() { done <- s.RecvMsg(new(msg)) }() // waits an hour to retry
			time.Sleep(time.Millisecond)
			cancel()
			<-done

			for _, text := range []string{"forever", "fail once"} {
				ctx, cancel = context.WithCancel(context.Background())
				s = open(ctx, text)
				if err := s.RecvMsg(new(msg)); err != nil {
					t.Fatalf("%s: %v", text, err)
				}
				cancel()
			}

			if _, err := recvAll(context.Background(), cc, "short"); err != nil {
				t.Fatal(err)
			}
		}
		var n int
		for range 1000 {
			if n = runtime.NumGoroutine(); n <= start {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if n > start {
			buf := make([]byte, 1<<20)
			t.Errorf("AttemptTimeout %v: %d goroutines, %d before the streams\n%s", timeout, n, start, buf[:runtime.Stack(buf, true)])
		}
	}
}

// TestClientConcurrentUse: one Client serves unary calls and streams from
// many goroutines at once (run with -race): each call's first attempt
// fails and its retry answers; every call succeeds after 2 attempts, as
// OnDone is told once per call.
func TestClientConcurrentUse(t *testing.T) {
	svc := &service{
		unary: func(ctx context.Context, in *msg) (*msg, error) { return in, firstAttemptFails(ctx) },
		server: func(in *msg, ss grpc.ServerStream) error {
			if err := firstAttemptFails(ss.Context()); err != nil {
				return err
			}
			return ss.SendMsg(in)
		},
		bidi: func(ss grpc.ServerStream) error {
			if err := firstAttemptFails(ss.Context()); err != nil {
				return err
			}
			for {
				m := new(msg)
				if err := ss.RecvMsg(m); err == io.EOF {
					return nil
				} else if err != nil {
					return err
				}
				if err := ss.SendMsg(m); err != nil {
					return err
				}
			}
		},
	}
	var dones, twice atomic.Int64
	r := immediate(3)
	r.OnDone = func(_ context.Context, attempts int, err error) {
		dones.Add(1)
		if attempts == 2 && err == nil {
			twice.Add(1)
		}
	}
	c := client(t, ClientConfig{Retrier: r, AttemptTimeout: time.Minute})
	cc := dial(t, listen(t, svc), grpc.WithUnaryInterceptor(c.UnaryInterceptor()), grpc.WithStreamInterceptor(c.StreamInterceptor()))
	const goroutines, calls = 8, 25
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range calls {
				var err error
				var got string
				switch (g + i) % 3 {
				case 0:
					got, err = call(context.Background(), cc, "x")
				case 1:
					var all []string
					all, err = recvAll(context.Background(), cc, "x")
					if len(all) == 1 {
						got = all[0]
					}
				default:
					got, err = streamCall(context.Background(), cc, bidiMethod)
					if got == "0,1,2" {
						got = "x"
					}
				}
				if err != nil || got != "x" {
					t.Errorf("goroutine %d, call %d: %q, %v", g, i, got, err)
				}
			}
		})
	}
	wg.Wait()
	if dones.Load() != goroutines*calls || twice.Load() != goroutines*calls {
		t.Errorf("OnDone called %d times, %d of them after 2 attempts; want %d and %d", dones.Load(), twice.Load(), goroutines*calls, goroutines*calls)
	}
}
