package backoffgrpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/backoffgo/backoff"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// hooks records what a Retrier's OnRetry and OnDone are called with.
type hooks struct {
	retries []string // "attempt: error"
	dones   []string // "attempts: error"
	doneErr []error
}

func (h *hooks) retrier(r *backoff.Retrier) *backoff.Retrier {
	r2 := *r
	r2.OnRetry = func(_ context.Context, attempt int, err error, _ time.Duration) {
		h.retries = append(h.retries, fmt.Sprintf("%d: %v", attempt, err))
	}
	r2.OnDone = func(_ context.Context, attempts int, err error) {
		h.dones = append(h.dones, fmt.Sprintf("%d: %v", attempts, err))
		h.doneErr = append(h.doneErr, err)
	}
	return &r2
}

// TestStreamHooks: a stream's retries call OnRetry once per retry with the
// attempt's status error, and OnDone once, at the answer, with the number
// of attempts.
func TestStreamHooks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int64
		svc := &service{server: func(in *msg, ss grpc.ServerStream) error {
			if calls.Add(1) <= 2 {
				return status.Error(codes.Unavailable, "injected")
			}
			return ss.SendMsg(in)
		}}
		var h hooks
		c := client(t, ClientConfig{Retrier: h.retrier(immediate(3))})
		cc := dialBuf(t, svc, grpc.WithStreamInterceptor(c.StreamInterceptor()))
		if got, err := recvAll(context.Background(), cc, "m"); err != nil || !slices.Equal(got, []string{"m"}) {
			t.Fatalf("got %q, %v", got, err)
		}
		want := []string{"1: rpc error: code = Unavailable desc = injected", "2: rpc error: code = Unavailable desc = injected"}
		if !slices.Equal(h.retries, want) || !slices.Equal(h.dones, []string{"3: <nil>"}) {
			t.Errorf("OnRetry %q, OnDone %q; want %q and once 3: <nil>", h.retries, h.dones, want)
		}
	})
}

// TestStreamOnDoneOnce: OnDone is called once for every stream, as for
// every unary call, with the number of attempts made: for a stream that
// could not be opened with an error that is not retried, and for a stream
// opened (its attempt made) whose caller cancelled before receiving.
func TestStreamOnDoneOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := &service{
			unary:  failing(0, nil),
			server: func(in *msg, ss grpc.ServerStream) error { <-ss.Context().Done(); return ss.Context().Err() },
		}
		var h hooks
		c := client(t, ClientConfig{Retrier: h.retrier(immediate(3))})
		cc := dialBuf(t, svc, grpc.WithUnaryInterceptor(c.UnaryInterceptor()), grpc.WithStreamInterceptor(c.StreamInterceptor()))
		noCompressor := grpc.UseCompressor("no-such-compressor") // fails the call before it is sent

		_, err := call(context.Background(), cc, "hi", noCompressor)
		if status.Code(err) != codes.Internal || len(h.dones) != 1 {
			t.Fatalf("unary: %v, OnDone %q; want Internal and OnDone once", err, h.dones)
		}
		h.dones = nil
		_, err = cc.NewStream(context.Background(), streamDesc(serverMethod), serverMethod, noCompressor)
		if status.Code(err) != codes.Internal || len(h.dones) != 1 || h.dones[0][:2] != "1:" || !errors.Is(h.doneErr[0], backoff.ErrPermanent) {
			t.Errorf("stream not opened: %v, OnDone %q; want Internal and OnDone once, 1 attempt, permanent", err, h.dones)
		}

		h.dones = nil
		ctx, cancel := context.WithCancel(context.Background())
		s, err := cc.NewStream(ctx, streamDesc(serverMethod), serverMethod)
		if err != nil {
			t.Fatal(err)
		}
		s.SendMsg(&msg{Text: "m"})
		s.CloseSend()
		synctest.Wait() // the server has the stream
		cancel()
		if err := s.RecvMsg(new(msg)); status.Code(err) != codes.Canceled {
			t.Errorf("RecvMsg after cancel: %v, want Canceled", err)
		}
		if len(h.dones) != 1 || h.dones[0][:2] != "1:" || svc.count(serverMethod) != 1 {
			t.Errorf("stream cancelled before receiving: OnDone %q after %d streams; want once, with 1 attempt", h.dones, svc.count(serverMethod))
		}
	})
}

