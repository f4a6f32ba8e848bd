package backoffgrpc

import (
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
)

// isTimeout reports whether err is an attempt's timeout as ClientConfig's
// AttemptTimeout describes it.
func isTimeout(err error) bool {
	var timeout interface{ Timeout() bool }
	return errors.As(err, &timeout) && timeout.Timeout() && errors.Is(err, context.DeadlineExceeded) &&
		status.Code(err) == codes.DeadlineExceeded && strings.Contains(err.Error(), "AttemptTimeout")
}

// TestAttemptTimeoutIsNotOtherFailures: with AttemptTimeout set, an
// attempt that fails at once, long before its timeout, is that failure,
// not a timeout.
func TestAttemptTimeoutIsNotOtherFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := &service{
			unary:  failing(10, code(codes.Unavailable)),
			server: func(*msg, grpc.ServerStream) error { return status.Error(codes.Unavailable, "injected Unavailable") },
		}
		var seen []Failure
		c := client(t, ClientConfig{Retrier: immediate(2), AttemptTimeout: time.Hour, ShouldRetry: func(f Failure) bool {
			seen = append(seen, f)
			return DefaultShouldRetry(f)
		}})
		cc := dialBuf(t, svc, grpc.WithUnaryInterceptor(c.UnaryInterceptor()), grpc.WithStreamInterceptor(c.StreamInterceptor()))
		_, uerr := call(context.Background(), cc, "hi")
		_, serr := recvAll(context.Background(), cc, "m")
		for _, err := range []error{uerr, serr} {
			if isTimeout(err) || status.Code(err) != codes.Unavailable || !strings.HasSuffix(err.Error(), "injected Unavailable") {
				t.Errorf("error %v, want the server's UNAVAILABLE, not a timeout", err)
			}
		}
		if len(seen) != 4 || slices.ContainsFunc(seen, func(f Failure) bool { return f.Timeout }) {
			t.Errorf("ShouldRetry saw %+v, want 4 failures, none a timeout", seen)
		}
	})
}

// TestAttemptTimeoutWithinLongerDeadline: a caller's deadline longer than
// AttemptTimeout leaves each attempt its own timeout: 3 attempts of 1s
// each time out under a deadline of an hour, for a unary call and for a
// stream.
func TestAttemptTimeoutWithinLongerDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := &service{
			unary:  func(ctx context.Context, _ *msg) (*msg, error) { return nil, silent(ctx) },
			server: func(_ *msg, ss grpc.ServerStream) error { return silent(ss.Context()) },
		}
		c := client(t, ClientConfig{Retrier: immediate(3), AttemptTimeout: time.Second})
		cc := dialBuf(t, svc, grpc.WithUnaryInterceptor(c.UnaryInterceptor()), grpc.WithStreamInterceptor(c.StreamInterceptor()))
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		for _, tt := range []struct {
			method string
			run    func() error
		}{
			{unaryMethod, func() error { _, err := call(ctx, cc, "hi"); return err }},
			{serverMethod, func() error { _, err := recvAll(ctx, cc, "m"); return err }},
		} {
			start := time.Now()
			err := tt.run()
			if !isTimeout(err) || svc.count(tt.method) != 3 || time.Since(start).Round(time.Millisecond) != 3*time.Second {
				t.Errorf("%s: error %v after %d calls and %v; want the attempts' timeout after 3 and 3s", tt.method, err, svc.count(tt.method), time.Since(start))
			}
		}
	})
}

// TestStreamAttemptTimeoutSparesLaterMessages: once a stream's first
// message has come, AttemptTimeout no longer bounds it: messages that come
// an attempt's timeout apart all arrive, and the stream ends with io.EOF.
func TestStreamAttemptTimeoutSparesLaterMessages(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := &service{server: func(in *msg, ss grpc.ServerStream) error {
			for _, x := range texts(4) {
				if err := ss.SendMsg(&msg{Text: x}); err != nil {
					return err
				}
				time.Sleep(2 * time.Second)
			}
			return nil
		}}
		c := client(t, ClientConfig{Retrier: immediate(3), AttemptTimeout: time.Second})
		cc := dialBuf(t, svc, grpc.WithStreamInterceptor(c.StreamInterceptor()))
		got, err := recvAll(context.Background(), cc, "m")
		if err != nil || !slices.Equal(got, texts(4)) || svc.count(serverMethod) != 1 {
			t.Errorf("got %q, %v after %d streams; want 0 1 2 3, io.EOF after 1", got, err, svc.count(serverMethod))
		}
	})
}

