package backoffgrpc

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// retryConfig is a service config that turns grpc-go's own retries on for
// the tests' service: 3 attempts, UNAVAILABLE.
const retryConfig = `{"methodConfig": [{
	"name": [{"service": "test.Test"}],
	"retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.001s", "maxBackoff": "0.001s",
		"backoffMultiplier": 1, "retryableStatusCodes": ["UNAVAILABLE"]}}]}`

// TestBuiltinRetriesStopAtPushback: grpc-go's own retries (no interceptor)
// call a failing server 3 times, and once when the server's handler had
// retried already: the server interceptor's pushback -1 stops them.
func TestBuiltinRetriesStopAtPushback(t *testing.T) {
	for _, tt := range []struct {
		name    string
		retried bool // the handler's own loop retried and gave up
		want    int
	}{{"handler did not retry", false, 3}, {"handler retried", true, 1}} {
		t.Run(tt.name, func(t *testing.T) {
			svc := &service{unary: func(ctx context.Context, _ *msg) (*msg, error) {
				policy := immediate(1).Policy
				if tt.retried {
					policy = immediate(2).Policy
				}
				err := backoff.Do(ctx, func(context.Context) error { return status.Error(codes.Unavailable, "dependency down") }, policy)
				return nil, err // the give-up as is: grpc sends the status in its chain
			}}
			cc := dial(t, listen(t, svc, grpc.UnaryInterceptor(UnaryServerInterceptor(ServerConfig{}))), grpc.WithDefaultServiceConfig(retryConfig))
			_, err := call(context.Background(), cc, "hi")
			if status.Code(err) != codes.Unavailable || svc.count(unaryMethod) != tt.want {
				t.Errorf("error %v after %d calls, want Unavailable after %d", err, svc.count(unaryMethod), tt.want)
			}
		})
	}
}

// TestBesideBuiltinRetries: on a channel whose service config retries
// UNAVAILABLE 3 times, the interceptor of 3 attempts stands back from what
// grpc-go retried (3 calls, not 9); DialOptions turns grpc-go's retries off
// and the interceptor's 3 attempts are the only ones; RetryInner retries
// over grpc-go's, and the two multiply. Each channel makes two calls: the
// first while it is new (its service config not known yet), the second
// once it is connected.
func TestBesideBuiltinRetries(t *testing.T) {
	for _, tt := range []struct {
		name       string
		dialOpts   bool
		retryInner bool
		builtin    bool // the channel has a retryPolicy
		calls      int  // per call
		reason     error
	}{
		{"interceptor over grpc-go's retries", false, false, true, 3, backoff.ErrRetriedBelow},
		{"DialOptions: grpc-go's retries off", true, false, true, 3, backoff.ErrExhausted},
		{"RetryInner: both retry", false, true, true, 9, backoff.ErrExhausted},
		{"no retryPolicy", false, false, false, 3, backoff.ErrExhausted},
	} {
		t.Run(tt.name, func(t *testing.T) {
			svc := alwaysUnavailable()
			r := immediate(3)
			r.RetryInner = tt.retryInner
			c := client(t, ClientConfig{Retrier: r})
			var opts []grpc.DialOption
			if tt.builtin {
				opts = append(opts, grpc.WithDefaultServiceConfig(retryConfig))
			}
			if tt.dialOpts {
				opts = append(opts, c.DialOptions()...)
			} else {
				opts = append(opts, grpc.WithUnaryInterceptor(c.UnaryInterceptor()))
			}
			cc := dial(t, listen(t, svc), opts...)
			for i := 1; i <= 2; i++ {
				_, err := call(context.Background(), cc, "hi")
				if status.Code(err) != codes.Unavailable || !errors.Is(err, tt.reason) || svc.count(unaryMethod) != i*tt.calls {
					t.Errorf("call %d: error %v after %d calls in all, want Unavailable, %v, after %d", i, err, svc.count(unaryMethod), tt.reason, i*tt.calls)
				}
			}
		})
	}
}

// TestDisableRetryByHand: a channel dialled with grpc.WithDisableRetry has
// no retries of grpc-go's own, whatever its service config says, so the
// interceptors' are the only ones: 3 calls, ErrExhausted, for a unary call
// and a stream, new channel or connected.
func TestDisableRetryByHand(t *testing.T) {
	svc := alwaysUnavailable()
	svc.server = func(*msg, grpc.ServerStream) error { return status.Error(codes.Unavailable, "bottom down") }
	c := client(t, ClientConfig{Retrier: immediate(3)})
	cc := dial(t, listen(t, svc), grpc.WithDefaultServiceConfig(retryConfig), grpc.WithDisableRetry(),
		grpc.WithUnaryInterceptor(c.UnaryInterceptor()), grpc.WithStreamInterceptor(c.StreamInterceptor()))
	for i := 1; i <= 2; i++ {
		_, err := call(context.Background(), cc, "hi")
		if status.Code(err) != codes.Unavailable || !errors.Is(err, backoff.ErrExhausted) || svc.count(unaryMethod) != 3*i {
			t.Errorf("unary call %d: error %v after %d calls in all, want Unavailable, ErrExhausted, after %d", i, err, svc.count(unaryMethod), 3*i)
		}
		_, err = recvAll(context.Background(), cc, "hi")
		if status.Code(err) != codes.Unavailable || !errors.Is(err, backoff.ErrExhausted) || svc.count(serverMethod) != 3*i {
			t.Errorf("stream %d: error %v after %d calls in all, want Unavailable, ErrExhausted, after %d", i, err, svc.count(serverMethod), 3*i)
		}
	}
}