// TestStreamNotReplayableAnnouncesNoRetry: a stream whose first attempt
// could not be opened and whose caller then sent past MaxReplayBytes is not
// retried, and no retry is announced or paid for: OnRetry is not called
// and the Budget keeps its retry.
func TestStreamNotReplayableAnnouncesNoRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := &service{client: joinAll(0)}
		budget := backoff.Must(backoff.NewBudget(backoff.BudgetConfig{Burst: 5}))
		var h hooks
		r := h.retrier(immediate(3))
		r.Budget = budget
		c := client(t, ClientConfig{Retrier: r, MaxReplayBytes: 12})
		opened := 0
		failFirst := opens(&opened, true)
		cc := dialBuf(t, svc, grpc.WithChainStreamInterceptor(c.StreamInterceptor(), failFirst))
		_, err := sendAll(context.Background(), cc, texts(3))
		if !errors.Is(err, ErrNotReplayable) || svc.count(clientMethod) != 0 {
			t.Fatalf("error %v after %d streams, want ErrNotReplayable and none", err, svc.count(clientMethod))
		}
		if len(h.retries) != 0 || budget.Available() != 5 {
			t.Errorf("OnRetry %q, budget %v of 5; want no retry announced, none withdrawn", h.retries, budget.Available())
		}
	})
}

// TestStreamMethodsAfterEnd: once a stream has failed for good, SendMsg
// returns io.EOF, RecvMsg the same failure again, CloseSend nil, Trailer
// the last attempt's; OnDone was called once.
func TestStreamMethodsAfterEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := &service{bidi: func(ss grpc.ServerStream) error {
			ss.SetTrailer(map[string][]string{"attempt": {"last"}})
			return status.Error(codes.Unavailable, "injected")
		}}
		var h hooks
		c := client(t, ClientConfig{Retrier: h.retrier(immediate(2))})
		cc := dialBuf(t, svc, grpc.WithStreamInterceptor(c.StreamInterceptor()))
		s, err := cc.NewStream(context.Background(), streamDesc(bidiMethod), bidiMethod)
		if err != nil {
			t.Fatal(err)
		}
		first := s.RecvMsg(new(msg))
		if !errors.Is(first, backoff.ErrExhausted) {
			t.Fatalf("RecvMsg: %v, want exhausted", first)
		}
		if err := s.SendMsg(&msg{}); err != io.EOF {
			t.Errorf("SendMsg after the end: %v, want io.EOF", err)
		}
		if err := s.RecvMsg(new(msg)); err != first {
			t.Errorf("RecvMsg again: %v, want %v", err, first)
		}
		if err := s.CloseSend(); err != nil {
			t.Errorf("CloseSend after the end: %v", err)
		}
		if tr := s.Trailer(); !equal(tr["attempt"], "last") {
			t.Errorf("Trailer() = %v, want the last attempt's", tr)
		}
		if md, err := s.Header(); md != nil || err != nil {
			t.Errorf("Header() = %v, %v; want nil, nil", md, err)
		}
		if len(h.dones) != 1 || h.doneErr[0] != first || len(h.retries) != 1 {
			t.Errorf("OnDone %q, OnRetry %q; want each once", h.dones, h.retries)
		}
	})
}

