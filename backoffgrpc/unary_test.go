package backoffgrpc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/backoffgo/backoff"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// failing returns a unary handler whose first n calls fail as fail says
// (fail may set trailers and headers through ctx) and the rest echo.
func failing(n int, fail func(ctx context.Context) error) func(context.Context, *msg) (*msg, error) {
	var calls atomic.Int64
	return func(ctx context.Context, in *msg) (*msg, error) {
		if calls.Add(1) <= int64(n) {
			return nil, fail(ctx)
		}
		return in, nil
	}
}

// code fails with c.
func code(c codes.Code) func(context.Context) error {
	return func(context.Context) error { return status.Error(c, "injected "+c.String()) }
}

// pushback fails with c and the trailer PushbackKey: v.
func pushback(c codes.Code, v ...string) func(context.Context) error {
	return func(ctx context.Context) error {
		md := metadata.MD{}
		for _, x := range v {
			md.Append(PushbackKey, x)
		}
		grpc.SetTrailer(ctx, md)
		return status.Error(c, "injected "+c.String())
	}
}

// TestUnaryStatusClasses: by default only UNAVAILABLE, and
// RESOURCE_EXHAUSTED with a pushback, are retried; a call not retried
// returns the *backoff.Error of 1 attempt, whose Err has the status as it
// came.
func TestUnaryStatusClasses(t *testing.T) {
	for _, tt := range []struct {
		name  string
		fail  func(context.Context) error
		calls int // at the server, for 3 attempts and one failure less
		code  codes.Code
	}{
		{"UNAVAILABLE", code(codes.Unavailable), 3, codes.OK},
		{"RESOURCE_EXHAUSTED", code(codes.ResourceExhausted), 1, codes.ResourceExhausted},
		{"RESOURCE_EXHAUSTED with pushback", pushback(codes.ResourceExhausted, "1"), 3, codes.OK},
		{"UNAVAILABLE with pushback 0", pushback(codes.Unavailable, "0"), 3, codes.OK},
		{"INTERNAL", code(codes.Internal), 1, codes.Internal},
		{"UNKNOWN", code(codes.Unknown), 1, codes.Unknown},
		{"DEADLINE_EXCEEDED from the server", code(codes.DeadlineExceeded), 1, codes.DeadlineExceeded},
		{"ABORTED", code(codes.Aborted), 1, codes.Aborted},
		{"NOT_FOUND", code(codes.NotFound), 1, codes.NotFound},
		{"INVALID_ARGUMENT", code(codes.InvalidArgument), 1, codes.InvalidArgument},
		{"PERMISSION_DENIED", code(codes.PermissionDenied), 1, codes.PermissionDenied},
		{"UNAUTHENTICATED", code(codes.Unauthenticated), 1, codes.Unauthenticated},
		{"FAILED_PRECONDITION", code(codes.FailedPrecondition), 1, codes.FailedPrecondition},
		{"UNIMPLEMENTED", code(codes.Unimplemented), 1, codes.Unimplemented},
		{"CANCELLED from the server", code(codes.Canceled), 1, codes.Canceled},
	} {
		t.Run(tt.name, func(t *testing.T) {
			svc := &service{unary: failing(2, tt.fail)}
			cc, _ := connect(t, svc, ClientConfig{})
			got, err := call(context.Background(), cc, "hi")
			if status.Code(err) != tt.code {
				t.Fatalf("error %v, want code %v", err, tt.code)
			}
			if n := svc.count(unaryMethod); n != tt.calls {
				t.Errorf("%d calls at the server, want %d", n, tt.calls)
			}
			if tt.code == codes.OK && got != "hi" {
				t.Errorf("answer %q, want the echo", got)
			}
			if tt.code != codes.OK {
				// Not retried: the *backoff.Error of 1 attempt, whose Err
				// is the status exactly as the server sent it.
				var e *backoff.Error
				if !errors.As(err, &e) || e.Attempts != 1 || !errors.Is(err, backoff.ErrPermanent) {
					t.Errorf("error %v (%T), want the *backoff.Error of 1 attempt, ErrPermanent", err, err)
				} else if s, _ := status.FromError(e.Err); s.Message() != "injected "+tt.code.String() {
					t.Errorf("message %q, want the server's", s.Message())
				}
			}
		})
	}
}

