package backoffgrpc

import (
	"context"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestBidiReplayPastFlowControl: the replay of a bidirectional stream
// whose messages are more than the flow-control windows hold, to an echo
// server, completes: the caller's receiver, which runs the retry, reads
// the echoes while the messages are sent again, as a caller with a sender
// and a receiver does without retries.
func TestBidiReplayPastFlowControl(t *testing.T) {
	const n, size = 32, 16 << 10 // 512 KiB each way, windows of 64 KiB
	var calls atomic.Int64
	svc := &service{bidi: func(ss grpc.ServerStream) error {
		first := calls.Add(1) == 1
		for i := 0; ; i++ {
			m := new(msg)
			if err := ss.RecvMsg(m); err == io.EOF {
				return nil
			} else if err != nil {
				return err
			}
			if first {
				if i == n-1 {
					return status.Error(codes.Unavailable, "injected after every message")
				}
				continue
			}
			if err := ss.SendMsg(m); err != nil {
				return err
			}
		}
	}}
	windows := []grpc.ServerOption{grpc.InitialWindowSize(64 << 10), grpc.InitialConnWindowSize(64 << 10)}
	c := client(t, ClientConfig{Retrier: immediate(3), MaxReplay: n})
	cc := dial(t, listen(t, svc, windows...), grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10),
		grpc.WithStreamInterceptor(c.StreamInterceptor()))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := cc.NewStream(ctx, streamDesc(bidiMethod), bidiMethod)
	if err != nil {
		t.Fatal(err)
	}
	payload := strings.Repeat("x", size)
	sent := make(chan error, 1)
	go func() {
		for range n {
			if err := s.SendMsg(&msg{Text: payload}); err != nil {
				sent <- err
				return
			}
		}
		sent <- s.CloseSend()
	}()
	got := 0
	for {
		m := new(msg)
		if err = s.RecvMsg(m); err != nil {
			break
		}
		got++
	}
	if err != io.EOF || got != n {
		t.Errorf("%d echoes, then %v; want %d, then io.EOF", got, err, n)
	}
	if err := <-sent; err != nil {
		t.Errorf("sending: %v", err)
	}
}
