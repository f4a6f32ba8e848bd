package backoffgrpc

import (
	"context"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
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

// recvAll calls the server-streaming method with text and returns
// the messages received and the error that ended the stream (nil for
// io.EOF).
func recvAll(ctx context.Context, cc *grpc.ClientConn, text string) ([]string, error) {
	s, err := cc.NewStream(ctx, streamDesc(serverMethod), serverMethod)
	if err != nil {
		return nil, err
	}
	if err := s.SendMsg(&msg{Text: text}); err != nil {
		return nil, err
	}
	if err := s.CloseSend(); err != nil {
		return nil, err
	}
	return recvTexts(s)
}

// sendAll calls the client-streaming method with texts and returns the
// answer.
func sendAll(ctx context.Context, cc *grpc.ClientConn, texts []string) (string, error) {
	s, err := cc.NewStream(ctx, streamDesc(clientMethod), clientMethod)
	if err != nil {
		return "", err
	}
	for _, x := range texts {
		if err := s.SendMsg(&msg{Text: x}); err == io.EOF {
			break
		} else if err != nil {
			return "", err
		}
	}
	if err := s.CloseSend(); err != nil {
		return "", err
	}
	m := new(msg)
	err = s.RecvMsg(m)
	return m.Text, err
}

// recvTexts receives from s (a client's or a server's stream) until it ends,
// and returns the messages' texts, with nil at io.EOF or the error that
// ended it.
func recvTexts(s interface{ RecvMsg(m any) error }) ([]string, error) {
	var got []string
	for {
		m := new(msg)
		if err := s.RecvMsg(m); err == io.EOF {
			return got, nil
		} else if err != nil {
			return got, err
		}
		got = append(got, m.Text)
	}
}

// echoFailingFirst is a bidirectional handler that echoes every message,
// except on its first call, which echoes none and fails with UNAVAILABLE
// at the first message (the i-th, from 0) for which failAt reports true.
func echoFailingFirst(failAt func(i int, m *msg) bool) func(grpc.ServerStream) error {
	var calls atomic.Int64
	return func(ss grpc.ServerStream) error {
		first := calls.Add(1) == 1
		for i := 0; ; i++ {
			m := new(msg)
			if err := ss.RecvMsg(m); err == io.EOF {
				return nil
			} else if err != nil {
				return err
			}
			if first {
				if failAt(i, m) {
					return status.Error(codes.Unavailable, "injected")
				}
				continue
			}
			if err := ss.SendMsg(m); err != nil {
				return err
			}
		}
	}
}

// opens returns a stream interceptor, chained after a Client's, that counts
// in *opened the attempts' streams opened, and fails the first with
// UNAVAILABLE when failFirst.
func opens(opened *int, failFirst bool) grpc.StreamClientInterceptor {
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		if *opened++; *opened == 1 && failFirst {
			return nil, status.Error(codes.Unavailable, "injected: no connection")
		}
		return streamer(ctx, desc, cc, method, opts...)
	}
}

// texts returns "0", "1", … "n-1".
func texts(n int) []string {
	s := make([]string, n)
	for i := range s {
		s[i] = strconv.Itoa(i)
	}
	return s
}

// joinAll is a client-streaming handler that reads every message and
// answers with them joined; its first n calls fail with UNAVAILABLE after
// reading them all (before sending anything).
func joinAll(n int) func(grpc.ServerStream) error {
	var calls atomic.Int64
	return func(ss grpc.ServerStream) error {
		var got []byte
		for {
			m := new(msg)
			if err := ss.RecvMsg(m); err == io.EOF {
				break
			} else if err != nil {
				return err
			}
			got = append(append(got, m.Text...), ',')
		}
		if calls.Add(1) <= int64(n) {
			return status.Error(codes.Unavailable, "injected")
		}
		return ss.SendMsg(&msg{Text: string(got)})
	}
}

