package backoffgrpc

import (
	"context"
	"errors"
	"io"
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

// TestNilRetrierDefaults: a ClientConfig without a Retrier retries as one
// with DefaultRetrier(), as their doc says: 5 attempts in all, full jitter
// of Base 200 ms, so at most 200+400+800+1600 ms of waits, then
// ErrExhausted. Each DefaultRetrier is a new one.
func TestNilRetrierDefaults(t *testing.T) {
	if a, b := DefaultRetrier(), DefaultRetrier(); a == b || a.Policy != b.Policy || a.Budget != nil || a.MaxElapsed != 0 || a.RetryInner || a.OnRetry != nil || a.OnDone != nil {
		t.Errorf("DefaultRetrier() = %+v, then %+v; want two Retriers, of one policy and no other field", a, b)
	}
	for _, r := range []*backoff.Retrier{nil, DefaultRetrier()} {
		synctest.Test(t, func(t *testing.T) {
			svc := &service{unary: failing(10, code(codes.Unavailable))}
			c := client(t, ClientConfig{Retrier: r})
			cc := dialBuf(t, svc, grpc.WithUnaryInterceptor(c.UnaryInterceptor()))
			start := time.Now()
			_, err := call(context.Background(), cc, "hi")
			var e *backoff.Error
			if !errors.As(err, &e) || e.Attempts != 5 || !errors.Is(err, backoff.ErrExhausted) || svc.count(unaryMethod) != 5 {
				t.Errorf("Retrier %v: error %v after %d calls, want ErrExhausted after 5", r, err, svc.count(unaryMethod))
			}
			if took := time.Since(start); took > 3*time.Second {
				t.Errorf("Retrier %v: took %v, more than the 3 s that full jitter of 200 ms allows", r, took)
			}
		})
	}
}

// TestClientStreamEmptyRetryCloses: a client stream that sent no message
// and closed is closed again on its retry, so that the server, which
// reads to the end, answers it.
func TestClientStreamEmptyRetryCloses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := &service{client: joinAll(1)}
		c := client(t, ClientConfig{Retrier: immediate(3)})
		cc := dialBuf(t, svc, grpc.WithStreamInterceptor(c.StreamInterceptor()))
		if got, err := sendAll(context.Background(), cc, nil); err != nil || got != "" || svc.count(clientMethod) != 2 {
			t.Errorf("got %q, %v after %d streams; want the empty answer after 2", got, err, svc.count(clientMethod))
		}
	})
}

// gatedRetries is a stream interceptor, below a Client's, whose retries'
// streams hold their first SendMsg until release is closed: a replay that
// flow control slows.
func gatedRetries(release <-chan struct{}) grpc.StreamClientInterceptor {
	var opened atomic.Int64
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		cs, err := streamer(ctx, desc, cc, method, opts...)
		if err != nil || opened.Add(1) == 1 {
			return cs, err
		}
		return &gatedStream{ClientStream: cs, release: release}, nil
	}
}

type gatedStream struct {
	grpc.ClientStream
	release <-chan struct{}
}

func (s *gatedStream) SendMsg(m any) error {
	<-s.release
	return s.ClientStream.SendMsg(m)
}

// TestStreamSendWaitsForReplay: while a retry sends the kept messages
// again, the caller's SendMsg and CloseSend wait, so that the server reads
// every message once, in the order sent.
func TestStreamSendWaitsForReplay(t *testing.T) {
	for _, last := range []string{"SendMsg", "CloseSend"} {
		t.Run(last, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var calls atomic.Int64
				join := joinAll(0)
				svc := &service{bidi: func(ss grpc.ServerStream) error {
					if calls.Add(1) == 1 {
						return status.Error(codes.Unavailable, "injected at once")
					}
					return join(ss)
				}}
				release := make(chan struct{})
				c := client(t, ClientConfig{Retrier: immediate(3)})
				cc := dialBuf(t, svc, grpc.WithChainStreamInterceptor(c.StreamInterceptor(), gatedRetries(release)))
				s, err := cc.NewStream(context.Background(), streamDesc(bidiMethod), bidiMethod)
				if err != nil {
					t.Fatal(err)
				}
				synctest.Wait() // the first attempt has failed
				for _, x := range texts(2) {
					if err := s.SendMsg(&msg{Text: x}); err != nil {
						t.Fatal(err)
					}
				}
				m := new(msg)
				recv := make(chan error, 1)
				go func() { recv <- s.RecvMsg(m) }()
				time.Sleep(time.Millisecond) // the loop's wait, a nanosecond, has passed
				synctest.Wait()              // the retry's replay is held
				returned := make(chan error, 1)
				go func() {
					if last == "SendMsg" {
						err := s.SendMsg(&msg{Text: "2"})
						s.CloseSend()
						returned <- err
						return
					}
					returned <- s.CloseSend()
				}()
				synctest.Wait()
				select {
				case err := <-returned:
					t.Fatalf("%s returned %v during the replay", last, err)
				default:
				}
				close(release)
				if err := <-returned; err != nil {
					t.Errorf("%s: %v", last, err)
				}
				want := "0,1,2,"
				if last == "CloseSend" {
					want = "0,1,"
				}
				if err := <-recv; err != nil || m.Text != want {
					t.Errorf("RecvMsg: %q, %v; want %q", m.Text, err, want)
				}
			})
		})
	}
}

