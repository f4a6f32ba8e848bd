package backoffgrpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/gzip"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// rawCodec sends a *[]byte as it is, with no copy, and receives into one:
// the tests' servers force it, to see the bytes a client sent.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(*v.(*[]byte))}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	*v.(*[]byte) = data.Materialize()
	return nil
}

func (rawCodec) Name() string { return "raw" }

// codecV2 is the tests' codec as an encoding.CodecV2 of another name.
type codecV2 struct{}

func (codecV2) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(v.(*msg).Text)}, nil
}

func (codecV2) Unmarshal(data mem.BufferSlice, v any) error {
	v.(*msg).Text = string(data.Materialize())
	return nil
}

func (codecV2) Name() string { return "other" }

// reusingCodec is the tests' codec encoding every message into one buffer
// of its own, which the next Marshal overwrites (for one stream at a time).
type reusingCodec struct {
	codec
	buf []byte
}

func (c *reusingCodec) Marshal(v any) ([]byte, error) {
	c.buf = append(c.buf[:0], v.(*msg).Text...)
	return c.buf, nil
}

// codecV0 is the tests' codec as a grpc.Codec, which has no name.
type codecV0 struct{ codec }

func (codecV0) String() string { return "v0" }

func init() {
	encoding.RegisterCodecV2(codecV2{})
	encoding.RegisterCodecV2(rawCodec{})
}

// uploads is a client-streaming handler, on a server that forces rawCodec,
// that records the bytes of each message that each call received, and the
// call's content-type; its first call fails with UNAVAILABLE after reading
// failAfter messages, the others read every message and answer with an
// empty one.
type uploads struct {
	failAfter int

	mu           sync.Mutex
	calls        [][]string // per call, the messages received
	contentTypes []string
}

func (u *uploads) handle(ss grpc.ServerStream) error {
	u.mu.Lock()
	u.calls = append(u.calls, nil)
	call := len(u.calls) - 1
	u.contentTypes = append(u.contentTypes, strings.Join(metadata.ValueFromIncomingContext(ss.Context(), "content-type"), ","))
	u.mu.Unlock()
	for n := 0; call > 0 || n < u.failAfter; n++ {
		var b []byte
		if err := ss.RecvMsg(&b); err == io.EOF {
			return ss.SendMsg(new([]byte))
		} else if err != nil {
			return err
		}
		u.mu.Lock()
		u.calls[call] = append(u.calls[call], string(b))
		u.mu.Unlock()
	}
	return status.Error(codes.Unavailable, "injected after some messages")
}

func (u *uploads) received() (calls [][]string, contentTypes []string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.calls), slices.Clone(u.contentTypes)
}