// TestServerStreamRetriedBeforeFirstMessage: a server stream that fails
// before sending anything is opened again and the caller sees each message
// once.
func TestServerStreamRetriedBeforeFirstMessage(t *testing.T) {
	var calls atomic.Int64
	svc := &service{server: func(in *msg, ss grpc.ServerStream) error {
		if calls.Add(1) <= 2 {
			return status.Error(codes.Unavailable, "injected")
		}
		for i := range 3 {
			if err := ss.SendMsg(&msg{Text: in.Text + strconv.Itoa(i)}); err != nil {
				return err
			}
		}
		return nil
	}}
	cc, _ := connect(t, svc, ClientConfig{})
	got, err := recvAll(context.Background(), cc, "m")
	if err != nil || !slices.Equal(got, []string{"m0", "m1", "m2"}) {
		t.Errorf("got %q, %v; want m0 m1 m2", got, err)
	}
	if got, want := svc.attempts(serverMethod), []string{"", "1", "2"}; !slices.Equal(got, want) {
		t.Errorf("grpc-previous-rpc-attempts %q, want %q", got, want)
	}
}

// TestServerStreamNotRetriedAfterMessage: once a message has arrived the
// call is committed: the failure that follows is returned, the stream is
// not reopened and the message not delivered again.
func TestServerStreamNotRetriedAfterMessage(t *testing.T) {
	svc := &service{server: func(in *msg, ss grpc.ServerStream) error {
		if err := ss.SendMsg(in); err != nil {
			return err
		}
		return status.Error(codes.Unavailable, "injected after a message")
	}}
	cc, _ := connect(t, svc, ClientConfig{Retrier: immediate(3)})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	got, err := recvAll(ctx, cc, "m")
	if status.Code(err) != codes.Unavailable || !slices.Equal(got, []string{"m"}) || svc.count(serverMethod) != 1 {
		t.Errorf("got %d messages, %v after %d streams; want one message, then Unavailable, 1 stream", len(got), err, svc.count(serverMethod))
	}
}

// TestServerStreamEmpty: a stream that ends without a message at once is a
// success (io.EOF), not retried.
func TestServerStreamEmpty(t *testing.T) {
	svc := &service{server: func(*msg, grpc.ServerStream) error { return nil }}
	cc, _ := connect(t, svc, ClientConfig{})
	got, err := recvAll(context.Background(), cc, "m")
	if err != nil || len(got) != 0 || svc.count(serverMethod) != 1 {
		t.Errorf("got %q, %v after %d streams; want nothing, io.EOF, 1 stream", got, err, svc.count(serverMethod))
	}
}

// TestServerStreamExhausted: every attempt fails: the caller gets the last
// status, which says what the retries did.
func TestServerStreamExhausted(t *testing.T) {
	svc := &service{server: func(*msg, grpc.ServerStream) error { return status.Error(codes.Unavailable, "injected") }}
	cc, done := connect(t, svc, ClientConfig{Retrier: immediate(4)})
	_, err := recvAll(context.Background(), cc, "m")
	var e *backoff.Error
	if status.Code(err) != codes.Unavailable || !errors.As(err, &e) || e.Attempts != 4 || !errors.Is(err, backoff.ErrExhausted) || *done != err {
		t.Errorf("error %v, want Unavailable, 4 attempts, ErrExhausted, given to OnDone", err)
	}
	if svc.count(serverMethod) != 4 {
		t.Errorf("%d streams, want 4", svc.count(serverMethod))
	}
}

// TestClientStreamReplayed: a client stream that failed after the server
// read it all is sent again, whole, on the retry; it kept five messages of
// 1 byte and its header, exactly MaxReplayBytes.
func TestClientStreamReplayed(t *testing.T) {
	svc := &service{client: joinAll(2)}
	cc, _ := connect(t, svc, ClientConfig{MaxReplayBytes: 5 * 6})
	got, err := sendAll(context.Background(), cc, texts(5))
	if err != nil || got != "0,1,2,3,4," || svc.count(clientMethod) != 3 {
		t.Errorf("got %q, %v after %d streams; want 0,1,2,3,4, after 3", got, err, svc.count(clientMethod))
	}
}

