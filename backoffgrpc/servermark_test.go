package backoffgrpc

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/retryshare"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// errDependency is the failure of a dependency that is down.
var errDependency = status.Error(codes.Unavailable, "dependency down")

// giveUp runs a loop of 3 attempts over a dependency that is down, on ctx,
// and returns its give-up, a *backoff.Error after retrying.
func giveUp(ctx context.Context) error {
	return immediate(3).Do(ctx, func(context.Context) error { return errDependency })
}

// waitingLoop starts, on ctx, a loop whose first call fails and whose retry
// waits an hour, and returns once that loop is waiting to retry (or, past
// its first failure, after a margin for the loop to reach its wait).
func waitingLoop(ctx context.Context) {
	failed := make(chan struct{})
	go constant(time.Hour, 3).Do(ctx, func(context.Context) error {
		close(failed) // once: the retry waits until ctx ends
		return errDependency
	})
	<-failed
	time.Sleep(20 * time.Millisecond)
}

// markCases are handlers' failures, and whether the server interceptors
// must say not to retry them: only a failure that is, or wraps, the
// give-up of a loop that retried.
var markCases = []struct {
	name   string
	fail   func(ctx context.Context) error
	code   codes.Code
	marked bool
}{
	{"the give-up, returned as is", giveUp, codes.Unavailable, true},
	{"the give-up, wrapped with %w", func(ctx context.Context) error {
		return fmt.Errorf("inventory: %w", giveUp(ctx))
	}, codes.Unavailable, true},
	{"a status of its own wrapping the give-up", func(ctx context.Context) error {
		return fmt.Errorf("%w: %w", status.Error(codes.Internal, "inventory"), giveUp(ctx))
	}, codes.Internal, true},
	{"an absorbed give-up, then a fresh failure", func(ctx context.Context) error {
		giveUp(ctx) // an optional dependency: served without it
		return status.Error(codes.Unavailable, "fresh")
	}, codes.Unavailable, false},
	{"an absorbed give-up, then a plain error", func(ctx context.Context) error {
		giveUp(ctx)
		return errors.New("plain")
	}, codes.Unknown, false},
	{"a background loop waiting to retry", func(ctx context.Context) error {
		waitingLoop(ctx)
		return status.Error(codes.Unavailable, "fresh")
	}, codes.Unavailable, false},
	{"a background loop that gave up", func(ctx context.Context) error {
		done := make(chan struct{})
		go func() { giveUp(ctx); close(done) }()
		<-done
		return status.Error(codes.Unavailable, "fresh")
	}, codes.Unavailable, false},
	{"the give-up's text in a new status (the chain is lost)", func(ctx context.Context) error {
		return status.Convert(giveUp(ctx)).Err()
	}, codes.Unavailable, false},
}

// TestServerMarksOnlyGiveUps: through UnaryServerInterceptor and
// StreamServerInterceptor, a plain client reads pushback -1 on exactly the
// failures of markCases that are give-ups, and a Client of 3 attempts makes
// 1 call for those and 3 for the other UNAVAILABLE ones (it retries no
// other code).
func TestServerMarksOnlyGiveUps(t *testing.T) {
	for _, tt := range markCases {
		t.Run(tt.name, func(t *testing.T) {
			svc := &service{
				unary:  func(ctx context.Context, _ *msg) (*msg, error) { return nil, tt.fail(ctx) },
				server: func(_ *msg, ss grpc.ServerStream) error { return tt.fail(ss.Context()) },
			}
			// A Share that never refuses: the failures let be retried here
			// would make one of retryshare's defaults refuse the third.
			cfg := ServerConfig{Share: backoff.Must(retryshare.New(retryshare.Config{Threshold: 1}))}
			addr := listen(t, svc, grpc.UnaryInterceptor(UnaryServerInterceptor(cfg)), grpc.StreamInterceptor(StreamServerInterceptor(cfg)))
			var want []string
			calls := 3
			if tt.marked {
				want = []string{"-1"}
			}
			if tt.marked || tt.code != codes.Unavailable {
				calls = 1
			}
			for _, method := range []string{unaryMethod, serverMethod} {
				code, pushback := answer(t, dial(t, addr), method, "hi")
				if code != tt.code || !equal(pushback, want...) {
					t.Errorf("%s: %v with pushback %q; want %v with %q", method, code, pushback, tt.code, want)
				}
				c := client(t, ClientConfig{Retrier: immediate(3)})
				cc := dial(t, addr, grpc.WithUnaryInterceptor(c.UnaryInterceptor()), grpc.WithStreamInterceptor(c.StreamInterceptor()))
				before := svc.count(method)
				if code, _ := answer(t, cc, method, "hi"); code != tt.code || svc.count(method)-before != calls {
					t.Errorf("%s through a Client: %v after %d calls; want %v after %d", method, code, svc.count(method)-before, tt.code, calls)
				}
			}
		})
	}
}