// TestReplaySendsWhatWasSent: a client stream whose first attempt fails
// after the server has read two of its four messages is replayed with the
// bytes that the first attempt sent, although the caller reused one
// message value, or one buffer, for all of them (grpc.ClientStream's
// SendMsg does not allow it, but the loop works without retries): with
// the codec and the content-type that grpc-go chooses for the call's
// options, with compression, and for messages that the proto codec
// encodes in a pool's buffers, which grpc-go frees once sent, or that a
// codec encodes into one buffer that it reuses for the next message.
func TestReplaySendsWhatWasSent(t *testing.T) {
	protoBuffer := func() func(string) any { // a new message on one buffer
		var buf []byte
		return func(x string) any { buf = append(buf[:0], x...); return &wrapperspb.BytesValue{Value: buf} }
	}
	protoNew := func() func(string) any { // a new message on a new buffer
		return func(x string) any { return &wrapperspb.BytesValue{Value: []byte(x)} }
	}
	protoBytes := func(x string) string {
		b, err := proto.Marshal(&wrapperspb.BytesValue{Value: []byte(x)})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	oneMessage := func() func(string) any { // one message changed
		m := new(msg)
		return func(x string) any { m.Text = x; return m }
	}
	text := func(x string) string { return x }
	for _, tt := range []struct {
		name        string
		size        int                           // of each of the four chunks
		sender      func() func(chunk string) any // returns the message to send for each chunk
		wire        func(chunk string) string     // the bytes that the chunk's message is sent as
		dialOpts    []grpc.DialOption
		callOpts    []grpc.CallOption
		contentType string
	}{
		{"proto, one buffer", 4, protoBuffer, protoBytes, nil, nil, "application/grpc"},
		{"proto, one buffer, gzip", 4, protoBuffer, protoBytes, nil, []grpc.CallOption{grpc.UseCompressor(gzip.Name)}, "application/grpc"},
		{"proto, 4 KiB, encoded in a pool's buffers", 4 << 10, protoNew, protoBytes, nil, nil, "application/grpc"},
		{"content-subtype, one message", 4, oneMessage, text, []grpc.DialOption{grpc.WithDefaultCallOptions(grpc.CallContentSubtype(codec{}.Name()))}, nil, "application/grpc+backoffgrpc-test"},
		{"ForceCodec, one message", 4, oneMessage, text, nil, []grpc.CallOption{grpc.ForceCodec(codec{})}, "application/grpc+backoffgrpc-test"},
		{"ForceCodecV2 under a content-subtype, one message", 4, oneMessage, text, nil, []grpc.CallOption{grpc.ForceCodecV2(codecV2{}), grpc.CallContentSubtype("Other")}, "application/grpc+other"},
		{"CallCustomCodec, one message", 4, oneMessage, text, nil, []grpc.CallOption{grpc.CustomCodecCallOption{Codec: codecV0{}}}, "application/grpc"},
		{"proto, one buffer, gzip as the channel's default", 4, protoBuffer, protoBytes, []grpc.DialOption{grpc.WithDefaultCallOptions(grpc.UseCompressor(gzip.Name))}, nil, "application/grpc"},
		{"ForceCodec reusing its buffer, gzip", 4, oneMessage, text, nil, []grpc.CallOption{grpc.ForceCodec(&reusingCodec{}), grpc.UseCompressor(gzip.Name)}, "application/grpc+backoffgrpc-test"},
		{"ForceCodec reusing its buffer, 4 KiB", 4 << 10, oneMessage, text, nil, []grpc.CallOption{grpc.ForceCodec(&reusingCodec{})}, "application/grpc+backoffgrpc-test"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var chunks []string
			for _, c := range "abcd" {
				chunks = append(chunks, strings.Repeat(string(c), tt.size))
			}
			u := &uploads{failAfter: 2}
			c := client(t, ClientConfig{Retrier: immediate(3)})
			target := listen(t, &service{client: u.handle}, grpc.ForceServerCodecV2(rawCodec{}))
			cc, err := grpc.NewClient(target, append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()),
				grpc.WithStreamInterceptor(c.StreamInterceptor())}, tt.dialOpts...)...)
			if err != nil {
				t.Fatal(err)
			}
			defer cc.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			s, err := cc.NewStream(ctx, streamDesc(clientMethod), clientMethod, tt.callOpts...)
			if err != nil {
				t.Fatal(err)
			}
			next := tt.sender()
			for _, x := range chunks {
				if err := s.SendMsg(next(x)); err != nil {
					t.Fatalf("SendMsg: %v", err)
				}
			}
			if err := s.CloseSend(); err != nil {
				t.Fatal(err)
			}
			if err := s.RecvMsg(next("")); err != nil {
				t.Fatalf("RecvMsg: %v", err)
			}
			var want []string
			for _, x := range chunks {
				want = append(want, tt.wire(x))
			}
			calls, contentTypes := u.received()
			if len(calls) != 2 || !slices.Equal(calls[0], want[:2]) || !slices.Equal(calls[1], want) {
				t.Errorf("the attempts received %q, want %q, then %q", calls, want[:2], want)
			}
			if !slices.Equal(contentTypes, []string{tt.contentType, tt.contentType}) {
				t.Errorf("content-types %q, want %q twice", contentTypes, tt.contentType)
			}
		})
	}
}

// TestReplayBoundInBytes: a client stream keeps at most
// DefaultMaxReplayBytes for a retry: the heap grows by less than that and
// 1 MiB while the server, having read it all, has not answered; for 25
// messages of 4 MiB, each larger than the bound (100 MiB were kept when
// the bound counted 64 messages), and for 60 messages of 64 KiB, of which
// the bound holds three (3.75 MiB were kept).
func TestReplayBoundInBytes(t *testing.T) {
	for _, tt := range []struct{ n, size int }{{25, 4 << 20}, {60, 64 << 10}} {
		t.Run(fmt.Sprintf("%d×%dKiB", tt.n, tt.size>>10), func(t *testing.T) {
			read, answer := make(chan struct{}), make(chan struct{})
			svc := &service{client: func(ss grpc.ServerStream) error {
				if _, err := recvTexts(ss); err != nil {
					return err
				}
				close(read)
				<-answer
				return ss.SendMsg(&msg{Text: "ok"})
			}}
			c := client(t, ClientConfig{Retrier: immediate(3)})
			cc := dial(t, listen(t, svc, grpc.MaxRecvMsgSize(2*tt.size)), grpc.WithStreamInterceptor(c.StreamInterceptor()))
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			before := heap()
			s, err := cc.NewStream(ctx, streamDesc(clientMethod), clientMethod)
			if err != nil {
				t.Fatal(err)
			}
			for i := range tt.n {
				if err := s.SendMsg(&msg{Text: strings.Repeat(string(rune('a'+i%26)), tt.size)}); err != nil {
					t.Fatalf("SendMsg %d: %v", i, err)
				}
			}
			if err := s.CloseSend(); err != nil {
				t.Fatal(err)
			}
			<-read
			grown := heap() - before
			close(answer)
			if m := new(msg); s.RecvMsg(m) != nil || m.Text != "ok" {
				t.Fatalf("no answer")
			}
			t.Logf("heap grown by %.2f MiB while the server had not answered", float64(grown)/(1<<20))
			if limit := int64(DefaultMaxReplayBytes + 1<<20); grown > limit {
				t.Errorf("the heap grew by %.2f MiB, want at most %.2f MiB", float64(grown)/(1<<20), float64(limit)/(1<<20))
			}
		})
	}
}