// TestClientStreamFailsEarly: a server that fails the stream before reading
// it: the messages sent to the failed attempt are kept (SendMsg returns nil)
// and all sent on the retry.
func TestClientStreamFailsEarly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int64
		join := joinAll(0)
		svc := &service{client: func(ss grpc.ServerStream) error {
			if calls.Add(1) == 1 {
				return status.Error(codes.Unavailable, "injected at once")
			}
			return join(ss)
		}}
		c := client(t, ClientConfig{Retrier: immediate(3)})
		cc := dialBuf(t, svc, grpc.WithStreamInterceptor(c.StreamInterceptor()))
		s, err := cc.NewStream(context.Background(), streamDesc(clientMethod), clientMethod)
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the first attempt has failed: the sends meet it
		for _, x := range texts(10) {
			if err := s.SendMsg(&msg{Text: x}); err != nil {
				t.Fatalf("SendMsg: %v", err)
			}
		}
		s.CloseSend()
		m := new(msg)
		if err := s.RecvMsg(m); err != nil || m.Text != "0,1,2,3,4,5,6,7,8,9," || svc.count(clientMethod) != 2 {
			t.Errorf("got %q, %v after %d streams; want every message after 2", m.Text, err, svc.count(clientMethod))
		}
	})
}

// TestClientStreamOverReplay: a stream that sent more than MaxReplayBytes
// (five messages of 1 byte and its header, one byte more than the bound)
// is not retried, and says why.
func TestClientStreamOverReplay(t *testing.T) {
	svc := &service{client: joinAll(1)}
	cc, done := connect(t, svc, ClientConfig{MaxReplayBytes: 5*6 - 1})
	_, err := sendAll(context.Background(), cc, texts(5))
	if status.Code(err) != codes.Unavailable || !errors.Is(err, ErrNotReplayable) || !errors.Is(*done, ErrNotReplayable) || svc.count(clientMethod) != 1 {
		t.Errorf("error %v after %d streams, want Unavailable, ErrNotReplayable, 1 stream", err, svc.count(clientMethod))
	}
}

// TestBidiRetried: a bidirectional stream that fails before answering is
// replayed; the answers come once.
func TestBidiRetried(t *testing.T) {
	svc := &service{bidi: echoFailingFirst(func(_ int, m *msg) bool { return m.Text == "2" })}
	cc, _ := connect(t, svc, ClientConfig{})
	s, err := cc.NewStream(context.Background(), streamDesc(bidiMethod), bidiMethod)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range texts(3) {
		if err := s.SendMsg(&msg{Text: x}); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for range 3 {
		m := new(msg)
		if err := s.RecvMsg(m); err != nil {
			t.Fatalf("RecvMsg after %q: %v", got, err)
		}
		got = append(got, m.Text)
	}
	s.CloseSend()
	if err := s.RecvMsg(new(msg)); err != io.EOF {
		t.Errorf("end of stream %v, want io.EOF", err)
	}
	if !slices.Equal(got, texts(3)) || svc.count(bidiMethod) != 2 {
		t.Errorf("got %q after %d streams, want 0 1 2 after 2", got, svc.count(bidiMethod))
	}
}

// TestStreamNotConnected: a stream to a server that is not there is
// retried, and fails at RecvMsg with the last status.
func TestStreamNotConnected(t *testing.T) {
	c := client(t, ClientConfig{Retrier: immediate(3)})
	cc := dial(t, "127.0.0.1:1", grpc.WithStreamInterceptor(c.StreamInterceptor()))
	_, err := recvAll(context.Background(), cc, "m")
	var e *backoff.Error
	if status.Code(err) != codes.Unavailable || !errors.As(err, &e) || e.Attempts != 3 {
		t.Errorf("error %v, want Unavailable after 3 attempts", err)
	}
}

// TestStreamCancelled: a caller that cancels during the wait gets the
// context's end at once; a cancelled context opens no stream.
func TestStreamCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := &service{server: func(*msg, grpc.ServerStream) error { return status.Error(codes.Unavailable, "injected") }}
		c := client(t, ClientConfig{Retrier: constant(time.Hour, 3)})
		cc := dialBuf(t, svc, grpc.WithStreamInterceptor(c.StreamInterceptor()))
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(time.Minute, cancel)
		start := time.Now()
		_, err := recvAll(ctx, cc, "m")
		if time.Since(start) != time.Minute || !errors.Is(err, context.Canceled) || svc.count(serverMethod) != 1 {
			t.Errorf("error %v after %v and %d streams; want context.Canceled after 1m and 1 stream", err, time.Since(start), svc.count(serverMethod))
		}
		if _, err := recvAll(ctx, cc, "m"); status.Code(err) != codes.Canceled || svc.count(serverMethod) != 1 {
			t.Errorf("cancelled context: %v, %d streams; want Canceled and no stream", err, svc.count(serverMethod))
		}
	})
}