// TestCancelDuringAttempt: a caller that cancels during an attempt (of a
// unary call, or of a stream before its first message) gets CANCELLED at
// once, after that one attempt, and OnDone is told once, with the
// context's error as the reason; a stream cancelled after its first
// message was reported to OnDone at the commit, and is not again.
func TestCancelDuringAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := &service{
			unary: func(ctx context.Context, _ *msg) (*msg, error) { return nil, silent(ctx) },
			server: func(in *msg, ss grpc.ServerStream) error {
				if in.Text == "answer" {
					if err := ss.SendMsg(in); err != nil {
						return err
					}
				}
				return silent(ss.Context())
			},
		}
		var h hooks
		c := client(t, ClientConfig{Retrier: h.retrier(immediate(3))})
		cc := dialBuf(t, svc, grpc.WithUnaryInterceptor(c.UnaryInterceptor()), grpc.WithStreamInterceptor(c.StreamInterceptor()))
		for _, tt := range []struct {
			name   string
			method string
			run    func(ctx context.Context) error
			dones  int
		}{
			{"unary", unaryMethod, func(ctx context.Context) error { _, err := call(ctx, cc, "hi"); return err }, 1},
			{"stream", serverMethod, func(ctx context.Context) error { _, err := recvAll(ctx, cc, "m"); return err }, 1},
			{"stream after a message", serverMethod, func(ctx context.Context) error { _, err := recvAll(ctx, cc, "answer"); return err }, 1},
		} {
			h.dones, h.doneErr = nil, nil
			before := svc.count(tt.method)
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(time.Minute, cancel)
			start := time.Now()
			err := tt.run(ctx)
			if status.Code(err) != codes.Canceled || time.Since(start) != time.Minute || svc.count(tt.method)-before != 1 {
				t.Errorf("%s: %v after %v and %d calls; want CANCELLED after 1m and 1 call", tt.name, err, time.Since(start), svc.count(tt.method)-before)
			}
			if len(h.dones) != tt.dones {
				t.Errorf("%s: OnDone %q, want once", tt.name, h.dones)
			}
			if tt.name != "stream after a message" && len(h.doneErr) == 1 && !errors.Is(h.doneErr[0], context.Canceled) {
				t.Errorf("%s: OnDone's error %v, want context.Canceled", tt.name, h.doneErr[0])
			}
		}
	})
}

// TestHooksGetTheCallsContext: OnRetry and OnDone get the call's own
// context, as ClientConfig.Retrier's doc says, for a unary call and for a
// stream.
func TestHooksGetTheCallsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := &service{
			unary:  failing(1, code(codes.Unavailable)),
			server: failingStreams(1, code(codes.Unavailable)).server,
		}
		type key struct{}
		ctx := context.WithValue(context.Background(), key{}, "the call's")
		var got []string
		r := immediate(3)
		r.OnRetry = func(c context.Context, _ int, _ error, _ time.Duration) {
			got = append(got, fmt.Sprint("OnRetry ", c == ctx))
		}
		r.OnDone = func(c context.Context, _ int, _ error) { got = append(got, fmt.Sprint("OnDone ", c == ctx)) }
		c := client(t, ClientConfig{Retrier: r})
		cc := dialBuf(t, svc, grpc.WithUnaryInterceptor(c.UnaryInterceptor()), grpc.WithStreamInterceptor(c.StreamInterceptor()))
		if _, err := call(ctx, cc, "hi"); err != nil {
			t.Fatal(err)
		}
		if _, err := recvAll(ctx, cc, "m"); err != nil {
			t.Fatal(err)
		}
		if want := []string{"OnRetry true", "OnDone true", "OnRetry true", "OnDone true"}; !slices.Equal(got, want) {
			t.Errorf("hooks got %q, want %q", got, want)
		}
	})
}

