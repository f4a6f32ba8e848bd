package backoffgrpc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/retryshare"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// alwaysUnavailable is a service whose unary method always fails with
// UNAVAILABLE.
func alwaysUnavailable() *service {
	return &service{unary: func(context.Context, *msg) (*msg, error) {
		return nil, status.Error(codes.Unavailable, "bottom down")
	}}
}

// relay is a service whose unary method calls next's, through the given
// unary interceptor, with the incoming call's context, and returns its
// answer or error.
func relay(t *testing.T, next string, interceptor grpc.UnaryClientInterceptor) *service {
	cc := dial(t, next, grpc.WithUnaryInterceptor(interceptor))
	return &service{unary: func(ctx context.Context, in *msg) (*msg, error) {
		out, err := call(ctx, cc, in.Text)
		if err != nil {
			return nil, err
		}
		return &msg{Text: out}, nil
	}}
}

// chain starts a bottom service that always fails and, above it, one
// service per entry of handled, each relaying to the next one down through
// a Client of 3 attempts; handled[i] says whether service i (0 is the top)
// has the server interceptor. It returns the top's address and the bottom.
func chain(t *testing.T, handled []bool, retryInner bool) (string, *service) {
	t.Helper()
	bottom := alwaysUnavailable()
	next := listen(t, bottom)
	for i := len(handled) - 1; i >= 0; i-- {
		r := immediate(3)
		r.RetryInner = retryInner
		c := client(t, ClientConfig{Retrier: r})
		var opts []grpc.ServerOption
		if handled[i] {
			opts = append(opts, grpc.UnaryInterceptor(UnaryServerInterceptor(ServerConfig{})))
		}
		next = listen(t, relay(t, next, c.UnaryInterceptor()), opts...)
	}
	return next, bottom
}

// TestHopsRetryAtOneLayer: three services in a chain, each retrying its call
// to the next 3 times, over a bottom that always fails. Without the server
// interceptor the retries multiply (27 calls at the bottom per call at the
// top); with it the lowest service retries and the rest stand back. A
// service without it breaks the chain where it stands. Clients that retry
// anyway (RetryInner) multiply their retries but for the lowest service's
// refusals at arrival, of one caller (one connection): its first call's 3
// make 2 retries of 3, over, so the second and third calls' retries are
// refused as they arrive: 9 + 3 + 3 = 15 calls at the bottom.
func TestHopsRetryAtOneLayer(t *testing.T) {
	for _, tt := range []struct {
		name       string
		handled    []bool
		retryInner bool
		want       int
	}{
		{"no service takes part", []bool{false, false, false}, false, 27},
		{"every service takes part", []bool{true, true, true}, false, 3},
		{"the top service does not", []bool{false, true, true}, false, 3},
		{"the middle service does not", []bool{true, false, true}, false, 9},
		{"the bottom service does not", []bool{true, true, false}, false, 9},
		{"clients that retry anyway", []bool{true, true, true}, true, 15},
	} {
		t.Run(tt.name, func(t *testing.T) {
			top, bottom := chain(t, tt.handled, tt.retryInner)
			_, err := call(context.Background(), dial(t, top), "hi")
			if status.Code(err) != codes.Unavailable {
				t.Errorf("top answered %v, want Unavailable", err)
			}
			got := bottom.count(unaryMethod)
			if got != tt.want {
				t.Errorf("%d calls reached the bottom for one at the top, want %d", got, tt.want)
			}
			t.Logf("%s: %d calls at the bottom per call at the top", tt.name, got)
		})
	}
}

