package backoffgrpc

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
)

// TestBidiReplayPastFlowControl: the replay of a bidirectional stream
// whose messages are more than the flow-control windows hold, to an echo
// server, completes: the caller's receiver, which runs the retry, reads
// the echoes while the messages are sent again, as a caller with a sender
// and a receiver does without retries.
func TestBidiReplayPastFlowControl(t *testing.T) {
	const n, size = 32, 16 << 10                                                          // 512 KiB each way, windows of 64 KiB
	svc := &service{bidi: echoFailingFirst(func(i int, _ *msg) bool { return i == n-1 })} // after every message
	windows := []grpc.ServerOption{grpc.InitialWindowSize(64 << 10), grpc.InitialConnWindowSize(64 << 10)}
	c := client(t, ClientConfig{Retrier: immediate(3), MaxReplayBytes: n * (size + 5)})
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