// TestStreamAttemptTimeout: AttemptTimeout bounds a stream's attempt until
// its first message, not after.
func TestStreamAttemptTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int64
		svc := &service{server: func(in *msg, ss grpc.ServerStream) error {
			if calls.Add(1) == 1 {
				<-ss.Context().Done() // silent until cut off
				return ss.Context().Err()
			}
			for i := range 2 {
				time.Sleep(5 * time.Second) // longer than AttemptTimeout, after the first
				if err := ss.SendMsg(&msg{Text: strconv.Itoa(i)}); err != nil {
					return err
				}
			}
			return nil
		}}
		c := client(t, ClientConfig{Retrier: immediate(3), AttemptTimeout: 10 * time.Second})
		cc := dialBuf(t, svc, grpc.WithStreamInterceptor(c.StreamInterceptor()))
		start := time.Now()
		got, err := recvAll(context.Background(), cc, "m")
		if err != nil || !slices.Equal(got, texts(2)) {
			t.Errorf("got %q, %v; want 0 1", got, err)
		}
		if d := time.Since(start).Round(time.Millisecond); d != 20*time.Second || svc.count(serverMethod) != 2 {
			t.Errorf("took %v and %d streams, want 20s and 2", d, svc.count(serverMethod))
		}
	})
}

// TestStreamAttemptTimeoutReported: a stream whose attempts all time out
// fails with a timeout.
func TestStreamAttemptTimeoutReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := &service{server: func(in *msg, ss grpc.ServerStream) error {
			<-ss.Context().Done()
			return ss.Context().Err()
		}}
		c := client(t, ClientConfig{Retrier: immediate(2), AttemptTimeout: time.Second})
		cc := dialBuf(t, svc, grpc.WithStreamInterceptor(c.StreamInterceptor()))
		_, err := recvAll(context.Background(), cc, "m")
		var timeout interface{ Timeout() bool }
		if !errors.As(err, &timeout) || !timeout.Timeout() || status.Code(err) != codes.DeadlineExceeded || errors.Is(err, context.Canceled) {
			t.Errorf("error %v (code %v), want a DEADLINE_EXCEEDED timeout", err, status.Code(err))
		}
	})
}

// TestStreamHeaderRetries: Header, called first, runs the retries as
// RecvMsg does and returns the headers of the attempt that answered; the
// trailer and context are that attempt's.
func TestStreamHeaderRetries(t *testing.T) {
	var calls atomic.Int64
	svc := &service{server: func(in *msg, ss grpc.ServerStream) error {
		n := calls.Add(1)
		if n <= 2 {
			return status.Error(codes.Unavailable, "injected")
		}
		ss.SetTrailer(metadata.Pairs("attempt", strconv.Itoa(int(n))))
		if err := ss.SendHeader(metadata.Pairs("attempt", strconv.Itoa(int(n)))); err != nil {
			return err
		}
		return ss.SendMsg(in)
	}}
	cc, _ := connect(t, svc, ClientConfig{})
	s, err := cc.NewStream(context.Background(), streamDesc(serverMethod), serverMethod)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SendMsg(&msg{Text: "m"}); err != nil {
		t.Fatal(err)
	}
	s.CloseSend()
	md, err := s.Header()
	if err != nil || !equal(md["attempt"], "3") {
		t.Fatalf("Header() = %v, %v; want the third attempt's", md, err)
	}
	m := new(msg)
	if err := s.RecvMsg(m); err != nil || m.Text != "m" {
		t.Errorf("RecvMsg: %q, %v", m.Text, err)
	}
	if err := s.RecvMsg(m); err != io.EOF {
		t.Errorf("end: %v, want io.EOF", err)
	}
	if tr := s.Trailer(); !equal(tr["attempt"], "3") {
		t.Errorf("Trailer() = %v, want the third attempt's", tr)
	}
	if s.Context().Err() == nil {
		t.Errorf("the ended stream's context is live")
	}
}