// TestStreamCancelledBeforeReceiving: a stream whose attempt failed, and
// whose caller then cancelled it without a RecvMsg or Header, is done: its
// context's end calls OnDone, once, with its one attempt and the context's
// error, and the call is deposited in the Budget. A RecvMsg afterwards
// returns the end and calls OnDone no more.
func TestStreamCancelledBeforeReceiving(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const streams = 5
		svc := &service{client: func(grpc.ServerStream) error { return status.Error(codes.Unavailable, "injected") }}
		budget, err := backoff.NewBudget(backoff.BudgetConfig{Ratio: 1, Reserve: 0.001, Burst: 2 * streams})
		if err != nil {
			t.Fatal(err)
		}
		for budget.Withdraw() == nil { // empty
		}
		var dones atomic.Int64
		var doneErr atomic.Value
		r := immediate(3)
		r.Budget = budget
		r.OnDone = func(_ context.Context, attempts int, err error) {
			dones.Add(1)
			doneErr.Store(fmt.Sprintf("%d: %v", attempts, err))
		}
		c := client(t, ClientConfig{Retrier: r})
		cc := dialBuf(t, svc, grpc.WithStreamInterceptor(c.StreamInterceptor()))
		for i := range streams {
			ctx, cancel := context.WithCancel(context.Background())
			s, err := cc.NewStream(ctx, streamDesc(clientMethod), clientMethod)
			if err != nil {
				t.Fatal(err)
			}
			s.SendMsg(&msg{Text: "m"})
			synctest.Wait() // the attempt has failed
			cancel()
			synctest.Wait()
			if n := dones.Load(); n != int64(i+1) {
				t.Fatalf("stream %d: OnDone called %d times in all, want %d", i, n, i+1)
			}
			if got := doneErr.Load(); !strings.HasPrefix(got.(string), "1: ") || !strings.Contains(got.(string), "context canceled") {
				t.Errorf("stream %d: OnDone(%s), want 1 attempt and context canceled", i, got)
			}
			if err := s.RecvMsg(new(msg)); status.Code(err) != codes.Canceled || dones.Load() != int64(i+1) {
				t.Errorf("stream %d: RecvMsg after the end: %v, OnDone %d times in all; want Canceled and %d", i, err, dones.Load(), i+1)
			}
		}
		if got := budget.Available(); got < streams-0.01 || got > streams+0.01 {
			t.Errorf("the budget holds %.2f retries, want %d: one deposit per stream", got, streams)
		}
	})
}