// TestUnaryPreviousAttempts: each retry carries the number of attempts
// before it; the first carries none.
func TestUnaryPreviousAttempts(t *testing.T) {
	svc := &service{unary: failing(2, code(codes.Unavailable))}
	cc, _ := connect(t, svc, ClientConfig{})
	if _, err := call(context.Background(), cc, "hi"); err != nil {
		t.Fatal(err)
	}
	if got, want := svc.attempts(unaryMethod), []string{"", "1", "2"}; !slices.Equal(got, want) {
		t.Errorf("grpc-previous-rpc-attempts %q, want %q", got, want)
	}
}

// TestPreviousAttemptsReplaced: a caller whose context already carries
// PreviousAttemptsKey (a proxy that copied its incoming metadata) sends it
// untouched on the first attempt, and each retry carries one value, the
// number of attempts before it, for a unary call and a stream; the
// caller's other metadata is kept.
func TestPreviousAttemptsReplaced(t *testing.T) {
	for _, tt := range []struct {
		name  string
		ctx   func() context.Context
		first string
	}{
		{"NewOutgoingContext", func() context.Context {
			return metadata.NewOutgoingContext(context.Background(), metadata.Pairs(PreviousAttemptsKey, "7", "k", "v"))
		}, "7"},
		{"AppendToOutgoingContext", func() context.Context {
			return metadata.AppendToOutgoingContext(context.Background(), PreviousAttemptsKey, "7", "k", "v")
		}, "7"},
		{"both, two values", func() context.Context {
			ctx := metadata.NewOutgoingContext(context.Background(), metadata.Pairs(PreviousAttemptsKey, "7", "k", "v"))
			return metadata.AppendToOutgoingContext(ctx, PreviousAttemptsKey, "8")
		}, "7,8"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var keys []string
			var mu sync.Mutex
			fail := func(ctx context.Context) error {
				mu.Lock()
				keys = append(keys, strings.Join(metadata.ValueFromIncomingContext(ctx, "k"), ","))
				mu.Unlock()
				return status.Error(codes.Unavailable, "down")
			}
			var streams atomic.Int64
			svc := &service{unary: failing(2, fail), server: func(in *msg, ss grpc.ServerStream) error {
				if streams.Add(1) <= 2 {
					return fail(ss.Context())
				}
				return ss.SendMsg(in)
			}}
			cc, _ := connect(t, svc, ClientConfig{})
			if _, err := call(tt.ctx(), cc, "hi"); err != nil {
				t.Fatal(err)
			}
			if _, err := recvAll(tt.ctx(), cc, "hi"); err != nil {
				t.Fatal(err)
			}
			want := []string{tt.first, "1", "2"}
			for _, m := range []string{unaryMethod, serverMethod} {
				if got := svc.attempts(m); !slices.Equal(got, want) {
					t.Errorf("%s: grpc-previous-rpc-attempts %q, want %q", m, got, want)
				}
			}
			if want := []string{"v", "v", "v", "v"}; !slices.Equal(keys, want) {
				t.Errorf("metadata k of the failed attempts %q, want %q", keys, want)
			}
		})
	}
}

// TestUnaryExhaustedSaysWhat: the final status keeps the last attempt's
// code and says what the retries did.
func TestUnaryExhaustedSaysWhat(t *testing.T) {
	svc := &service{unary: failing(10, code(codes.Unavailable))}
	cc, done := connect(t, svc, ClientConfig{})
	_, err := call(context.Background(), cc, "hi")
	s, _ := status.FromError(err)
	want := "backoff: stopped after 3 attempts (attempts exhausted): rpc error: code = Unavailable desc = injected Unavailable"
	if s.Code() != codes.Unavailable || s.Message() != want {
		t.Errorf("status %v %q, want Unavailable %q", s.Code(), s.Message(), want)
	}
	var e *backoff.Error
	if !errors.As(err, &e) || e.Attempts != 3 || !errors.Is(err, backoff.ErrExhausted) || *done != err {
		t.Errorf("error %#v, OnDone %v; want a *backoff.Error of 3 attempts, ErrExhausted, given to OnDone", err, *done)
	}
	if svc.count(unaryMethod) != 3 {
		t.Errorf("%d calls, want 3", svc.count(unaryMethod))
	}
}