// TestStreamHeaderOfFailure: Header of a stream whose every attempt
// failed returns no headers and no error, as grpc's does; RecvMsg returns
// the failure.
func TestStreamHeaderOfFailure(t *testing.T) {
	svc := &service{server: func(*msg, grpc.ServerStream) error { return status.Error(codes.Unavailable, "injected") }}
	cc, _ := connect(t, svc, ClientConfig{Retrier: immediate(2)})
	s, err := cc.NewStream(context.Background(), streamDesc(serverMethod), serverMethod)
	if err != nil {
		t.Fatal(err)
	}
	s.SendMsg(&msg{})
	s.CloseSend()
	if md, err := s.Header(); md != nil || err != nil {
		t.Errorf("Header() = %v, %v; want nil, nil", md, err)
	}
	if err := s.RecvMsg(new(msg)); status.Code(err) != codes.Unavailable || !errors.Is(err, backoff.ErrExhausted) {
		t.Errorf("RecvMsg: %v, want Unavailable, exhausted", err)
	}
	if svc.count(serverMethod) != 2 {
		t.Errorf("%d streams, want 2", svc.count(serverMethod))
	}
}

// TestBidiConcurrentRetry: one goroutine sends while another receives, and
// the first attempt fails midway, before answering: every message is
// answered once, in order, from the retry.
func TestBidiConcurrentRetry(t *testing.T) {
	svc := &service{bidi: echoFailingFirst(func(_ int, m *msg) bool { return m.Text == "5" })}
	cc, _ := connect(t, svc, ClientConfig{})
	s, err := cc.NewStream(context.Background(), streamDesc(bidiMethod), bidiMethod)
	if err != nil {
		t.Fatal(err)
	}
	const n = 50
	sent := make(chan error, 1)
	go func() {
		for _, x := range texts(n) {
			if err := s.SendMsg(&msg{Text: x}); err != nil {
				sent <- err
				return
			}
			time.Sleep(100 * time.Microsecond)
		}
		sent <- s.CloseSend()
	}()
	got, err := recvTexts(s)
	if err != nil {
		t.Fatalf("RecvMsg after %d: %v", len(got), err)
	}
	if err := <-sent; err != nil {
		t.Errorf("sending: %v", err)
	}
	if !slices.Equal(got, texts(n)) || svc.count(bidiMethod) != 2 {
		t.Errorf("got %q after %d streams, want 0 … %d once each after 2", got, svc.count(bidiMethod), n-1)
	}
}

// TestStreamAttemptTimeoutAfterHeaders: an attempt whose headers came but
// no message within AttemptTimeout ends as a timeout, and is not retried:
// it is committed.
func TestStreamAttemptTimeoutAfterHeaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := &service{server: func(in *msg, ss grpc.ServerStream) error {
			if err := ss.SendHeader(metadata.Pairs("x", "y")); err != nil {
				return err
			}
			select {
			case <-time.After(time.Minute):
				return ss.SendMsg(in)
			case <-ss.Context().Done():
				return ss.Context().Err()
			}
		}}
		c := client(t, ClientConfig{Retrier: immediate(3), AttemptTimeout: 10 * time.Second})
		cc := dialBuf(t, svc, grpc.WithStreamInterceptor(c.StreamInterceptor()))
		start := time.Now()
		_, err := recvAll(context.Background(), cc, "m")
		timeout, ok := err.(interface{ Timeout() bool })
		if !ok || !timeout.Timeout() || status.Code(err) != codes.DeadlineExceeded || svc.count(serverMethod) != 1 || time.Since(start) != 10*time.Second {
			t.Errorf("error %v after %d streams and %v; want the attempt's timeout after 1 and 10s", err, svc.count(serverMethod), time.Since(start))
		}
	})
}

// TestStreamReplayLimitDuringWait: a stream whose sends go past MaxReplayBytes
// while the loop waits to retry it (a bidirectional call whose receiver
// runs the loop) is not retried: the retry would send none of the
// messages, and the server would answer a call the caller did not make.
func TestStreamReplayLimitDuringWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int64
		join := joinAll(0)
		svc := &service{bidi: func(ss grpc.ServerStream) error {
			if calls.Add(1) == 1 {
				return status.Error(codes.Unavailable, "injected at once")
			}
			return join(ss)
		}}
		c := client(t, ClientConfig{Retrier: constant(time.Second, 3), MaxReplayBytes: 12})
		cc := dialBuf(t, svc, grpc.WithStreamInterceptor(c.StreamInterceptor()))
		s, err := cc.NewStream(context.Background(), streamDesc(bidiMethod), bidiMethod)
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the first attempt has failed
		if err := s.SendMsg(&msg{Text: "0"}); err != nil {
			t.Fatalf("SendMsg 0: %v", err)
		}
		m := new(msg)
		recv := make(chan error, 1)
		go func() { recv <- s.RecvMsg(m) }()
		synctest.Wait() // the loop waits a second to retry
		sendErr := error(nil)
		for _, x := range texts(3)[1:] {
			if sendErr = s.SendMsg(&msg{Text: x}); sendErr != nil {
				break
			}
		}
		s.CloseSend()
		err = <-recv
		var e *backoff.Error
		if !errors.As(err, &e) || !errors.Is(err, ErrNotReplayable) || e.Attempts != 1 || svc.count(bidiMethod) != 1 {
			t.Errorf("SendMsg past MaxReplayBytes: %v; RecvMsg = %q, %v after %d streams; want ErrNotReplayable after 1 attempt", sendErr, m.Text, err, svc.count(bidiMethod))
		}
	})
}

