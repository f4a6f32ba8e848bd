package backoffgrpc

// Review of the merge of grpcfix (the counter of grpc-go's attempts, the
// caller's own Header/Trailer options) with review3 (the stream loop on a
// context of its own, the replay on a goroutine of its own), against real
// grpc servers on loopback TCP.

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// sequenced returns a service whose three methods count their calls
// together, read every message of the call, record them joined by "+" in
// *got (one entry per call), and then fail as fail says for the call's
// number (1 for the first), or answer "ok" when fail returns nil.
func sequenced(fail func(n int) error) (*service, *[]string) {
	var mu sync.Mutex
	var got []string
	var calls atomic.Int64
	end := func(texts []string, send func(any) error) error {
		mu.Lock()
		got = append(got, strings.Join(texts, "+"))
		mu.Unlock()
		if err := fail(int(calls.Add(1))); err != nil {
			return err
		}
		return send(&msg{Text: "ok"})
	}
	readAll := func(ss grpc.ServerStream) error {
		var texts []string
		for {
			m := new(msg)
			if err := ss.RecvMsg(m); err == io.EOF {
				return end(texts, ss.SendMsg)
			} else if err != nil {
				return err
			}
			texts = append(texts, m.Text)
		}
	}
	return &service{
		unary: func(_ context.Context, in *msg) (*msg, error) {
			var out *msg
			err := end([]string{in.Text}, func(m any) error { out = m.(*msg); return nil })
			return out, err
		},
		server: func(in *msg, ss grpc.ServerStream) error { return end([]string{in.Text}, ss.SendMsg) },
		client: readAll,
		bidi:   readAll,
	}, &got
}

// failCodes returns a fail function for sequenced: call n fails with cs[n-1],
// OK meaning success; calls past cs succeed.
func failCodes(cs ...codes.Code) func(n int) error {
	return func(n int) error {
		if n > len(cs) || cs[n-1] == codes.OK {
			return nil
		}
		return status.Error(cs[n-1], "injected "+cs[n-1].String())
	}
}

// retryAborted is DefaultShouldRetry and ABORTED, which the tests' policy
// of grpc-go's (retryConfig) does not retry.
func retryAborted(f Failure) bool {
	return DefaultShouldRetry(f) || status.Code(f.Err) == codes.Aborted
}

// TestR4StreamsOverBuiltinRetries: on a channel whose service config
// retries UNAVAILABLE 3 times, a stream through the StreamInterceptor (3
// attempts) reaches the server at most as often as grpc-go's retries and
// the interceptor's together make sense, never their product: grpc-go's
// retries of an attempt of the interceptor's make it stand back, whichever
// attempt of its own that was; with grpc.WithDisableRetry given by hand
// the interceptor's attempts are the only ones. Client and bidi streams
// are replayed in full on every attempt, grpc-go's and the
// interceptor's.
func TestR4StreamsOverBuiltinRetries(t *testing.T) {
	U, A := codes.Unavailable, codes.Aborted
	for _, tt := range []struct {
		name    string
		disable bool // grpc.WithDisableRetry
		seq     []codes.Code
		calls   int // at the server, per stream
		reason  error
	}{
		{"grpc-go retries, the interceptor stands back", false, []codes.Code{U, U, U, U, U, U, U, U, U}, 3, backoff.ErrRetriedBelow},
		{"the interceptor's first attempt, then grpc-go's retries", false, []codes.Code{A, U, U, U, U, U, U, U, U}, 4, backoff.ErrRetriedBelow},
		{"grpc-go retried a later attempt of the interceptor's, then another code", false, []codes.Code{A, U, A, A, A}, 3, backoff.ErrRetriedBelow},
		{"grpc-go's retry answers within the interceptor's second attempt", false, []codes.Code{A, U, codes.OK}, 3, nil},
		{"WithDisableRetry: the interceptor's attempts only", true, []codes.Code{U, U, U, U, U, U, U, U, U}, 3, backoff.ErrExhausted},
		{"WithDisableRetry, other codes", true, []codes.Code{A, U, A, A}, 3, backoff.ErrExhausted},
	} {
		for _, method := range []string{serverMethod, clientMethod, bidiMethod} {
			t.Run(tt.name+method, func(t *testing.T) {
				r := immediate(3)
				var done error
				r.OnDone = func(_ context.Context, _ int, err error) { done = err }
				c := client(t, ClientConfig{Retrier: r, ShouldRetry: retryAborted})
				opts := []grpc.DialOption{grpc.WithDefaultServiceConfig(retryConfig), grpc.WithStreamInterceptor(c.StreamInterceptor())}
				if tt.disable {
					opts = append(opts, grpc.WithDisableRetry())
				}
				for i, state := range []string{"new", "connected"} {
					svc, got := sequenced(failCodes(tt.seq...))
					cc := dial(t, listen(t, svc), opts...)
					if i == 1 {
						cc.Connect()
						waitState(t, cc, connectivity.Ready)
					}
					answer, err := streamCall(context.Background(), cc, method)
					if !errors.Is(done, tt.reason) || (tt.reason == nil) != (err == nil) || len(*got) != tt.calls {
						t.Errorf("%s: %q, %v (OnDone %v) after %d calls at the server; want %v after %d", state, answer, err, done, len(*got), tt.reason, tt.calls)
					}
					want := "0+1+2"
					if method == serverMethod {
						want = "m"
					}
					for j, g := range *got {
						if g != want {
							t.Errorf("%s: the server's call %d got %q, want %q", state, j+1, g, want)
						}
					}
				}
			})
		}
	}
}