// TestUnaryCommitted: a call whose server sent its response headers before
// failing is not retried (A6: committed).
func TestUnaryCommitted(t *testing.T) {
	svc := &service{unary: failing(10, func(ctx context.Context) error {
		grpc.SendHeader(ctx, metadata.Pairs("x", "y"))
		return status.Error(codes.Unavailable, "after headers")
	})}
	cc, done := connect(t, svc, ClientConfig{})
	_, err := call(context.Background(), cc, "hi")
	if status.Code(err) != codes.Unavailable || svc.count(unaryMethod) != 1 {
		t.Errorf("error %v after %d calls, want Unavailable after 1", err, svc.count(unaryMethod))
	}
	if !errors.Is(*done, ErrCommitted) {
		t.Errorf("OnDone got %v, want ErrCommitted", *done)
	}
}

// TestUnaryCallerHeaderTrailer: a caller that asks for the header and
// trailer (grpc.Header, grpc.Trailer, as values or pointers) gets the last
// attempt's, and the interceptor, which reads them through the caller's
// options, still tells a committed call and reads the pushback.
func TestUnaryCallerHeaderTrailer(t *testing.T) {
	md := func(v string) metadata.MD { return metadata.Pairs("n", v) }
	for _, tt := range []struct {
		name            string
		fail            func(ctx context.Context) error // the first attempt's failure
		calls           int
		reason          error // OnDone's; nil for success
		header, trailer string
	}{
		{"retried, then answered", func(ctx context.Context) error {
			grpc.SetTrailer(ctx, md("1"))
			return status.Error(codes.Unavailable, "down")
		}, 2, nil, "2", "2"},
		{"committed", func(ctx context.Context) error {
			grpc.SendHeader(ctx, md("1"))
			grpc.SetTrailer(ctx, md("1"))
			return status.Error(codes.Unavailable, "after headers")
		}, 1, ErrCommitted, "1", "1"},
		{"pushback -1", func(ctx context.Context) error {
			grpc.SetTrailer(ctx, md("1"))
			return pushback(codes.Unavailable, "-1")(ctx)
		}, 1, backoff.ErrRetriedBelow, "", "1"},
	} {
		for _, pointers := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/pointers=%v", tt.name, pointers), func(t *testing.T) {
				var n atomic.Int64
				svc := &service{unary: func(ctx context.Context, in *msg) (*msg, error) {
					if n.Add(1) == 1 {
						return nil, tt.fail(ctx)
					}
					grpc.SetHeader(ctx, md("2"))
					grpc.SetTrailer(ctx, md("2"))
					return in, nil
				}}
				cc, done := connect(t, svc, ClientConfig{})
				header, trailer := metadata.MD{"stale": {"x"}}, metadata.MD{"stale": {"x"}}
				opts := []grpc.CallOption{grpc.Header(&header), grpc.Trailer(&trailer)}
				if pointers {
					opts = []grpc.CallOption{&grpc.HeaderCallOption{HeaderAddr: &header}, &grpc.TrailerCallOption{TrailerAddr: &trailer}}
				}
				_, err := call(context.Background(), cc, "hi", opts...)
				if (tt.reason == nil) != (err == nil) || !errors.Is(*done, tt.reason) || svc.count(unaryMethod) != tt.calls {
					t.Errorf("error %v (OnDone %v) after %d calls, want reason %v after %d", err, *done, svc.count(unaryMethod), tt.reason, tt.calls)
				}
				if got := strings.Join(header["n"], ","); got != tt.header || header["stale"] != nil {
					t.Errorf("header %v, want n: %q", header, tt.header)
				}
				if got := strings.Join(trailer["n"], ","); got != tt.trailer || trailer["stale"] != nil {
					t.Errorf("trailer %v, want n: %q", trailer, tt.trailer)
				}
			})
		}
	}
}

// TestUnaryCallerHeaderNoServer: the caller's header and trailer are nil
// after a last attempt that reached no server, not what they held before.
func TestUnaryCallerHeaderNoServer(t *testing.T) {
	c := client(t, ClientConfig{Retrier: immediate(2)})
	cc := dial(t, "127.0.0.1:1", grpc.WithUnaryInterceptor(c.UnaryInterceptor()))
	header, trailer := metadata.Pairs("stale", "x"), metadata.Pairs("stale", "x")
	_, err := call(context.Background(), cc, "hi", grpc.Header(&header), grpc.Trailer(&trailer))
	if status.Code(err) != codes.Unavailable || header != nil || trailer != nil {
		t.Errorf("error %v, header %v, trailer %v; want Unavailable, nil, nil", err, header, trailer)
	}
}

