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

// TestStreamMaxElapsedCoversTheCall: the Retrier's MaxElapsed covers a
// stream from its first attempt, opened by NewStream, as StreamInterceptor's
// doc says: a caller that sends for 5 s to a stream whose first attempt
// failed at once gets no retry under a MaxElapsed of 3 s or 5 s (none
// left: ErrDeadline), and one under a MaxElapsed of 10 s.
func TestStreamMaxElapsedCoversTheCall(t *testing.T) {
	for _, tt := range []struct {
		maxElapsed time.Duration
		streams    int
	}{{3 * time.Second, 1}, {5 * time.Second, 1}, {10 * time.Second, 2}} {
		t.Run(tt.maxElapsed.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var calls atomic.Int64
				join := joinAll(0)
				svc := &service{client: func(ss grpc.ServerStream) error {
					if calls.Add(1) == 1 {
						return status.Error(codes.Unavailable, "injected at once")
					}
					return join(ss)
				}}
				r := constant(time.Second, 3)
				r.MaxElapsed = tt.maxElapsed
				c := client(t, ClientConfig{Retrier: r})
				cc := dialBuf(t, svc, grpc.WithStreamInterceptor(c.StreamInterceptor()))
				s, err := cc.NewStream(context.Background(), streamDesc(clientMethod), clientMethod)
				if err != nil {
					t.Fatal(err)
				}
				for _, x := range texts(5) {
					time.Sleep(time.Second)
					s.SendMsg(&msg{Text: x})
				}
				s.CloseSend()
				m := new(msg)
				err = s.RecvMsg(m)
				if svc.count(clientMethod) != tt.streams {
					t.Errorf("%d streams, want %d", svc.count(clientMethod), tt.streams)
				}
				if tt.streams == 1 && !errors.Is(err, backoff.ErrDeadline) {
					t.Errorf("RecvMsg: %v, want ErrDeadline", err)
				}
				if tt.streams == 2 && (err != nil || m.Text != "0,1,2,3,4,") {
					t.Errorf("RecvMsg: %q, %v; want every message", m.Text, err)
				}
			})
		})
	}
}

// TestStreamReplayLimitDuringWaitRefunds: a retry decided, then not made
// because the caller sent past MaxReplayBytes during the wait, is returned to
// the Budget, as the Retrier's doc says of a withdrawn retry not made; the
// wait ends then, and the stream with ErrNotReplayable, not Canceled.
func TestStreamReplayLimitDuringWaitRefunds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := &service{bidi: func(ss grpc.ServerStream) error { return status.Error(codes.Unavailable, "injected at once") }}
		budget := backoff.Must(backoff.NewBudget(backoff.BudgetConfig{Burst: 5, Reserve: 0.001})) // 0.001 retry accrues in the wait
		r := constant(time.Second, 3)
		r.Budget = budget
		c := client(t, ClientConfig{Retrier: r, MaxReplayBytes: 6})
		cc := dialBuf(t, svc, grpc.WithStreamInterceptor(c.StreamInterceptor()))
		s, err := cc.NewStream(context.Background(), streamDesc(bidiMethod), bidiMethod)
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the first attempt has failed
		recv := make(chan error, 1)
		go func() { recv <- s.RecvMsg(new(msg)) }()
		synctest.Wait() // the loop waits a second to retry
		start := time.Now()
		s.SendMsg(&msg{Text: "0"})
		s.SendMsg(&msg{Text: "1"})
		if err := <-recv; !errors.Is(err, ErrNotReplayable) || errors.Is(err, context.Canceled) || status.Code(err) != codes.Unavailable || time.Since(start) != 0 {
			t.Fatalf("RecvMsg: %v after %v, want ErrNotReplayable with the attempt's UNAVAILABLE, at once", err, time.Since(start))
		}
		if budget.Available() != 5 {
			t.Errorf("budget %v of 5 after a retry not made", budget.Available())
		}
	})
}
