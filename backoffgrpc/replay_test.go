package backoffgrpc

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/gzip"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// uploads is a client-streaming handler that records what each call
// received, as raw bytes, and its content-type; its first call fails with
// UNAVAILABLE after reading failAfter messages, the others read every
// message and answer with an empty one. newMsg and data give the messages'
// type and bytes.
type uploads[T any] struct {
	failAfter int
	newMsg    func() *T
	data      func(*T) []byte

	mu           sync.Mutex
	calls        [][]string // per call, the messages received
	contentTypes []string
}

func (u *uploads[T]) handle(ss grpc.ServerStream) error {
	u.mu.Lock()
	u.calls = append(u.calls, nil)
	call := len(u.calls) - 1
	u.contentTypes = append(u.contentTypes, strings.Join(metadata.ValueFromIncomingContext(ss.Context(), "content-type"), ","))
	u.mu.Unlock()
	for {
		if call == 0 && len(u.received(call)) == u.failAfter {
			return status.Error(codes.Unavailable, "injected after some messages")
		}
		m := u.newMsg()
		if err := ss.RecvMsg(m); err == io.EOF {
			break
		} else if err != nil {
			return err
		}
		u.mu.Lock()
		u.calls[call] = append(u.calls[call], string(u.data(m)))
		u.mu.Unlock()
	}
	return ss.SendMsg(u.newMsg())
}

func (u *uploads[T]) received(call int) []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.calls[call])
}

// TestReplaySendsWhatWasSent: a client stream whose first attempt fails
// after the server has read two of its four messages is replayed with the
// four messages as they were sent, although the caller reused one message
// value, or one buffer, for all of them (grpc.ClientStream's SendMsg does
// not allow it, but the loop works without retries), with the codec and
// the content-type that grpc-go chooses for the call's options, and with
// compression.
func TestReplaySendsWhatWasSent(t *testing.T) {
	chunks := []string{"aaaa", "bbbb", "cccc", "dddd"}
	for _, tt := range []struct {
		name        string
		proto       bool // messages are wrapperspb.BytesValue, one buffer reused; else *msg, one value reused
		dialOpts    []grpc.DialOption
		callOpts    []grpc.CallOption
		contentType string
	}{
		{"proto, one buffer", true, nil, nil, "application/grpc"},
		{"proto, one buffer, gzip", true, nil, []grpc.CallOption{grpc.UseCompressor(gzip.Name)}, "application/grpc"},
		{"content-subtype, one message", false, []grpc.DialOption{grpc.WithDefaultCallOptions(grpc.CallContentSubtype(codec{}.Name()))}, nil, "application/grpc+backoffgrpc-test"},
		{"ForceCodec, one message", false, nil, []grpc.CallOption{grpc.ForceCodec(codec{})}, "application/grpc+backoffgrpc-test"},
		{"ForceCodecV2 under a content-subtype, one message", false, nil, []grpc.CallOption{grpc.ForceCodecV2(codecV2{}), grpc.CallContentSubtype("Other")}, "application/grpc+other"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var received func(call int) []string
			var contentTypes func() []string
			svc := &service{}
			if tt.proto {
				u := &uploads[wrapperspb.BytesValue]{failAfter: 2, newMsg: func() *wrapperspb.BytesValue { return new(wrapperspb.BytesValue) },
					data: func(m *wrapperspb.BytesValue) []byte { return m.Value }}
				svc.client, received = u.handle, u.received
				contentTypes = func() []string { u.mu.Lock(); defer u.mu.Unlock(); return slices.Clone(u.contentTypes) }
			} else {
				u := &uploads[msg]{failAfter: 2, newMsg: func() *msg { return new(msg) }, data: func(m *msg) []byte { return []byte(m.Text) }}
				svc.client, received = u.handle, u.received
				contentTypes = func() []string { u.mu.Lock(); defer u.mu.Unlock(); return slices.Clone(u.contentTypes) }
			}
			c := client(t, ClientConfig{Retrier: immediate(3)})
			cc, err := grpc.NewClient(listen(t, svc), append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()),
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
			buf := make([]byte, 4)
			m := new(msg)
			for _, x := range chunks {
				var err error
				if tt.proto {
					copy(buf, x)
					err = s.SendMsg(&wrapperspb.BytesValue{Value: buf})
				} else {
					m.Text = x
					err = s.SendMsg(m)
				}
				if err != nil {
					t.Fatalf("SendMsg: %v", err)
				}
			}
			if err := s.CloseSend(); err != nil {
				t.Fatal(err)
			}
			if tt.proto {
				err = s.RecvMsg(new(wrapperspb.BytesValue))
			} else {
				err = s.RecvMsg(new(msg))
			}
			if err != nil {
				t.Fatalf("RecvMsg: %v", err)
			}
			if got := received(0); !slices.Equal(got, chunks[:2]) {
				t.Errorf("the first attempt received %q, want %q", got, chunks[:2])
			}
			if got := received(1); !slices.Equal(got, chunks) {
				t.Errorf("the retry received %q, want %q", got, chunks)
			}
			if got := contentTypes(); !slices.Equal(got, []string{tt.contentType, tt.contentType}) {
				t.Errorf("content-types %q, want %q twice", got, tt.contentType)
			}
		})
	}
}

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

func init() { encoding.RegisterCodecV2(codecV2{}) }

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