// TestStreamBesideBuiltinRetries: grpc-go retries streams too, until they
// are committed; the stream interceptor stands back from what it retried.
func TestStreamBesideBuiltinRetries(t *testing.T) {
	svc := &service{server: func(*msg, grpc.ServerStream) error { return status.Error(codes.Unavailable, "bottom down") }}
	c := client(t, ClientConfig{Retrier: immediate(3)})
	cc := dial(t, listen(t, svc), grpc.WithDefaultServiceConfig(retryConfig), grpc.WithStreamInterceptor(c.StreamInterceptor()))
	for i := 1; i <= 2; i++ {
		_, err := recvAll(context.Background(), cc, "hi")
		if status.Code(err) != codes.Unavailable || !errors.Is(err, backoff.ErrRetriedBelow) || svc.count(serverMethod) != 3*i {
			t.Errorf("stream %d: error %v after %d calls in all, want Unavailable, ErrRetriedBelow, after %d", i, err, svc.count(serverMethod), 3*i)
		}
	}
}

// policyConfig is a service config with grpc-go's retries for the tests'
// service: 3 attempts of the codes given, and the token bucket
// retryThrottling when throttling is set (of 2 tokens: the first failure
// throttles).
func policyConfig(retryable string, throttling bool) string {
	throttle := ""
	if throttling {
		throttle = `, "retryThrottling": {"maxTokens": 2, "tokenRatio": 0.1}`
	}
	return `{"methodConfig": [{"name": [{"service": "test.Test"}],
		"retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.001s", "maxBackoff": "0.001s",
		"backoffMultiplier": 1, "retryableStatusCodes": [` + retryable + `]}}]` + throttle + `}`
}

// TestOverBuiltinRetries: on a channel with grpc-go's retries, the
// interceptor stands back only from the calls that grpc-go made more than
// one attempt of; after a call grpc-go made once, it decides as on a
// channel without them.
func TestOverBuiltinRetries(t *testing.T) {
	for _, tt := range []struct {
		name      string
		retryable string // the policy's retryableStatusCodes
		throttled bool
		fail      func(ctx context.Context, call int) error
		calls     int // at the server, for the interceptor's 3 attempts
		reason    error
	}{
		{"the code is not the policy's", `"ABORTED"`, false, func(context.Context, int) error {
			return status.Error(codes.Unavailable, "down")
		}, 3, backoff.ErrExhausted},
		{"grpc-go retried, then another code", `"UNAVAILABLE"`, false, func(_ context.Context, n int) error {
			if n == 1 {
				return status.Error(codes.Unavailable, "down")
			}
			return status.Error(codes.Aborted, "conflict")
		}, 2, backoff.ErrRetriedBelow},
		{"throttled: grpc-go made one attempt", `"UNAVAILABLE"`, true, func(context.Context, int) error {
			return status.Error(codes.Unavailable, "down")
		}, 3, backoff.ErrExhausted},
		{"pushback -1", `"UNAVAILABLE"`, false, func(ctx context.Context, _ int) error {
			return pushback(codes.Unavailable, "-1")(ctx)
		}, 1, backoff.ErrRetriedBelow},
		{"committed", `"UNAVAILABLE"`, false, func(ctx context.Context, _ int) error {
			grpc.SendHeader(ctx, metadata.Pairs("k", "v"))
			return status.Error(codes.Unavailable, "down after answering")
		}, 1, ErrCommitted},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var n atomic.Int64
			svc := &service{unary: func(ctx context.Context, _ *msg) (*msg, error) {
				return nil, tt.fail(ctx, int(n.Add(1)))
			}}
			r := immediate(3)
			var done error
			r.OnDone = func(_ context.Context, _ int, err error) { done = err }
			c := client(t, ClientConfig{Retrier: r, ShouldRetry: func(f Failure) bool {
				return DefaultShouldRetry(f) || status.Code(f.Err) == codes.Aborted
			}})
			cc := dial(t, listen(t, svc), grpc.WithDefaultServiceConfig(policyConfig(tt.retryable, tt.throttled)), grpc.WithUnaryInterceptor(c.UnaryInterceptor()))
			_, err := call(context.Background(), cc, "hi")
			if err == nil || !errors.Is(done, tt.reason) || svc.count(unaryMethod) != tt.calls {
				t.Errorf("error %v (OnDone: %v) after %d calls, want %v after %d", err, done, svc.count(unaryMethod), tt.reason, tt.calls)
			}
		})
	}
}

// tokenCreds are per-RPC credentials that send the metadata "token".
type tokenCreds struct{ secure bool }

