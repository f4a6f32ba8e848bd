package backoffgrpc

import (
	"context"
	"sync"
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

// TestShareRoutesLoopback: one Share through both interceptors of a server
// whose unary method is busy and healthy (100 calls for each stream) and
// whose server-streaming method always fails UNAVAILABLE, through a Client
// of 3 attempts on loopback TCP: each full method name counts in a window
// of its own, so the failing method takes about 1/(1-Threshold) calls per
// stream (with one window for both, its retries were under 2 % of the
// calls: 3 calls).
func TestShareRoutesLoopback(t *testing.T) {
	const goroutines, rounds, okPerFail = 4, 25, 100
	cfg := ServerConfig{Share: backoff.Must(retryshare.New(retryshare.Config{Window: 5 * time.Second}))}
	svc := &service{
		unary:  func(_ context.Context, in *msg) (*msg, error) { return in, nil },
		server: func(*msg, grpc.ServerStream) error { return status.Error(codes.Unavailable, "down") },
	}
	addr := listen(t, svc, grpc.UnaryInterceptor(UnaryServerInterceptor(cfg)), grpc.StreamInterceptor(StreamServerInterceptor(cfg)))
	c := client(t, ClientConfig{Retrier: immediate(3)})
	cc := dial(t, addr, grpc.WithUnaryInterceptor(c.UnaryInterceptor()), grpc.WithStreamInterceptor(c.StreamInterceptor()))
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range rounds {
				for range okPerFail {
					if _, err := call(context.Background(), cc, "hi"); err != nil {
						t.Error(err)
						return
					}
				}
				if _, err := recvAll(context.Background(), cc, "m"); status.Code(err) != codes.Unavailable {
					t.Errorf("stream: %v, want Unavailable", err)
				}
			}
		})
	}
	wg.Wait()
	streams := goroutines * rounds
	perStream := float64(svc.count(serverMethod)) / float64(streams)
	t.Logf("routes: %d streams of %s beside %d calls of %s: %.3f calls per stream", streams, serverMethod, svc.count(unaryMethod), unaryMethod, perStream)
	if perStream > 1.3 {
		t.Errorf("%.3f calls per failing stream, want about 1.1, at most 1.3", perStream)
	}
}

// TestServerCallers: a caller whose calls say they are retries makes the
// method over by its retries, and only its own failures say not to retry
// when callers are told apart: by ServerConfig.Caller here (by default by
// the peer's address, which the two share on one connection).
func TestServerCallers(t *testing.T) {
	for _, tt := range []struct {
		name   string
		caller func(context.Context) string
		honest bool // the honest caller's failure says not to retry
	}{
		{"the peer's address, one connection", nil, true},
		{"by metadata", func(ctx context.Context) string {
			if v := metadata.ValueFromIncomingContext(ctx, "client"); len(v) == 1 {
				return v[0]
			}
			return ""
		}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var fail atomic.Bool
			cfg := ServerConfig{Share: backoff.Must(retryshare.New(retryshare.Config{Window: time.Minute})), Caller: tt.caller}
			svc := &service{unary: func(_ context.Context, in *msg) (*msg, error) {
				if fail.Load() {
					return nil, status.Error(codes.Unavailable, "down")
				}
				return in, nil
			}}
			cc := dial(t, listen(t, svc, grpc.UnaryInterceptor(UnaryServerInterceptor(cfg))))
			send := func(client string, retry bool) bool {
				ctx := metadata.AppendToOutgoingContext(context.Background(), "client", client)
				if retry {
					ctx = metadata.AppendToOutgoingContext(ctx, PreviousAttemptsKey, "1")
				}
				var trailer metadata.MD
				call(ctx, cc, "hi", grpc.Trailer(&trailer))
				return equal(trailer[PushbackKey], "-1")
			}
			for range 20 { // the liar's slots over: 20 retries of 20 requests, significant
				send("honest", false)
				send("liar", true)
			}
			fail.Store(true)
			if !send("liar", true) {
				t.Error("the liar's failure does not say not to retry")
			}
			if got := send("honest", false); got != tt.honest {
				t.Errorf("the honest caller's failure says not to retry: %v, want %v", got, tt.honest)
			}
		})
	}
	if got := peerAddr(context.Background()); got != "" {
		t.Errorf("peerAddr without a peer = %q, want \"\"", got)
	}
}
