package backoffgrpc

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestReplayEncodingFailsAfterAttemptEnded: a message that the call's
// codec cannot encode, sent while the stream's attempt has ended (its
// stream could not be opened, or its server failed at once) and the
// messages are kept for a retry, fails SendMsg with grpc-go's INTERNAL
// naming the codec's error, as grpc-go's SendMsg does on a stream that
// has ended, also while the loop waits to retry (a Header called before);
// the call is not retried, and its error does not say that the stream
// sent more than MaxReplayBytes.
func TestReplayEncodingFailsAfterAttemptEnded(t *testing.T) {
	for _, tt := range []struct{ openFails, waiting bool }{{true, false}, {false, false}, {true, true}} {
		openFails := tt.openFails
		synctest.Test(t, func(t *testing.T) {
			svc := &service{client: func(grpc.ServerStream) error { return status.Error(codes.Unavailable, "injected: at once") }}
			r := immediate(3)
			if tt.waiting {
				r = constant(time.Minute, 3)
			}
			c := client(t, ClientConfig{Retrier: r})
			opened := 0
			failFirst := opens(&opened, openFails)
			cc := dialBuf(t, svc, grpc.WithChainStreamInterceptor(c.StreamInterceptor(), failFirst))
			s, err := cc.NewStream(context.Background(), streamDesc(clientMethod), clientMethod, grpc.ForceCodec(failingCodec{}))
			if err != nil {
				t.Fatal(err)
			}
			if tt.waiting {
				go s.Header() // runs the loop, which waits to retry
			}
			synctest.Wait() // the server has failed the stream
			if err := s.SendMsg(&msg{Text: "good"}); err != nil {
				t.Fatalf("SendMsg good: %v", err)
			}
			sendErr := s.SendMsg(&msg{Text: "bad"})
			recvErr := s.RecvMsg(new(msg))
			if status.Code(sendErr) != codes.Internal || !strings.Contains(sendErr.Error(), "injected: cannot encode") {
				t.Errorf("%+v: SendMsg bad: %v; want grpc-go's INTERNAL naming the codec's error", tt, sendErr)
			}
			if errors.Is(recvErr, ErrNotReplayable) || opened != 1 {
				t.Errorf("%+v: RecvMsg %v after %d streams; want no word of MaxReplayBytes, 1 stream", tt, recvErr, opened)
			}
		})
	}
}

// TestPreparedMsgAfterAttemptEnded: a grpc.PreparedMsg, which the
// interceptor cannot encode (it is encoded already) and so cannot keep,
// sent while the attempt has ended, gets SendMsg's io.EOF, as from
// grpc-go's SendMsg on a stream that has ended, not a marshaling error;
// RecvMsg then says that the stream cannot be replayed. On a live stream
// it is sent.
func TestPreparedMsgAfterAttemptEnded(t *testing.T) {
	for _, ended := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			svc := &service{client: func(ss grpc.ServerStream) error {
				if ended {
					return status.Error(codes.Unavailable, "injected: at once")
				}
				got, err := recvTexts(ss)
				if err != nil {
					return err
				}
				return ss.SendMsg(&msg{Text: strings.Join(got, ",")})
			}}
			c := client(t, ClientConfig{Retrier: immediate(3)})
			cc := dialBuf(t, svc, grpc.WithStreamInterceptor(c.StreamInterceptor()))
			s, err := cc.NewStream(context.Background(), streamDesc(clientMethod), clientMethod)
			if err != nil {
				t.Fatal(err)
			}
			synctest.Wait() // the server has failed the stream, if it does
			if err := s.SendMsg(&msg{Text: "a"}); err != nil {
				t.Fatalf("SendMsg a: %v", err)
			}
			pm := new(grpc.PreparedMsg)
			if err := pm.Encode(s, &msg{Text: "b"}); err != nil {
				t.Fatal(err)
			}
			sendErr := s.SendMsg(pm)
			s.CloseSend()
			m := new(msg)
			recvErr := s.RecvMsg(m)
			switch {
			case ended && (sendErr != io.EOF || !errors.Is(recvErr, ErrNotReplayable)):
				t.Errorf("ended: SendMsg of a PreparedMsg %v, RecvMsg %v; want io.EOF, then ErrNotReplayable", sendErr, recvErr)
			case !ended && (sendErr != nil || recvErr != nil || m.Text != "a,b"):
				t.Errorf("live: SendMsg of a PreparedMsg %v, RecvMsg %q, %v; want a,b", sendErr, m.Text, recvErr)
			}
		})
	}
}

// TestOversizeAfterAttemptEnded: a message larger than the call's
// grpc.MaxCallSendMsgSize, sent while the attempt has ended and the
// messages are kept, fails SendMsg with grpc-go's RESOURCE_EXHAUSTED, as
// grpc-go's SendMsg does on a stream that has ended, and opens no retry.
func TestOversizeAfterAttemptEnded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int64
		svc := &service{client: func(ss grpc.ServerStream) error {
			if calls.Add(1) == 1 {
				return status.Error(codes.Unavailable, "injected: at once")
			}
			_, err := recvTexts(ss)
			return err
		}}
		opened := 0
		count := opens(&opened, false)
		c := client(t, ClientConfig{Retrier: immediate(3)})
		cc := dialBuf(t, svc, grpc.WithChainStreamInterceptor(c.StreamInterceptor(), count))
		s, err := cc.NewStream(context.Background(), streamDesc(clientMethod), clientMethod, grpc.MaxCallSendMsgSize(10))
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the server has failed the stream
		s.SendMsg(&msg{Text: "a"})
		sendErr := s.SendMsg(&msg{Text: "01234567890"})
		s.CloseSend()
		s.RecvMsg(new(msg))
		if status.Code(sendErr) != codes.ResourceExhausted || opened != 1 {
			t.Errorf("SendMsg of 11 bytes over a limit of 10: %v, after %d streams; want RESOURCE_EXHAUSTED, 1 stream", sendErr, opened)
		}
	})
}
