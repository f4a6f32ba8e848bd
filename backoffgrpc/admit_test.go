package backoffgrpc

import (
	"context"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/retryshare"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// TestServerAdmitLoopback: through UnaryServerInterceptor and
// StreamServerInterceptor, while a caller's retries are over on a method,
// its retries (calls carrying PreviousAttemptsKey) are refused as they
// arrive: UNAVAILABLE with pushback -1, the handler not run; a Client does
// not retry that answer. A first try is served, and so is a retry of
// another method; the refusal counts as a retry of the method, not a call,
// and as a call and a retry of the caller, whose retries are over while
// significantly more than Threshold of its calls.
func TestServerAdmitLoopback(t *testing.T) {
	share := backoff.Must(retryshare.New(retryshare.Config{Callers: 1, Now: func() time.Time { return time.Unix(0, 0) }}))
	for range 30 {
		share.Record(unaryMethod, "c", true)
		share.Record(serverMethod, "c", true)
	}
	cfg := ServerConfig{Share: share, Caller: func(context.Context) string { return "c" }}
	hang := false // the handlers answer when the call ends, when set
	svc := &service{
		unary: func(ctx context.Context, in *msg) (*msg, error) {
			if hang {
				<-ctx.Done()
				return nil, status.FromContextError(ctx.Err()).Err()
			}
			return in, nil
		},
		server: func(in *msg, ss grpc.ServerStream) error {
			if hang {
				<-ss.Context().Done()
				return status.FromContextError(ss.Context().Err()).Err()
			}
			return ss.SendMsg(in)
		},
	}
	addr := listen(t, svc, grpc.UnaryInterceptor(UnaryServerInterceptor(cfg)), grpc.StreamInterceptor(StreamServerInterceptor(cfg)))
	cc := dial(t, addr)
	retry := metadata.AppendToOutgoingContext(context.Background(), PreviousAttemptsKey, "1")
	for _, method := range []string{unaryMethod, serverMethod} {
		before := svc.count(method)
		if code, pushback := answerCtx(t, retry, cc, method); code != codes.Unavailable || !equal(pushback, "-1") || svc.count(method) != before {
			t.Errorf("%s: a retry of a method over: %v, pushback %q, handler run %d times; want UNAVAILABLE, \"-1\", not run",
				method, code, pushback, svc.count(method)-before)
		}
		if code, pushback := answer(t, cc, method, "hi"); code != codes.OK || pushback != nil || svc.count(method) != before+1 {
			t.Errorf("%s: a first try: %v, pushback %q; want OK, served", method, code, pushback)
		}
	}

	// A Client's first try times out (the server's answer, for a call
	// ended, is no failing answer to mark); its retry is refused as it
	// arrives and not retried.
	hang = true
	c := client(t, ClientConfig{Retrier: immediate(4), AttemptTimeout: 50 * time.Millisecond})
	ccc := dial(t, addr, grpc.WithUnaryInterceptor(c.UnaryInterceptor()), grpc.WithStreamInterceptor(c.StreamInterceptor()))
	for _, method := range []string{unaryMethod, serverMethod} {
		before := svc.count(method)
		if code, pushback := answer(t, ccc, method, "hi"); code != codes.Unavailable || !equal(pushback, "-1") || svc.count(method)-before != 1 {
			t.Errorf("%s through a Client: %v after %d handler runs; want UNAVAILABLE after 1 (the retry refused at arrival)", method, code, svc.count(method)-before)
		}
	}

	// Each method's window now counts 32 calls and 32 retries (30
	// recorded, 2 refused: counted as retries, not as calls); the one
	// caller slot, of both, 68 calls and 64 retries (the refusals counted
	// as calls and retries). Unary is over (X/R > 0.1) until it counts 320
	// calls: after 287 first tries more, refused (the slot's 64 retries of
	// 355 calls significant: 64 − 0.5 − 35.5 > 1.2816·√(35.5 × 0.9) = 7.2)
	// and counted: 33 retries, over until 330 calls, admitted 11 later.
	// The slot then counts 65 retries of 367 calls, significant up to 554
	// calls (at 555: 65 − 0.5 − 55.5 = 9.0 ≤ 1.2816·√(55.5 × 0.9) = 9.06);
	// 66 retries up to 563 calls, 67 up to 572. The stream method (over
	// until 320 calls, more with its refusals) is refused at the slot's
	// 550 calls (183 first tries): 66 retries of 551; refused at 559 (8
	// more), which 65 retries would not be: 67 of 560; admitted at 580 (20
	// more), the method still over (34 retries of 243 calls). By the
	// former rule (20 retries, above Threshold) 67 of 580 are still over.
	for _, step := range []struct {
		method   string
		tries    int
		admitted bool
	}{
		{unaryMethod, 287, false}, {unaryMethod, 11, true},
		{serverMethod, 183, false}, {serverMethod, 8, false}, {serverMethod, 20, true},
	} {
		for range step.tries {
			share.Record(step.method, "c", false)
		}
		if got := share.Admit(step.method, "c"); got != step.admitted {
			t.Errorf("%s after %d first tries more: admitted %v, want %v (refusals counted as the method's retries and the slot's calls and retries; the slot over while its retries are significant)",
				step.method, step.tries, got, step.admitted)
		}
	}
}