// TestUnaryPushbackStops: a negative, malformed or repeated pushback stops
// the retries, with ErrRetriedBelow, at once.
func TestUnaryPushbackStops(t *testing.T) {
	for _, v := range [][]string{{"-1"}, {"soon"}, {"1", "2"}, {""}} {
		t.Run(strings.Join(v, ","), func(t *testing.T) {
			svc := &service{unary: failing(10, pushback(codes.Unavailable, v...))}
			cc, _ := connect(t, svc, ClientConfig{})
			_, err := call(context.Background(), cc, "hi")
			if !errors.Is(err, backoff.ErrRetriedBelow) || status.Code(err) != codes.Unavailable || svc.count(unaryMethod) != 1 {
				t.Errorf("error %v after %d calls, want ErrRetriedBelow, Unavailable, 1 call", err, svc.count(unaryMethod))
			}
		})
	}
}

// TestUnaryPushbackTooLong: a pushback over MaxPushback stops with
// ErrHintTooLong, or waits MaxPushback with ClampPushback.
func TestUnaryPushbackTooLong(t *testing.T) {
	svc := &service{unary: failing(10, pushback(codes.Unavailable, "60000"))}
	cc, _ := connect(t, svc, ClientConfig{MaxPushback: time.Second})
	_, err := call(context.Background(), cc, "hi")
	if !errors.Is(err, backoff.ErrHintTooLong) || svc.count(unaryMethod) != 1 {
		t.Errorf("error %v after %d calls, want ErrHintTooLong after 1", err, svc.count(unaryMethod))
	}
}

// TestUnaryPushbackWaits: a pushback is the delay, exactly, and ClampPushback
// waits MaxPushback for a longer one; measured in a synctest bubble over an
// in-memory connection.
func TestUnaryPushbackWaits(t *testing.T) {
	for _, tt := range []struct {
		value string
		clamp bool
		want  time.Duration
	}{
		{"250", false, 2 * 250 * time.Millisecond},
		{"60000", true, 2 * 5 * time.Second},
	} {
		t.Run(tt.value, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				svc := &service{unary: failing(2, pushback(codes.Unavailable, tt.value))}
				c := client(t, ClientConfig{Retrier: constant(time.Hour, 3), MaxPushback: 5 * time.Second, ClampPushback: tt.clamp})
				cc := dialBuf(t, svc, grpc.WithUnaryInterceptor(c.UnaryInterceptor()))
				start := time.Now()
				if _, err := call(context.Background(), cc, "hi"); err != nil {
					t.Fatal(err)
				}
				if got := time.Since(start); got != tt.want {
					t.Errorf("waited %v, want %v", got, tt.want)
				}
			})
		})
	}
}

// TestUnaryDeadline: a retry that cannot start before the caller's deadline
// is not waited for: the call returns at once with ErrDeadline, the
// caller's DEADLINE_EXCEEDED, and the last attempt's error.
func TestUnaryDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := &service{unary: failing(10, code(codes.Unavailable))}
		c := client(t, ClientConfig{Retrier: constant(time.Second, 5)})
		cc := dialBuf(t, svc, grpc.WithUnaryInterceptor(c.UnaryInterceptor()))
		ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := call(ctx, cc, "hi")
		if got := time.Since(start); got != 2*time.Second {
			t.Errorf("returned after %v, want 2s (two waits, the third would pass the deadline)", got)
		}
		var e *backoff.Error
		if !errors.Is(err, backoff.ErrDeadline) || status.Code(err) != codes.DeadlineExceeded || !errors.As(err, &e) || status.Code(e.Err) != codes.Unavailable || svc.count(unaryMethod) != 3 {
			t.Errorf("error %v after %d calls, want ErrDeadline, DEADLINE_EXCEEDED after Unavailable, 3 calls", err, svc.count(unaryMethod))
		}
	})
}

// TestUnaryCancelDuringWait: cancelling the call during a wait ends it at
// once, with the context's status, CANCELLED, and the last attempt's error.
func TestUnaryCancelDuringWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := &service{unary: failing(10, code(codes.Unavailable))}
		c := client(t, ClientConfig{Retrier: constant(time.Hour, 5)})
		cc := dialBuf(t, svc, grpc.WithUnaryInterceptor(c.UnaryInterceptor()))
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(time.Minute, cancel)
		start := time.Now()
		_, err := call(ctx, cc, "hi")
		var e *backoff.Error
		if time.Since(start) != time.Minute || !errors.Is(err, context.Canceled) || status.Code(err) != codes.Canceled || !errors.As(err, &e) || status.Code(e.Err) != codes.Unavailable {
			t.Errorf("error %v (code %v) after %v; want context.Canceled, CANCELLED after Unavailable, after 1m", err, status.Code(err), time.Since(start))
		}
	})
}