func (c tokenCreds) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"token": "secret"}, nil
}
func (c tokenCreds) RequireTransportSecurity() bool { return c.secure }

// TestCallerCredsKept: the credentials a caller gives a call, as a call
// option or a default one of the channel, are still sent on a channel with
// grpc-go's retries, where the interceptor counts grpc-go's attempts with
// credentials of its own; credentials that require transport security are
// still refused on an insecure channel, as without the interceptor.
func TestCallerCredsKept(t *testing.T) {
	token := func(ctx context.Context) *msg {
		md, _ := metadata.FromIncomingContext(ctx)
		return &msg{Text: strings.Join(md.Get("token"), ",")}
	}
	svc := &service{
		unary:  func(ctx context.Context, _ *msg) (*msg, error) { return token(ctx), nil },
		server: func(_ *msg, ss grpc.ServerStream) error { return ss.SendMsg(token(ss.Context())) },
	}
	// stream makes a server-streaming call and returns its one answer.
	stream := func(cc *grpc.ClientConn, opts ...grpc.CallOption) (string, error) {
		s, err := cc.NewStream(context.Background(), streamDesc(serverMethod), serverMethod, opts...)
		if err != nil {
			return "", err
		}
		if err := s.SendMsg(&msg{Text: "hi"}); err != nil {
			return "", err
		}
		s.CloseSend()
		m := new(msg)
		err = s.RecvMsg(m)
		return m.Text, err
	}
	addr := listen(t, svc)
	c := client(t, ClientConfig{Retrier: immediate(3)})
	for _, tt := range []struct {
		name     string
		dialOpts []grpc.DialOption
		callOpts []grpc.CallOption
		want     string
		code     codes.Code
	}{
		{"call option", nil, []grpc.CallOption{grpc.PerRPCCredentials(tokenCreds{})}, "secret", codes.OK},
		{"the last call option", nil, []grpc.CallOption{grpc.PerRPCCredentials(tokenCreds{secure: true}), grpc.PerRPCCredentials(tokenCreds{})}, "secret", codes.OK},
		{"pointer call option", nil, []grpc.CallOption{&grpc.PerRPCCredsCallOption{Creds: tokenCreds{}}}, "secret", codes.OK},
		{"default call option", []grpc.DialOption{grpc.WithDefaultCallOptions(grpc.PerRPCCredentials(tokenCreds{}))}, nil, "secret", codes.OK},
		{"none", nil, nil, "", codes.OK},
		{"requires transport security", nil, []grpc.CallOption{grpc.PerRPCCredentials(tokenCreds{secure: true})}, "", codes.Unauthenticated},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, interceptor := range []bool{false, true} {
				opts := append([]grpc.DialOption{grpc.WithDefaultServiceConfig(retryConfig)}, tt.dialOpts...)
				if interceptor {
					opts = append(opts, grpc.WithUnaryInterceptor(c.UnaryInterceptor()), grpc.WithStreamInterceptor(c.StreamInterceptor()))
				}
				cc := dial(t, addr, opts...)
				for i := 0; i < 2; i++ { // new, then connected
					got, err := call(context.Background(), cc, "hi", tt.callOpts...)
					if status.Code(err) != tt.code || got != tt.want {
						t.Errorf("interceptor %v, unary call %d: %q, %v; want %q, code %v", interceptor, i+1, got, err, tt.want, tt.code)
					}
					got, err = stream(cc, tt.callOpts...)
					if status.Code(err) != tt.code || got != tt.want {
						t.Errorf("interceptor %v, stream %d: %q, %v; want %q, code %v", interceptor, i+1, got, err, tt.want, tt.code)
					}
				}
			}
		})
	}
}

// TestNotConnectedNotCounted: an attempt that found no connection to send
// it on is not counted, as UnaryInterceptor says: on a channel with
// grpc-go's retries and no server, grpc-go retries each of the
// interceptor's 3 attempts (their errors say so), and the interceptor
// retries too.
func TestNotConnectedNotCounted(t *testing.T) {
	r := immediate(3)
	var grpcRetried atomic.Int64 // the interceptor's attempts that grpc-go made 3 of
	r.OnRetry = func(_ context.Context, _ int, err error, _ time.Duration) {
		if strings.Contains(err.Error(), "failed after 3 attempts") {
			grpcRetried.Add(1)
		}
	}
	c := client(t, ClientConfig{Retrier: r})
	cc := dial(t, "127.0.0.1:1", grpc.WithDefaultServiceConfig(retryConfig), grpc.WithUnaryInterceptor(c.UnaryInterceptor()))
	_, err := call(context.Background(), cc, "hi")
	if err != nil && strings.Contains(err.Error(), "failed after 3 attempts") {
		grpcRetried.Add(1)
	}
	var e *backoff.Error
	if status.Code(err) != codes.Unavailable || !errors.As(err, &e) || e.Attempts != 3 || !errors.Is(err, backoff.ErrExhausted) || grpcRetried.Load() != 3 {
		t.Errorf("error %v, %d of the attempts retried by grpc-go; want Unavailable after 3 attempts, each of 3 attempts of grpc-go's", err, grpcRetried.Load())
	}
}