// TestStreamHeaderAfterFirstMessage: Header called after the first message
// (the call committed, not ended) returns the answering attempt's headers.
func TestStreamHeaderAfterFirstMessage(t *testing.T) {
	var calls atomic.Int64
	svc := &service{server: func(in *msg, ss grpc.ServerStream) error {
		if calls.Add(1) == 1 {
			return status.Error(codes.Unavailable, "injected")
		}
		ss.SetHeader(metadata.Pairs("attempt", "2"))
		for range 2 {
			if err := ss.SendMsg(in); err != nil {
				return err
			}
		}
		return nil
	}}
	cc, _ := connect(t, svc, ClientConfig{})
	s, err := cc.NewStream(context.Background(), streamDesc(serverMethod), serverMethod)
	if err != nil {
		t.Fatal(err)
	}
	s.SendMsg(&msg{Text: "m"})
	s.CloseSend()
	if err := s.RecvMsg(new(msg)); err != nil {
		t.Fatal(err)
	}
	if md, err := s.Header(); err != nil || !equal(md["attempt"], "2") {
		t.Errorf("Header() = %v, %v; want the second attempt's", md, err)
	}
	if err := s.RecvMsg(new(msg)); err != nil {
		t.Errorf("second message: %v", err)
	}
	if err := s.RecvMsg(new(msg)); err != io.EOF {
		t.Errorf("end: %v, want io.EOF", err)
	}
}

// TestStreamNeverOpened: a stream none of whose attempts could be opened
// has no trailer and the caller's context.
func TestStreamNeverOpened(t *testing.T) {
	c := client(t, ClientConfig{Retrier: immediate(2)})
	cc := dial(t, "127.0.0.1:1", grpc.WithStreamInterceptor(c.StreamInterceptor()))
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, "caller's")
	s, err := cc.NewStream(ctx, streamDesc(serverMethod), serverMethod)
	if err != nil {
		t.Fatal(err)
	}
	s.SendMsg(&msg{})
	s.CloseSend()
	if err := s.RecvMsg(new(msg)); status.Code(err) != codes.Unavailable {
		t.Fatalf("RecvMsg: %v, want Unavailable", err)
	}
	if tr := s.Trailer(); tr != nil || s.Context() != ctx {
		t.Errorf("Trailer() = %v, Context() = %v; want none and the caller's", tr, s.Context())
	}
}

// TestStreamHeaderDuringRecv: Header and RecvMsg called at once, before the
// answer, run one loop between them: Header returns the answering
// attempt's headers, RecvMsg its message, and the server sees 2 streams.
func TestStreamHeaderDuringRecv(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int64
		svc := &service{server: func(in *msg, ss grpc.ServerStream) error {
			if calls.Add(1) == 1 {
				return status.Error(codes.Unavailable, "injected")
			}
			time.Sleep(time.Second)
			ss.SetHeader(metadata.Pairs("attempt", "2"))
			return ss.SendMsg(in)
		}}
		c := client(t, ClientConfig{Retrier: constant(time.Second, 3)})
		cc := dialBuf(t, svc, grpc.WithStreamInterceptor(c.StreamInterceptor()))
		s, err := cc.NewStream(context.Background(), streamDesc(serverMethod), serverMethod)
		if err != nil {
			t.Fatal(err)
		}
		s.SendMsg(&msg{Text: "m"})
		s.CloseSend()
		header := make(chan metadata.MD, 1)
		go func() { md, _ := s.Header(); header <- md }()
		m := new(msg)
		if err := s.RecvMsg(m); err != nil || m.Text != "m" {
			t.Errorf("RecvMsg: %q, %v", m.Text, err)
		}
		if md := <-header; !equal(md["attempt"], "2") || svc.count(serverMethod) != 2 {
			t.Errorf("Header() = %v after %d streams; want the second attempt's after 2", md, svc.count(serverMethod))
		}
	})
}