// silent answers nothing until ctx ends, and then fails with ctx's status.
func silent(ctx context.Context) error {
	<-ctx.Done()
	return status.FromContextError(ctx.Err()).Err()
}

// TestUnaryAttemptTimeout: an attempt that runs out of AttemptTimeout is
// retried and, at the end, reported as a timeout, not a cancellation; the
// server sees the attempt's deadline.
func TestUnaryAttemptTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := &service{unary: func(ctx context.Context, _ *msg) (*msg, error) { return nil, silent(ctx) }}
		c := client(t, ClientConfig{Retrier: immediate(3), AttemptTimeout: time.Second})
		cc := dialBuf(t, svc, grpc.WithUnaryInterceptor(c.UnaryInterceptor()))
		start := time.Now()
		_, err := call(context.Background(), cc, "hi")
		var timeout interface{ Timeout() bool }
		if !errors.As(err, &timeout) || !timeout.Timeout() || !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			t.Errorf("error %v, want a timeout", err)
		}
		if status.Code(err) != codes.DeadlineExceeded || !strings.Contains(err.Error(), "attempt timed out after 1s") {
			t.Errorf("error %v, want DEADLINE_EXCEEDED naming AttemptTimeout", err)
		}
		if svc.count(unaryMethod) != 3 || time.Since(start).Round(time.Millisecond) != 3*time.Second {
			t.Errorf("%d calls in %v, want 3 in 3s", svc.count(unaryMethod), time.Since(start))
		}
	})
}

// TestUnaryAttemptTimeoutThenSuccess: a slow first attempt is cut short and
// the retry answers.
func TestUnaryAttemptTimeoutThenSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int64
		svc := &service{unary: func(ctx context.Context, in *msg) (*msg, error) {
			if calls.Add(1) == 1 {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return in, nil
		}}
		c := client(t, ClientConfig{Retrier: immediate(3), AttemptTimeout: time.Second})
		cc := dialBuf(t, svc, grpc.WithUnaryInterceptor(c.UnaryInterceptor()))
		if got, err := call(context.Background(), cc, "hi"); err != nil || got != "hi" {
			t.Errorf("got %q, %v; want the echo", got, err)
		}
	})
}

// TestUnaryNotConnected: a server that is not there is UNAVAILABLE, and
// retried.
func TestUnaryNotConnected(t *testing.T) {
	c := client(t, ClientConfig{Retrier: immediate(3)})
	cc := dial(t, "127.0.0.1:1", grpc.WithUnaryInterceptor(c.UnaryInterceptor()))
	_, err := call(context.Background(), cc, "hi")
	var e *backoff.Error
	if status.Code(err) != codes.Unavailable || !errors.As(err, &e) || e.Attempts != 3 || !errors.Is(err, backoff.ErrExhausted) {
		t.Errorf("error %v, want Unavailable after 3 attempts", err)
	}
}

// TestNewClientRejects: every invalid field is named.
func TestNewClientRejects(t *testing.T) {
	var nilPolicy *backoff.FullJitter
	for _, tt := range []struct {
		cfg   ClientConfig
		param string
	}{
		{ClientConfig{MaxPushback: -1}, "MaxPushback"},
		{ClientConfig{AttemptTimeout: -1}, "AttemptTimeout"},
		{ClientConfig{MaxReplayBytes: -1}, "MaxReplayBytes"},
		{ClientConfig{Retrier: &backoff.Retrier{}}, "Retrier.Policy"},
		{ClientConfig{Retrier: &backoff.Retrier{Policy: nilPolicy}}, "Retrier.Policy"},
		{ClientConfig{Retrier: &backoff.Retrier{Policy: backoff.PolicyFunc(nil)}}, "Retrier.Policy"},
		{ClientConfig{Retrier: &backoff.Retrier{Policy: immediate(2).Policy, MaxElapsed: -1}}, "Retrier.MaxElapsed"},
	} {
		_, err := NewClient(tt.cfg)
		var pe *backoff.ParamError
		if !errors.As(err, &pe) || pe.Param != tt.param {
			t.Errorf("NewClient(%+v) = %v, want a ParamError naming %s", tt.cfg, err, tt.param)
		}
	}
}