// waitState waits until cc is in state want, failing the test after 10 s.
func waitState(t *testing.T, cc *grpc.ClientConn, want connectivity.State) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for s := cc.GetState(); s != want; s = cc.GetState() {
		if !cc.WaitForStateChange(ctx, s) {
			t.Fatalf("channel %v, want %v", s, want)
		}
	}
}

// TestR4StreamHeaderAndRecvOverBuiltinRetries: Header and RecvMsg called
// at once, while the interceptor's retries replay a client stream and
// grpc-go retries within them, share one loop (-race): the caller gets
// the headers and the one answer, and the stand-back is decided with the
// attempt's own counter.
func TestR4StreamHeaderAndRecvOverBuiltinRetries(t *testing.T) {
	U, A := codes.Unavailable, codes.Aborted
	for _, tt := range []struct {
		name   string
		seq    []codes.Code
		calls  int
		reason error
	}{
		{"answered", []codes.Code{A, U, codes.OK}, 3, nil},
		{"stood back", []codes.Code{A, U, A, A, A}, 3, backoff.ErrRetriedBelow},
	} {
		t.Run(tt.name, func(t *testing.T) {
			svc, got := sequenced(failCodes(tt.seq...))
			r := immediate(3)
			var done error
			r.OnDone = func(_ context.Context, _ int, err error) { done = err }
			c := client(t, ClientConfig{Retrier: r, ShouldRetry: retryAborted})
			cc := dial(t, listen(t, svc), grpc.WithDefaultServiceConfig(retryConfig), grpc.WithStreamInterceptor(c.StreamInterceptor()))
			s, err := cc.NewStream(context.Background(), streamDesc(clientMethod), clientMethod)
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			var md metadata.MD
			var recvErr error
			m := new(msg)
			wg.Add(2)
			go func() { defer wg.Done(); md, _ = s.Header() }()
			go func() {
				defer wg.Done()
				for _, x := range texts(3) {
					if s.SendMsg(&msg{Text: x}) != nil {
						break
					}
				}
				s.CloseSend()
				recvErr = s.RecvMsg(m)
			}()
			wg.Wait()
			if !errors.Is(done, tt.reason) || (tt.reason == nil) != (recvErr == nil) || len(*got) != tt.calls {
				t.Errorf("%q, %v (OnDone %v) after %d calls at the server; want %v after %d", m.Text, recvErr, done, len(*got), tt.reason, tt.calls)
			}
			if tt.reason == nil && (m.Text != "ok" || md == nil) {
				t.Errorf("answer %q, header %v; want ok and the answer's headers", m.Text, md)
			}
			for j, g := range *got {
				if g != "0+1+2" {
					t.Errorf("the server's call %d got %q, want 0+1+2", j+1, g)
				}
			}
		})
	}
}

// lis returns a loopback listener.
func lis(t *testing.T) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// countedCreds are per-RPC credentials that count the calls of their
// GetRequestMetadata and fail them with err, when set.
type countedCreds struct {
	secure bool
	err    error
	n      atomic.Int64
}

func (c *countedCreds) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	c.n.Add(1)
	if c.err != nil {
		return nil, c.err
	}
	return map[string]string{"token": "secret"}, nil
}
func (c *countedCreds) RequireTransportSecurity() bool { return c.secure }

