package backoffgrpc

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/backoffgo/backoff"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
)

// TestStreamOpenUntilDeadline: a stream whose first attempt waits for a
// connection (grpc.WaitForReady) until the caller's deadline is an attempt
// made, as a unary call's is: OnDone hears of 1 attempt, the Budget gets
// the call's deposit, and the error,
// DEADLINE_EXCEEDED, keeps grpc-go's text (what the connection's last
// failure was), as without the interceptor. A stream whose context had
// ended before it was opened makes no attempt, as a unary call's: its
// error is the *backoff.Error of 0 attempts, with the context's status,
// and OnDone hears of 0 attempts.
func TestStreamOpenUntilDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lis := bufconn.Listen(1 << 20)
		lis.Close() // every dial fails
		dialer := grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) })
		var dones []int
		start := time.Now()
		budget := backoff.Must(backoff.NewBudget(backoff.BudgetConfig{Ratio: 1, Reserve: 1, Burst: 2, Now: func() time.Time { return start }}))
		r := *immediate(3)
		r.Budget = budget
		r.OnDone = func(_ context.Context, attempts int, _ error) { dones = append(dones, attempts) }
		c := client(t, ClientConfig{Retrier: &r})
		plain := dial(t, "passthrough:///closed", dialer)
		cc := dial(t, "passthrough:///closed", dialer, grpc.WithUnaryInterceptor(c.UnaryInterceptor()), grpc.WithStreamInterceptor(c.StreamInterceptor()))
		open := func(cc *grpc.ClientConn, method string, timeout time.Duration) error {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			if method == unaryMethod {
				_, err := call(ctx, cc, "hi", grpc.WaitForReady(true))
				return err
			}
			_, err := cc.NewStream(ctx, streamDesc(serverMethod), serverMethod, grpc.WaitForReady(true))
			return err
		}
		for _, method := range []string{unaryMethod, serverMethod} {
			dones = nil
			want := status.Convert(open(plain, method, time.Second)).Message()
			for budget.Withdraw() == nil {
			}
			err := open(cc, method, time.Second)
			var e *backoff.Error
			if status.Code(err) != codes.DeadlineExceeded || !strings.Contains(err.Error(), want) || !errors.As(err, &e) || e.Attempts != 1 {
				t.Errorf("%s: %v; want DEADLINE_EXCEEDED after 1 attempt, with grpc-go's text %q", method, err, want)
			}
			if len(dones) != 1 || dones[0] != 1 || budget.Available() != 1 {
				t.Errorf("%s: OnDone's attempts %v, budget %v; want [1], and the call's deposit of 1", method, dones, budget.Available())
			}
			dones = nil
			err = open(cc, method, -time.Second)
			if s, ok := status.FromError(err); !ok || s.Code() != codes.DeadlineExceeded || !errors.As(err, &e) || e.Attempts != 0 || !errors.Is(err, context.DeadlineExceeded) || len(dones) != 1 || dones[0] != 0 {
				t.Errorf("%s, context ended before: %v (%T), OnDone's attempts %v; want the *backoff.Error of 0 attempts, the context's status", method, err, err, dones)
			}
		}
	})
}