// TestStreamOpenRunsOutOfAttemptTimeout: an attempt whose stream cannot
// even be opened within AttemptTimeout (grpc.WaitForReady, a server that
// never answers the connection) runs out of it as a unary call's attempt
// does: it is retried, and the call fails with the attempts' timeout, not
// with CANCELLED.
func TestStreamOpenRunsOutOfAttemptTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lis := bufconn.Listen(1 << 20) // never accepts: no connection is ever ready
		defer lis.Close()
		c := client(t, ClientConfig{Retrier: immediate(3), AttemptTimeout: time.Second})
		cc := dial(t, "passthrough:///bufconn",
			grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
			grpc.WithDefaultCallOptions(grpc.WaitForReady(true)),
			grpc.WithUnaryInterceptor(c.UnaryInterceptor()), grpc.WithStreamInterceptor(c.StreamInterceptor()))
		for _, tt := range []struct {
			name string
			run  func() error
		}{
			{"unary", func() error { _, err := call(context.Background(), cc, "hi"); return err }},
			{"stream", func() error { _, err := recvAll(context.Background(), cc, "m"); return err }},
		} {
			start := time.Now()
			err := tt.run()
			if !isTimeout(err) || time.Since(start).Round(time.Millisecond) != 3*time.Second {
				t.Errorf("%s: error %v (code %v) after %v; want the attempts' timeout after 3 attempts, 3s", tt.name, err, status.Code(err), time.Since(start))
			}
		}
	})
}

// TestStreamFirstMessageAtAttemptTimeout: a first message that comes just
// as AttemptTimeout runs out either commits the call, and every message
// then arrives, or is the attempt's timeout (retried, then exhausted): never
// a message followed by a CANCELLED that nobody asked for.
func TestStreamFirstMessageAtAttemptTimeout(t *testing.T) {
	for i := range 50 {
		synctest.Test(t, func(t *testing.T) {
			svc := &service{server: func(in *msg, ss grpc.ServerStream) error {
				ss.SendHeader(metadata.MD{})
				time.Sleep(time.Second)
				for _, x := range texts(3) {
					if err := ss.SendMsg(&msg{Text: x}); err != nil {
						return err
					}
				}
				return nil
			}}
			c := client(t, ClientConfig{Retrier: immediate(2), AttemptTimeout: time.Second})
			cc := dialBuf(t, svc, grpc.WithStreamInterceptor(c.StreamInterceptor()))
			got, err := recvAll(context.Background(), cc, "m")
			if !(err == nil && slices.Equal(got, texts(3))) && !isTimeout(err) {
				t.Fatalf("run %d: got %q, then %v (code %v); want 0 1 2 and io.EOF, or the attempt's timeout", i, got, err, status.Code(err))
			}
		})
	}
}

// TestStreamSendAfterServerEnded: SendMsg on a stream whose server has
// ended it returns io.EOF, as grpc's does, once the call is committed (a
// message came) or cannot be replayed; a caller that sends until io.EOF
// then stops.
func TestStreamSendAfterServerEnded(t *testing.T) {
	for _, tt := range []struct {
		name           string
		maxReplayBytes int
		answer         bool // the server sends a message before it ends
	}{{"committed", 0, true}, {"past MaxReplayBytes", 6, false}} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				svc := &service{bidi: func(ss grpc.ServerStream) error {
					if tt.answer {
						if err := ss.SendMsg(&msg{Text: "a"}); err != nil {
							return err
						}
					}
					return status.Error(codes.Unavailable, "injected")
				}}
				c := client(t, ClientConfig{Retrier: immediate(3), MaxReplayBytes: tt.maxReplayBytes})
				cc := dialBuf(t, svc, grpc.WithStreamInterceptor(c.StreamInterceptor()))
				s, err := cc.NewStream(context.Background(), streamDesc(bidiMethod), bidiMethod)
				if err != nil {
					t.Fatal(err)
				}
				if tt.answer {
					if err := s.RecvMsg(new(msg)); err != nil {
						t.Fatalf("RecvMsg: %v", err)
					}
				}
				synctest.Wait() // the server has ended the stream
				sent := 0
				for ; sent < 100; sent++ {
					if err := s.SendMsg(&msg{Text: "x"}); err == io.EOF {
						break
					} else if err != nil {
						t.Fatalf("SendMsg %d: %v", sent, err)
					}
				}
				if sent == 100 {
					t.Errorf("SendMsg returned nil 100 times on a stream that has ended")
				}
				if err := s.RecvMsg(new(msg)); status.Code(err) != codes.Unavailable {
					t.Errorf("RecvMsg: %v, want the server's UNAVAILABLE", err)
				}
			})
		})
	}
}