// answer makes a call of method (unary or server-streaming) with text on
// cc and returns its code and the pushback of its trailer.
func answer(t *testing.T, cc *grpc.ClientConn, method, text string) (codes.Code, []string) {
	t.Helper()
	var trailer metadata.MD
	var err error
	if method == unaryMethod {
		_, err = call(context.Background(), cc, text, grpc.Trailer(&trailer))
	} else {
		s, serr := cc.NewStream(context.Background(), streamDesc(method), method)
		if serr != nil {
			t.Error(serr)
			return status.Code(serr), nil
		}
		s.SendMsg(&msg{Text: text})
		s.CloseSend()
		_, err = recvTexts(s)
		trailer = s.Trailer()
	}
	return status.Code(err), trailer[PushbackKey]
}

// TestServerMarksTheGiveUpsCall: two calls on one server at once, for
// each interceptor. One call's loop is retrying while the other fails on
// its own with a loop of its own waiting to retry; then the first gives
// up and returns that. Only the first is marked.
func TestServerMarksTheGiveUpsCall(t *testing.T) {
	type steps struct{ retrying, failed chan struct{} }
	order := map[string]steps{}
	for _, method := range []string{unaryMethod, serverMethod} {
		order[method] = steps{make(chan struct{}), make(chan struct{})}
	}
	fail := func(ctx context.Context, method, text string) error {
		s := order[method]
		if text == "other" {
			<-s.retrying
			waitingLoop(ctx)
			return status.Error(codes.Unavailable, "fresh")
		}
		n := 0
		return immediate(3).Do(ctx, func(context.Context) error {
			if n++; n == 2 {
				close(s.retrying)
				<-s.failed
			}
			return errDependency
		})
	}
	svc := &service{
		unary:  func(ctx context.Context, in *msg) (*msg, error) { return nil, fail(ctx, unaryMethod, in.Text) },
		server: func(in *msg, ss grpc.ServerStream) error { return fail(ss.Context(), serverMethod, in.Text) },
	}
	cc := dial(t, listen(t, svc, grpc.UnaryInterceptor(UnaryServerInterceptor(ServerConfig{})), grpc.StreamInterceptor(StreamServerInterceptor(ServerConfig{}))))
	for _, method := range []string{unaryMethod, serverMethod} {
		gaveUp := make(chan []string)
		go func() {
			_, pushback := answer(t, cc, method, "give up")
			gaveUp <- pushback
		}()
		_, other := answer(t, cc, method, "other")
		close(order[method].failed)
		if mine := <-gaveUp; !equal(mine, "-1") || len(other) != 0 {
			t.Errorf("%s: pushback %q for the call that gave up, %q for the other; want [-1] and none", method, mine, other)
		}
	}
}

// TestCommittedDontRetrySaysSo: a Client's call that is committed (the
// server set a header) and whose server said not to retry returns the
// server's status, code and message as sent, in an error that matches
// backoff.ErrRetriedBelow: a loop around the call stands back from it (1
// call, not 3), and so does a server interceptor above (see
// TestHopsThroughHeaders).
func TestCommittedDontRetrySaysSo(t *testing.T) {
	svc := &service{unary: func(ctx context.Context, _ *msg) (*msg, error) {
		grpc.SetHeader(ctx, metadata.Pairs("request-id", "1"))
		return nil, giveUp(ctx)
	}}
	c := client(t, ClientConfig{Retrier: immediate(3)})
	cc := dial(t, listen(t, svc, grpc.UnaryInterceptor(UnaryServerInterceptor(ServerConfig{}))), grpc.WithUnaryInterceptor(c.UnaryInterceptor()))
	var last error
	err := immediate(3).Do(context.Background(), func(ctx context.Context) error {
		_, last = call(ctx, cc, "hi")
		return last
	})
	var e *backoff.Error
	if !errors.As(last, &e) || !errors.Is(last, ErrCommitted) || status.Code(last) != codes.Unavailable {
		t.Errorf("the call returned %v; want the *backoff.Error of a committed call, UNAVAILABLE", last)
	} else if st, ok := status.FromError(e.Err); !ok || st.Code() != codes.Unavailable || st.Message() != status.Convert(giveUp(context.Background())).Message() || e.Err.Error() != st.Err().Error() {
		t.Errorf("the call's Err is %v (status %v); want the server's status as sent", e.Err, st)
	}
	if !errors.Is(last, backoff.ErrRetriedBelow) || !errors.Is(err, backoff.ErrRetriedBelow) || svc.count(unaryMethod) != 1 {
		t.Errorf("a loop around the call: %v after %d calls; want ErrRetriedBelow after 1", err, svc.count(unaryMethod))
	}
}