// TestStreamOpenFailsOverReplay: a stream whose first attempt could not be
// opened, and whose caller sent past MaxReplayBytes before receiving, is not
// retried: no stream reaches the server with part of the call.
func TestStreamOpenFailsOverReplay(t *testing.T) {
	svc := &service{client: joinAll(0)}
	c := client(t, ClientConfig{Retrier: immediate(3), MaxReplayBytes: 12})
	opened := 0
	failFirst := opens(&opened, true)
	cc := dial(t, listen(t, svc), grpc.WithChainStreamInterceptor(c.StreamInterceptor(), failFirst))
	got, err := sendAll(context.Background(), cc, texts(3))
	var e *backoff.Error
	if !errors.As(err, &e) || !errors.Is(err, ErrNotReplayable) || e.Attempts != 1 || status.Code(err) != codes.Unavailable || svc.count(clientMethod) != 0 {
		t.Errorf("got %q, %v after %d streams at the server; want Unavailable, ErrNotReplayable after 1 attempt, none", got, err, svc.count(clientMethod))
	}
}

// TestStreamHeaderAfterEnd: Header called after the stream has ended
// returns the headers of the attempt that answered, as grpc's does, for a
// stream that sent headers and no message, then ended with OK or failed
// (committed by its headers).
func TestStreamHeaderAfterEnd(t *testing.T) {
	for _, fail := range []bool{false, true} {
		svc := &service{server: func(in *msg, ss grpc.ServerStream) error {
			if err := ss.SendHeader(metadata.Pairs("request-id", "7")); err != nil {
				return err
			}
			if fail {
				return status.Error(codes.Unavailable, "injected after a message")
			}
			return nil
		}}
		intercepted, _ := connect(t, svc, ClientConfig{})
		for _, cc := range []*grpc.ClientConn{dial(t, listen(t, svc)), intercepted} {
			s, err := cc.NewStream(context.Background(), streamDesc(serverMethod), serverMethod)
			if err != nil {
				t.Fatal(err)
			}
			s.SendMsg(&msg{Text: "m"})
			s.CloseSend()
			for s.RecvMsg(new(msg)) == nil {
			}
			if md, err := s.Header(); err != nil || !equal(md["request-id"], "7") {
				t.Errorf("failed %v, intercepted %v: Header() after the end = %v, %v; want request-id 7", fail, cc == intercepted, md, err)
			}
		}
	}
}

// TestStreamCallerDeadlineIsNotAttemptTimeout: a stream whose caller's
// deadline comes with its attempt's AttemptTimeout ends with the caller's
// deadline, not an attempt's timeout, whichever timer runs first.
func TestStreamCallerDeadlineIsNotAttemptTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := &service{server: func(in *msg, ss grpc.ServerStream) error {
			<-ss.Context().Done()
			return ss.Context().Err()
		}}
		c := client(t, ClientConfig{Retrier: immediate(3), AttemptTimeout: time.Second})
		cc := dialBuf(t, svc, grpc.WithStreamInterceptor(c.StreamInterceptor()))
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := recvAll(ctx, cc, "m")
		if err == nil || strings.Contains(err.Error(), "AttemptTimeout") || status.Code(err) != codes.DeadlineExceeded || svc.count(serverMethod) != 1 {
			t.Errorf("error %v after %d streams; want the caller's deadline after 1", err, svc.count(serverMethod))
		}
	})
}