// heap returns the bytes of live objects on the heap, after two collections
// (the second empties the pools' victim caches).
func heap() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// failingCodec is the tests' codec, which fails to encode "bad".
type failingCodec struct{ codec }

func (failingCodec) Marshal(v any) ([]byte, error) {
	if v.(*msg).Text == "bad" {
		return nil, errors.New("injected: cannot encode")
	}
	return codec{}.Marshal(v)
}

// TestReplayEncodingFails: a message that the call's codec cannot encode
// fails SendMsg and the stream as it does without the interceptor
// (INTERNAL, from grpc-go), is not retried, and OnDone hears of it; a
// content-subtype with no codec fails NewStream as grpc-go does.
func TestReplayEncodingFails(t *testing.T) {
	svc := &service{client: func(ss grpc.ServerStream) error {
		_, err := recvTexts(ss)
		return err
	}}
	target := listen(t, svc)
	forced := grpc.ForceCodec(failingCodec{})
	plain := dial(t, target)
	cc, done := connect(t, svc, ClientConfig{})
	for _, conn := range []*grpc.ClientConn{plain, cc} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s, err := conn.NewStream(ctx, streamDesc(clientMethod), clientMethod, forced)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.SendMsg(&msg{Text: "good"}); err != nil {
			t.Fatalf("SendMsg good: %v", err)
		}
		sendErr := s.SendMsg(&msg{Text: "bad"})
		recvErr := s.RecvMsg(new(msg))
		if status.Code(sendErr) != codes.Internal || !strings.Contains(sendErr.Error(), "injected: cannot encode") || status.Code(recvErr) != codes.Internal {
			t.Errorf("SendMsg bad: %v, then RecvMsg: %v; want grpc-go's INTERNAL for both", sendErr, recvErr)
		}
		if e := (*backoff.Error)(nil); conn == cc && (!errors.As(*done, &e) || e.Attempts != 1 || status.Code(e) != codes.Internal) {
			t.Errorf("OnDone's error %v, want INTERNAL after 1 attempt", *done)
		}
		_, err = conn.NewStream(ctx, streamDesc(clientMethod), clientMethod, grpc.CallContentSubtype("no-such-codec"))
		if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "no codec registered") {
			t.Errorf("NewStream with no codec: %v, want grpc-go's INTERNAL", err)
		}
	}
}

// TestReplayBoundEdges: MaxReplayBytes counts each message's encoded size
// and its 5-byte header, at the edges: an empty message needs 5 (1 keeps
// nothing), math.MaxInt keeps 100 KB, and a first message larger than the
// bound (zero: the default, 256 KiB) is not kept; a stream that kept everything is retried, another
// fails with an error that matches ErrNotReplayable, as OnDone's does.
func TestReplayBoundEdges(t *testing.T) {
	for _, tt := range []struct {
		bound   int
		sizes   []int
		retried bool
	}{
		{1, []int{0}, false},
		{5, []int{0}, true},
		{5, []int{0, 0}, false},
		{math.MaxInt, []int{100_000, 0}, true},
		{0, []int{256 << 10}, false}, // the default, 256 KiB
		{0, []int{256<<10 - 5}, true},
	} {
		var done error
		r := *immediate(3)
		r.OnDone = func(_ context.Context, _ int, err error) { done = err }
		c := client(t, ClientConfig{Retrier: &r, MaxReplayBytes: tt.bound})
		svc := &service{client: joinAll(1)}
		cc := dial(t, listen(t, svc, grpc.MaxRecvMsgSize(1<<20)), grpc.WithStreamInterceptor(c.StreamInterceptor()))
		var msgs []string
		for _, n := range tt.sizes {
			msgs = append(msgs, strings.Repeat("q", n))
		}
		_, err := sendAll(context.Background(), cc, msgs)
		if tt.retried {
			if err != nil || svc.count(clientMethod) != 2 {
				t.Errorf("bound %d, sizes %v: %v after %d streams; want success after 2", tt.bound, tt.sizes, err, svc.count(clientMethod))
			}
			continue
		}
		if !errors.Is(err, ErrNotReplayable) || !errors.Is(done, ErrNotReplayable) || status.Code(err) != codes.Unavailable || svc.count(clientMethod) != 1 {
			t.Errorf("bound %d, sizes %v: %v (OnDone %v) after %d streams; want UNAVAILABLE matching ErrNotReplayable after 1", tt.bound, tt.sizes, err, done, svc.count(clientMethod))
		}
	}
}