// TestReadmeHopsFigure: README's gRPC section quotes the chain's figures as
// this test measures them, and the test logs them (go test -v): calls at
// the bottom per call at the top, with the server interceptor at every
// service, at every service but the middle one, and at none.
func TestReadmeHopsFigure(t *testing.T) {
	count := func(handled ...bool) int {
		top, bottom := chain(t, handled, false)
		call(context.Background(), dial(t, top), "hi")
		return bottom.count(unaryMethod)
	}
	every, middleOut, none := count(true, true, true), count(true, false, true), count(false, false, false)
	t.Logf("3 services in a chain, each retrying 3 times, over a bottom that always fails: calls at the bottom per call at the top")
	t.Logf("  server interceptor at every service:             %2d", every)
	t.Logf("  at every service but the middle one:             %2d", middleOut)
	t.Logf("  at no service (the retries multiply, 3 x 3 x 3): %2d", none)
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## gRPC\n")
	if !ok {
		t.Fatal("README.md has no gRPC section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	want := fmt.Sprintf("**%d** calls at the bottom per call at the top instead of %d", every, none)
	if !strings.Contains(strings.Join(strings.Fields(section), " "), want) {
		t.Errorf("README.md's gRPC section should say %q", want)
	}
}

// TestServerAnswerIsTrailersOnly: the server interceptor's "do not retry"
// is a Trailers-Only response (no response headers), the only kind in which
// grpc-go's own retries read a pushback; and a success carries none.
func TestServerAnswerIsTrailersOnly(t *testing.T) {
	svc := &service{unary: func(ctx context.Context, in *msg) (*msg, error) {
		if in.Text == "ok" {
			return in, nil
		}
		err := backoff.Do(ctx, func(context.Context) error { return status.Error(codes.Unavailable, "dependency down") }, immediate(2).Policy)
		return nil, err
	}}
	cc := dial(t, listen(t, svc, grpc.UnaryInterceptor(UnaryServerInterceptor(ServerConfig{}))))
	var header, trailer metadata.MD
	_, err := call(context.Background(), cc, "fail", grpc.Header(&header), grpc.Trailer(&trailer))
	if status.Code(err) != codes.Unavailable || header != nil || !equal(trailer[PushbackKey], "-1") {
		t.Errorf("error %v, header %v, trailer %v; want Unavailable, no header, pushback -1", err, header, trailer)
	}
	if _, err := call(context.Background(), cc, "ok", grpc.Trailer(&trailer)); err != nil || len(trailer[PushbackKey]) != 0 {
		t.Errorf("success: %v, trailer %v; want no pushback", err, trailer)
	}
}

func equal(v []string, want ...string) bool {
	return strings.Join(v, "\x00") == strings.Join(want, "\x00")
}

// TestServerStreamInterceptor: a stream handler that returns its loop's
// give-up fails with pushback -1: a Client makes 1 stream, not 3.
func TestServerStreamInterceptor(t *testing.T) {
	svc := &service{server: func(in *msg, ss grpc.ServerStream) error {
		err := backoff.Do(ss.Context(), func(context.Context) error { return status.Error(codes.Unavailable, "dependency down") }, immediate(2).Policy)
		return err
	}}
	c := client(t, ClientConfig{Retrier: immediate(3)})
	cc := dial(t, listen(t, svc, grpc.StreamInterceptor(StreamServerInterceptor(ServerConfig{}))), grpc.WithStreamInterceptor(c.StreamInterceptor()))
	_, err := recvAll(context.Background(), cc, "m")
	if status.Code(err) != codes.Unavailable || svc.count(serverMethod) != 1 {
		t.Errorf("error %v after %d streams, want Unavailable after 1", err, svc.count(serverMethod))
	}
}

// TestRetryShare: a fleet of clients, each retrying 3 times, one after the
// other on a connection (a caller key) of its own, over a failing server
// whose every failure is significant: its allowance (4 at first, 0.1 more
// per call, 1 less per failure let be retried) decides, unless the
// caller's retries are over (at least 2, significantly more than 0.1 of
// its calls). The first client makes its 3 calls, its third failure
// refused by its 2 retries of 3 (4 → 2.2); the second 3 (2.3 → 1.3 → 0.4,
// its third refused by its retries too), and after it one client in nine
// makes 2 calls, once its first call finds 1.0 again (clients 7 and 16):
// 26 calls for 20 clients, with the zero ServerConfig (a Share of
// retryshare's defaults) as with a Share of the caller's, instead of 60
// calls, 40 of them retries, with a Share whose Threshold is 1, which
// never stops a retry; the same for server streams through
// StreamServerInterceptor.
func TestRetryShare(t *testing.T) {
	for _, tt := range []struct {
		name   string
		share  *retryshare.Config // nil for the zero ServerConfig
		method string
		want   int
	}{
		{"zero ServerConfig", nil, unaryMethod, 26},
		{"Threshold 0.1", &retryshare.Config{Threshold: 0.1, Window: time.Minute}, unaryMethod, 26},
		{"Threshold 1", &retryshare.Config{Threshold: 1}, unaryMethod, 60},
		{"zero ServerConfig", nil, serverMethod, 26},
		{"Threshold 0.1", &retryshare.Config{Threshold: 0.1, Window: time.Minute}, serverMethod, 26},
		{"Threshold 1", &retryshare.Config{Threshold: 1}, serverMethod, 60},
	} {
		t.Run(tt.name+tt.method, func(t *testing.T) {
			var cfg ServerConfig
			if tt.share != nil {
				cfg.Share = backoff.Must(retryshare.New(*tt.share))
			}
			svc := alwaysUnavailable()
			svc.server = func(*msg, grpc.ServerStream) error { return status.Error(codes.Unavailable, "bottom down") }
			addr := listen(t, svc, grpc.UnaryInterceptor(UnaryServerInterceptor(cfg)), grpc.StreamInterceptor(StreamServerInterceptor(cfg)))
			var stopped atomic.Int64
			for range 20 {
				r := immediate(3)
				r.OnDone = func(_ context.Context, _ int, err error) {
					if errors.Is(err, backoff.ErrRetriedBelow) {
						stopped.Add(1)
					}
				}
				c := client(t, ClientConfig{Retrier: r})
				cc := dial(t, addr, grpc.WithUnaryInterceptor(c.UnaryInterceptor()), grpc.WithStreamInterceptor(c.StreamInterceptor()))
				if tt.method == unaryMethod {
					call(context.Background(), cc, "hi")
				} else {
					recvAll(context.Background(), cc, "m")
				}
			}
			if got := svc.count(tt.method); got != tt.want {
				t.Errorf("%d calls at the server, want %d (%d clients told to stop) %q", got, tt.want, stopped.Load(), svc.attempts(tt.method))
			}
		})
	}
}

// TestHopsThroughHeaders: a service whose failure is not Trailers-Only (its
// handler set a header) still passes "retried below" up: the service
// above it does not retry the committed call, and says so to its own
// caller, so 3 calls reach the bottom, not 9.
func TestHopsThroughHeaders(t *testing.T) {
	bottom := alwaysUnavailable()
	interceptor := grpc.UnaryInterceptor(UnaryServerInterceptor(ServerConfig{}))
	lower := relay(t, listen(t, bottom), client(t, ClientConfig{Retrier: immediate(3)}).UnaryInterceptor())
	relayed := lower.unary
	lower.unary = func(ctx context.Context, in *msg) (*msg, error) {
		grpc.SetHeader(ctx, metadata.Pairs("request-id", "1"))
		return relayed(ctx, in)
	}
	upper := relay(t, listen(t, lower, interceptor), client(t, ClientConfig{Retrier: immediate(3)}).UnaryInterceptor())
	top := listen(t, upper, interceptor)
	_, err := call(context.Background(), dial(t, top, grpc.WithUnaryInterceptor(client(t, ClientConfig{Retrier: immediate(3)}).UnaryInterceptor())), "hi")
	if status.Code(err) != codes.Unavailable || bottom.count(unaryMethod) != 3 {
		t.Errorf("error %v, %d calls at the bottom; want Unavailable and 3", err, bottom.count(unaryMethod))
	}
}
