package backoffgrpc

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"weak"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestStreamWatchReleased: a stream whose context is still live once it
// has ended (read to the end, failed for good, or failed by its own
// SendMsg) leaves nothing registered on that context: 1000 such streams
// on one context that never ends are all collected.
func TestStreamWatchReleased(t *testing.T) {
	svc := &service{server: func(in *msg, ss grpc.ServerStream) error {
		if in.Text == "fail" {
			return status.Error(codes.Unavailable, "injected")
		}
		return ss.SendMsg(in)
	}}
	c := client(t, ClientConfig{Retrier: immediate(2)})
	cc := dial(t, listen(t, svc), grpc.WithStreamInterceptor(c.StreamInterceptor()))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const n = 1000
	streams := make([]weak.Pointer[clientStream], 0, n)
	for i := range n {
		cs, err := cc.NewStream(ctx, streamDesc(serverMethod), serverMethod, grpc.MaxCallSendMsgSize(100))
		if err != nil {
			t.Fatal(err)
		}
		text := [...]string{"ok", "fail", string(make([]byte, 200))}[i%3] // the last fails SendMsg
		cs.SendMsg(&msg{Text: text})
		cs.CloseSend()
		recvTexts(cs)
		streams = append(streams, weak.Make(cs.(*clientStream)))
	}
	runtime.GC()
	runtime.GC()
	live := 0
	for _, p := range streams {
		if p.Value() != nil {
			live++
		}
	}
	if live != 0 {
		t.Errorf("%d of %d ended streams still reachable while their context is live", live, n)
	}
}

// onDoneKey keys the caller's count of OnDone calls in its context.
type onDoneKey struct{}

// TestStreamOnDoneOnceUnderRaces: OnDone is called exactly once for every
// stream, 600 at once, when the caller's cancel races its first RecvMsg,
// comes after CloseSend without a RecvMsg, or comes after a server that
// ended the stream before reading it; and for streams read to the end.
func TestStreamOnDoneOnceUnderRaces(t *testing.T) {
	svc := &service{server: func(in *msg, ss grpc.ServerStream) error {
		switch in.Text {
		case "early":
			return status.Error(codes.Unavailable, "injected: early end")
		case "hold":
			<-ss.Context().Done()
			return ss.Context().Err()
		}
		return ss.SendMsg(in)
	}}
	var total atomic.Int64
	r := *constant(time.Millisecond, 3)
	r.OnDone = func(ctx context.Context, _ int, _ error) {
		ctx.Value(onDoneKey{}).(*atomic.Int64).Add(1)
		total.Add(1)
	}
	c := client(t, ClientConfig{Retrier: &r})
	cc := dial(t, listen(t, svc), grpc.WithStreamInterceptor(c.StreamInterceptor()))
	const n = 600
	counts := make([]atomic.Int64, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ctx, cancel := context.WithCancel(context.WithValue(context.Background(), onDoneKey{}, &counts[i]))
			defer cancel()
			s, err := cc.NewStream(ctx, streamDesc(serverMethod), serverMethod)
			if err != nil {
				t.Errorf("stream %d: %v", i, err)
				return
			}
			text := [...]string{"hold", "hold", "early", "ok"}[i%4]
			s.SendMsg(&msg{Text: text})
			s.CloseSend()
			switch i % 4 {
			case 0: // cancel races the first RecvMsg
				go cancel()
				recvTexts(s)
			case 1, 2: // cancel without RecvMsg
				time.Sleep(time.Duration(i%5) * time.Millisecond)
				cancel()
			case 3:
				recvTexts(s)
			}
		})
	}
	wg.Wait()
	for deadline := time.Now().Add(10 * time.Second); total.Load() < n && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // a second call, if any, has come
	var wrong []string
	for i := range counts {
		if k := counts[i].Load(); k != 1 {
			wrong = append(wrong, fmt.Sprintf("%d: %d", i, k))
		}
	}
	if len(wrong) > 0 || total.Load() != n {
		t.Errorf("OnDone %d times for %d streams; streams not called once: %v", total.Load(), n, wrong)
	}
}