// TestStreamSendErrorEndsCall: a SendMsg that fails with the client's own
// error (a message larger than grpc.MaxCallSendMsgSize: RESOURCE_EXHAUSTED
// from grpc-go) ends the stream, as grpc-go's doc says, with no RecvMsg:
// OnDone is called then, once, with one attempt, and the call is not
// retried, even by a ShouldRetry that retries everything; RecvMsg returns
// the loop's error, with grpc-go's code. So does one sent while the first attempt's
// stream has ended (grpc-go's SendMsg on it checks the size); RecvMsg and
// OnDone then have that stream's failure, as grpc-go's RecvMsg. A retry
// whose replay meets such an error (the message was kept while the first
// attempt's stream could not be opened) is not retried either: the call
// ends after two attempts.
func TestStreamSendErrorEndsCall(t *testing.T) {
	for _, tt := range []struct {
		name     string
		failOpen bool // the server fails the first stream at once
		noStream bool // the first stream cannot be opened
		attempts int
		code     codes.Code // the call's
	}{
		{"sent", false, false, 1, codes.ResourceExhausted},
		{"sent after the attempt ended", true, false, 1, codes.Unavailable},
		{"replayed", false, true, 2, codes.ResourceExhausted},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var calls atomic.Int64
				join := joinAll(0)
				svc := &service{client: func(ss grpc.ServerStream) error {
					if calls.Add(1) == 1 && tt.failOpen {
						return status.Error(codes.Unavailable, "injected at once")
					}
					return join(ss)
				}}
				var dones atomic.Int64
				var doneErr atomic.Value
				r := immediate(3)
				r.OnDone = func(_ context.Context, attempts int, err error) {
					dones.Add(1)
					doneErr.Store(fmt.Sprintf("%d: %v", attempts, err))
				}
				c := client(t, ClientConfig{Retrier: r, ShouldRetry: func(Failure) bool { return true }})
				opened := 0
				failFirst := opens(&opened, tt.noStream)
				cc := dialBuf(t, svc, grpc.WithChainStreamInterceptor(c.StreamInterceptor(), failFirst))
				s, err := cc.NewStream(context.Background(), streamDesc(clientMethod), clientMethod, grpc.MaxCallSendMsgSize(8))
				if err != nil {
					t.Fatal(err)
				}
				synctest.Wait()
				if err := s.SendMsg(&msg{Text: "ok"}); err != nil {
					t.Fatalf("SendMsg ok: %v", err)
				}
				err = s.SendMsg(&msg{Text: strings.Repeat("x", 100)})
				if tt.noStream {
					if err != nil {
						t.Fatalf("SendMsg of 100 bytes, kept: %v", err)
					}
					s.CloseSend()
				} else if status.Code(err) != codes.ResourceExhausted {
					t.Fatalf("SendMsg of 100 bytes: %v, want RESOURCE_EXHAUSTED", err)
				}
				if !tt.noStream {
					synctest.Wait()
					if n, got := dones.Load(), doneErr.Load(); n != 1 || !strings.HasPrefix(got.(string), "1: ") || !strings.Contains(got.(string), tt.code.String()) {
						t.Errorf("OnDone called %d times (%v), want once, with 1 attempt and %v", n, got, tt.code)
					}
				}
				err = s.RecvMsg(new(msg))
				if got := doneErr.Load(); status.Code(err) != tt.code || dones.Load() != 1 || !strings.HasPrefix(got.(string), fmt.Sprint(tt.attempts, ": ")) {
					t.Errorf("RecvMsg: %v, OnDone %d times (%v); want %v, once, with %d attempts", err, dones.Load(), got, tt.code, tt.attempts)
				}
			})
		})
	}
}

// refusing is a client stream that fails SendMsg of "bad" with
// INVALID_ARGUMENT without sending it, and without ending the stream, as a
// validating interceptor below the Client's might.
type refusing struct{ grpc.ClientStream }

func (s refusing) SendMsg(m any) error {
	if e, ok := m.(*encoded); ok && string(e.data.Materialize()) == "bad" {
		return status.Error(codes.InvalidArgument, "injected: refused")
	}
	return s.ClientStream.SendMsg(m)
}

// TestStreamSendErrorOfInterceptor: a SendMsg error that did not end the
// stream below (an interceptor's) does not hold SendMsg: the stream goes
// on, the server answers what was sent, and OnDone is called once.
func TestStreamSendErrorOfInterceptor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := &service{client: joinAll(0)}
		var dones atomic.Int64
		r := immediate(3)
		r.OnDone = func(context.Context, int, error) { dones.Add(1) }
		c := client(t, ClientConfig{Retrier: r})
		refuse := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			s, err := streamer(ctx, desc, cc, method, opts...)
			if err != nil {
				return nil, err
			}
			return refusing{s}, nil
		}
		cc := dialBuf(t, svc, grpc.WithChainStreamInterceptor(c.StreamInterceptor(), refuse))
		s, err := cc.NewStream(context.Background(), streamDesc(clientMethod), clientMethod)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range []string{"ok", "bad", "more"} {
			if err := s.SendMsg(&msg{Text: x}); (err != nil) != (x == "bad") {
				t.Fatalf("SendMsg %s: %v", x, err)
			}
		}
		s.CloseSend()
		m := new(msg)
		if err := s.RecvMsg(m); err != nil || m.Text != "ok,more," || dones.Load() != 1 {
			t.Errorf("RecvMsg: %q, %v, OnDone %d times; want ok,more, once", m.Text, err, dones.Load())
		}
	})
}