// TestR4CallerCredsErrorsAsWithout: the caller's per-RPC credentials, given
// as a value, a pointer option or a default call option of the channel,
// fail a call exactly as they do without the interceptor, on a channel
// with grpc-go's retries or without, new (idle: the interceptor counts) or
// connected, unary or stream: the same error text, and the credentials
// asked as often (grpc-go's 3 retries of a failing GetRequestMetadata,
// not 9).
func TestR4CallerCredsErrorsAsWithout(t *testing.T) {
	addr := listen(t, &service{
		unary:  func(context.Context, *msg) (*msg, error) { return &msg{Text: "ok"}, nil },
		server: func(_ *msg, ss grpc.ServerStream) error { return ss.SendMsg(&msg{Text: "ok"}) },
	})
	c := client(t, ClientConfig{Retrier: immediate(3)})
	// stream makes a server stream and returns where it failed, and why.
	stream := func(cc *grpc.ClientConn, opts ...grpc.CallOption) (string, error) {
		s, err := cc.NewStream(context.Background(), streamDesc(serverMethod), serverMethod, opts...)
		if err != nil {
			return "NewStream", err
		}
		s.SendMsg(&msg{Text: "hi"})
		s.CloseSend()
		return "RecvMsg", s.RecvMsg(new(msg))
	}
	for _, cr := range []struct {
		name  string
		creds func() *countedCreds
	}{
		{"requires transport security", func() *countedCreds { return &countedCreds{secure: true} }},
		{"fails with UNAVAILABLE", func() *countedCreds { return &countedCreds{err: status.Error(codes.Unavailable, "token server down")} }},
		{"fails with a plain error", func() *countedCreds { return &countedCreds{err: errors.New("no token")} }},
	} {
		for _, given := range []string{"value", "pointer", "default"} {
			for _, sc := range []string{"", retryConfig} {
				t.Run(cr.name+"/"+given+"/retryPolicy="+fmtBool(sc != ""), func(t *testing.T) {
					type outcome struct {
						err   string
						asked int64
					}
					var got [2][4]outcome // without, with the interceptor; unary and stream, new then connected
					for i, interceptor := range []bool{false, true} {
						creds := cr.creds()
						var opts []grpc.DialOption
						var callOpts []grpc.CallOption
						switch given {
						case "value":
							callOpts = []grpc.CallOption{grpc.PerRPCCredentials(creds)}
						case "pointer":
							callOpts = []grpc.CallOption{&grpc.PerRPCCredsCallOption{Creds: creds}}
						default:
							opts = append(opts, grpc.WithDefaultCallOptions(grpc.PerRPCCredentials(creds)))
						}
						if sc != "" {
							opts = append(opts, grpc.WithDefaultServiceConfig(sc))
						}
						if interceptor {
							opts = append(opts, grpc.WithUnaryInterceptor(c.UnaryInterceptor()), grpc.WithStreamInterceptor(c.StreamInterceptor()))
						}
						cc := dial(t, addr, opts...)
						retried := strings.Contains(cr.name, "UNAVAILABLE")
						for j := 0; j < 4; j++ {
							if j == 2 {
								cc.Connect()
								waitState(t, cc, connectivity.Ready)
							}
							before := creds.n.Load()
							var err error
							where := "Invoke"
							if j%2 == 0 {
								_, err = call(context.Background(), cc, "hi", callOpts...)
							} else {
								where, err = stream(cc, callOpts...)
							}
							if retried {
								// A failure retried, by grpc-go or the interceptor,
								// surfaces in RecvMsg, as StreamInterceptor says.
								where = ""
							}
							var e *backoff.Error
							if errors.As(err, &e) {
								err = e.Err // the interceptor's retries are not the question
							}
							got[i][j] = outcome{where + ": " + status.Convert(err).String(), creds.n.Load() - before}
						}
					}
					want := got[0]
					if sc == "" && strings.Contains(cr.name, "UNAVAILABLE") {
						for j := range want { // the interceptor's own 3 attempts
							want[j].asked *= 3
						}
					}
					if got[1] != want {
						t.Errorf("with the interceptor %+v\nwant                 %+v (without it: %+v)", got[1], want, got[0])
					}
				})
			}
		}
	}
}

func fmtBool(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// TestR4IdleChannel: a channel that went idle (grpc.WithIdleTimeout) has
// shut its resolver down; a call on it brings it back. Over grpc-go's
// retries the interceptor still stands back from them (3 calls at the
// server, not 9), on the call that wakes the channel and on the next;
// without a retryPolicy its own 3 attempts are the only ones.
func TestR4IdleChannel(t *testing.T) {
	for _, tt := range []struct {
		name   string
		sc     string
		reason error
	}{
		{"retryPolicy", retryConfig, backoff.ErrRetriedBelow},
		{"no retryPolicy", "", backoff.ErrExhausted},
	} {
		for _, method := range []string{unaryMethod, serverMethod, clientMethod} {
			t.Run(tt.name+method, func(t *testing.T) {
				seq := []codes.Code{codes.OK}
				for range 6 {
					seq = append(seq, codes.Unavailable)
				}
				svc, got := sequenced(failCodes(seq...))
				r := immediate(3)
				var done error
				r.OnDone = func(_ context.Context, _ int, err error) { done = err }
				c := client(t, ClientConfig{Retrier: r})
				opts := []grpc.DialOption{grpc.WithIdleTimeout(50 * time.Millisecond),
					grpc.WithUnaryInterceptor(c.UnaryInterceptor()), grpc.WithStreamInterceptor(c.StreamInterceptor())}
				if tt.sc != "" {
					opts = append(opts, grpc.WithDefaultServiceConfig(tt.sc))
				}
				cc := dial(t, listen(t, svc), opts...)
				if _, err := call(context.Background(), cc, "wake"); err != nil {
					t.Fatal(err)
				}
				for i, state := range []string{"idle", "woken"} {
					if i == 0 {
						waitState(t, cc, connectivity.Idle)
					}
					before := len(*got)
					var err error
					if method == unaryMethod {
						_, err = call(context.Background(), cc, "hi")
					} else {
						_, err = streamCall(context.Background(), cc, method)
					}
					if status.Code(err) != codes.Unavailable || !errors.Is(done, tt.reason) || len(*got)-before != 3 {
						t.Errorf("%s: %v (OnDone %v) after %d calls at the server; want Unavailable, %v, after 3", state, err, done, len(*got)-before, tt.reason)
					}
				}
			})
		}
	}
}