// TestUnaryHooks: the Retrier's hooks see each attempt's error as grpc
// returned it, and the call's outcome.
func TestUnaryHooks(t *testing.T) {
	svc := &service{unary: failing(2, code(codes.Unavailable))}
	var retries []string
	var doneAttempts int
	r := immediate(3)
	r.OnRetry = func(_ context.Context, attempt int, err error, _ time.Duration) {
		if _, ok := status.FromError(err); !ok || err.Error() != "rpc error: code = Unavailable desc = injected Unavailable" {
			t.Errorf("OnRetry got %T %v, want the status error", err, err)
		}
		retries = append(retries, fmt.Sprint(attempt))
	}
	r.OnDone = func(_ context.Context, attempts int, err error) {
		if err != nil {
			t.Errorf("OnDone got %v, want nil", err)
		}
		doneAttempts = attempts
	}
	cc := dial(t, listen(t, svc), grpc.WithUnaryInterceptor(client(t, ClientConfig{Retrier: r}).UnaryInterceptor()))
	if _, err := call(context.Background(), cc, "hi"); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(retries, []string{"1", "2"}) || doneAttempts != 3 {
		t.Errorf("OnRetry at %q, OnDone with %d attempts; want 1 2 and 3", retries, doneAttempts)
	}
}

// TestUnaryContextDoneBefore: a call whose context has ended makes no
// attempt and fails with the *backoff.Error of 0 attempts, whose status is
// the context's, as grpc's would be.
func TestUnaryContextDoneBefore(t *testing.T) {
	svc := &service{unary: failing(0, nil)}
	cc, _ := connect(t, svc, ClientConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := call(ctx, cc, "hi")
	if status.Code(err) != codes.Canceled || svc.count(unaryMethod) != 0 {
		t.Errorf("error %v after %d calls, want Canceled and none", err, svc.count(unaryMethod))
	}
	var e *backoff.Error
	if s, ok := status.FromError(err); !ok || s.Code() != codes.Canceled || !errors.As(err, &e) || e.Attempts != 0 || e.Err != nil || !errors.Is(err, context.Canceled) {
		t.Errorf("error %v (%T), want the *backoff.Error of 0 attempts, CANCELLED", err, err)
	}
}

// TestUnaryShouldRetry: a ShouldRetry of the caller's decides; a timeout
// it refuses is the call's Err as ShouldRetry saw it, and the call's
// error is still a timeout.
func TestUnaryShouldRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := &service{unary: func(ctx context.Context, in *msg) (*msg, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}}
		var seen []Failure
		c := client(t, ClientConfig{Retrier: immediate(3), AttemptTimeout: time.Second, ShouldRetry: func(f Failure) bool {
			seen = append(seen, f)
			return false
		}})
		cc := dialBuf(t, svc, grpc.WithUnaryInterceptor(c.UnaryInterceptor()))
		_, err := call(context.Background(), cc, "hi")
		timeout, ok := err.(interface{ Timeout() bool })
		var e *backoff.Error
		if !ok || !timeout.Timeout() || status.Code(err) != codes.DeadlineExceeded || !errors.As(err, &e) || !errors.Is(err, backoff.ErrPermanent) || svc.count(unaryMethod) != 1 {
			t.Errorf("error %T %v after %d calls, want the attempt's timeout after 1, not retried", err, err, svc.count(unaryMethod))
		}
		if len(seen) != 1 || !seen[0].Timeout || seen[0].Method != unaryMethod || e == nil || seen[0].Err != e.Err {
			t.Errorf("ShouldRetry saw %+v, want one timeout of %s, the error returned", seen, unaryMethod)
		}
	})
}

// TestUnaryCallerDeadlineIsNotAttemptTimeout: when the caller's deadline
// is the attempt's (AttemptTimeout as long), the end of the call is the
// caller's deadline, not an attempt's timeout, whichever timer runs first.
func TestUnaryCallerDeadlineIsNotAttemptTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := &service{unary: func(ctx context.Context, _ *msg) (*msg, error) { return nil, silent(ctx) }}
		c := client(t, ClientConfig{Retrier: immediate(3), AttemptTimeout: time.Second})
		cc := dialBuf(t, svc, grpc.WithUnaryInterceptor(c.UnaryInterceptor()))
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := call(ctx, cc, "hi")
		if strings.Contains(err.Error(), "AttemptTimeout") || status.Code(err) != codes.DeadlineExceeded || svc.count(unaryMethod) != 1 {
			t.Errorf("error %v after %d calls; want the caller's deadline after 1", err, svc.count(unaryMethod))
		}
	})
}
