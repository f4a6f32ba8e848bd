package backoffgrpc

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// streamCall makes a call of method's kind with the messages "0" "1" "2"
// and returns the answers joined, and the error that ended it (nil for
// io.EOF).
func streamCall(ctx context.Context, cc *grpc.ClientConn, method string) (string, error) {
	switch method {
	case serverMethod:
		got, err := recvAll(ctx, cc, "m")
		return strings.Join(got, ","), err
	case clientMethod:
		return sendAll(ctx, cc, texts(3))
	}
	s, err := cc.NewStream(ctx, streamDesc(method), method)
	if err != nil {
		return "", err
	}
	for _, x := range texts(3) {
		if err := s.SendMsg(&msg{Text: x}); err != nil {
			break
		}
	}
	s.CloseSend()
	got, err := recvTexts(s)
	return strings.Join(got, ","), err
}

// failingStreams returns a service whose three stream methods fail their
// first n calls as fail says, before answering (after reading every
// message), and then answer: the server stream with its request, the
// others with the messages joined.
func failingStreams(n int, fail func(ctx context.Context) error) *service {
	var calls atomic.Int64
	answer := func(ss grpc.ServerStream) error {
		got, err := recvTexts(ss)
		if err != nil {
			return err
		}
		text := strings.Join(got, "+")
		if calls.Add(1) <= int64(n) {
			return fail(ss.Context())
		}
		return ss.SendMsg(&msg{Text: text})
	}
	return &service{
		server: func(in *msg, ss grpc.ServerStream) error {
			if calls.Add(1) <= int64(n) {
				return fail(ss.Context())
			}
			return ss.SendMsg(in)
		},
		client: answer,
		bidi:   answer,
	}
}

// TestStreamStatusClasses: every kind of stream is retried, before it
// answers, for the status classes that a unary call is retried for, and
// only those; the answer comes once, and a status not retried comes as
// the server sent it.
func TestStreamStatusClasses(t *testing.T) {
	for _, tt := range []struct {
		name  string
		fail  func(context.Context) error
		calls int // at the server, for 3 attempts and 2 failures
		code  codes.Code
	}{
		{"UNAVAILABLE", code(codes.Unavailable), 3, codes.OK},
		{"RESOURCE_EXHAUSTED", code(codes.ResourceExhausted), 1, codes.ResourceExhausted},
		{"RESOURCE_EXHAUSTED with pushback", pushback(codes.ResourceExhausted, "1"), 3, codes.OK},
		{"UNAVAILABLE with pushback -1", pushback(codes.Unavailable, "-1"), 1, codes.Unavailable},
		{"INTERNAL", code(codes.Internal), 1, codes.Internal},
		{"ABORTED", code(codes.Aborted), 1, codes.Aborted},
		{"DEADLINE_EXCEEDED from the server", code(codes.DeadlineExceeded), 1, codes.DeadlineExceeded},
		{"CANCELLED from the server", code(codes.Canceled), 1, codes.Canceled},
		{"UNKNOWN", code(codes.Unknown), 1, codes.Unknown},
	} {
		for _, method := range []string{serverMethod, clientMethod, bidiMethod} {
			t.Run(tt.name+method, func(t *testing.T) {
				svc := failingStreams(2, tt.fail)
				cc, _ := connect(t, svc, ClientConfig{})
				got, err := streamCall(context.Background(), cc, method)
				if status.Code(err) != tt.code || svc.count(method) != tt.calls {
					t.Fatalf("got %q, %v after %d streams; want code %v after %d", got, err, svc.count(method), tt.code, tt.calls)
				}
				want := map[string]string{serverMethod: "m", clientMethod: "0+1+2", bidiMethod: "0+1+2"}[method]
				if tt.code == codes.OK && got != want {
					t.Errorf("answer %q, want %q once", got, want)
				}
				if s, _ := status.FromError(err); tt.code != codes.OK && tt.calls == 1 && !strings.HasSuffix(s.Message(), "injected "+tt.code.String()) {
					t.Errorf("message %q, want the server's", s.Message())
				}
			})
		}
	}
}
