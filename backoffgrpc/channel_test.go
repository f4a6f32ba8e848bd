package backoffgrpc

// The interceptors over the channel as grpc-go runs it, against real grpc
// servers on loopback TCP: its own retries (the counter of its attempts),
// the channel's states and service config, and the caller's own call
// options (Header/Trailer addresses, credentials, metadata).

import (
	"context"
	"errors"
	"net"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"weak"

	"github.com/backoffgo/backoff"
	"google.golang.org/grpc"
	grpcbackoff "google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
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
		texts, err := recvTexts(ss)
		if err != nil {
			return err
		}
		return end(texts, ss.SendMsg)
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

// TestStreamsOverBuiltinRetries: on a channel whose service config
// retries UNAVAILABLE 3 times, a stream through the StreamInterceptor (3
// attempts) reaches the server at most as often as grpc-go's retries and
// the interceptor's together make sense, never their product: grpc-go's
// retries of an attempt of the interceptor's make it stand back, whichever
// attempt of its own that was; with grpc.WithDisableRetry given by hand
// the interceptor's attempts are the only ones. Client and bidi streams
// are replayed in full on every attempt, grpc-go's and the
// interceptor's.
func TestStreamsOverBuiltinRetries(t *testing.T) {
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

// TestStreamHeaderAndRecvOverBuiltinRetries: Header and RecvMsg called
// at once, while the interceptor's retries replay a client stream and
// grpc-go retries within them, share one loop (-race): the caller gets
// the headers and the one answer, and the stand-back is decided with the
// attempt's own counter.
func TestStreamHeaderAndRecvOverBuiltinRetries(t *testing.T) {
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

// TestCallerCredsErrorsAsWithout: the caller's per-RPC credentials, given
// as a value, a pointer option or a default call option of the channel,
// fail a call exactly as they do without the interceptor, on a channel
// with grpc-go's retries or without, new (idle: the interceptor counts) or
// connected, unary or stream: the same error text, and the credentials
// asked as often (grpc-go's 3 retries of a failing GetRequestMetadata,
// not 9).
func TestCallerCredsErrorsAsWithout(t *testing.T) {
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

// TestIdleChannel: a channel that went idle (grpc.WithIdleTimeout) has
// shut its resolver down; a call on it brings it back. Over grpc-go's
// retries the interceptor still stands back from them (3 calls at the
// server, not 9), on the call that wakes the channel and on the next;
// without a retryPolicy its own 3 attempts are the only ones.
func TestIdleChannel(t *testing.T) {
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

// mdService answers each unary call as answer says for the call's number
// (1 for the first).
func mdService(answer func(ctx context.Context, n int) error) *service {
	var calls atomic.Int64
	return &service{unary: func(ctx context.Context, in *msg) (*msg, error) {
		if err := answer(ctx, int(calls.Add(1))); err != nil {
			return nil, err
		}
		return &msg{Text: "ok"}, nil
	}}
}

// TestCallerMDTwoAddresses: a caller that passes grpc.Header and
// grpc.Trailer twice has grpc fill both addresses of each, with the same
// metadata. Through the interceptor, a call whose first attempt reached
// the server (a Trailers-Only UNAVAILABLE with trailer metadata) and whose
// retry reached none must leave both as UnaryInterceptor says, "the last
// attempt's, nil when that attempt reached no server": the interceptor
// resets only the last address of each before an attempt, and grpc fills
// none for an attempt that reached no server, so the first keeps the
// first attempt's trailer.
func TestCallerMDTwoAddresses(t *testing.T) {
	l := lis(t)
	srv := grpc.NewServer()
	srv.RegisterService(&serviceDesc, mdService(func(ctx context.Context, n int) error {
		grpc.SetTrailer(ctx, metadata.Pairs("k", "first attempt"))
		return status.Error(codes.Unavailable, "going away")
	}))
	go srv.Serve(l)
	t.Cleanup(srv.Stop)
	r := immediate(2)
	var cc *grpc.ClientConn
	r.OnRetry = func(context.Context, int, error, time.Duration) {
		srv.Stop() // the retry reaches no server
		waitNot(t, cc, connectivity.Ready)
	}
	c := client(t, ClientConfig{Retrier: r})
	cc = dial(t, l.Addr().String(), grpc.WithUnaryInterceptor(c.UnaryInterceptor()))
	var h1, h2, t1, t2 metadata.MD
	_, err := call(context.Background(), cc, "hi", grpc.Header(&h1), grpc.Trailer(&t1), grpc.Header(&h2), grpc.Trailer(&t2))
	var e *backoff.Error
	if !errors.As(err, &e) || e.Attempts != 2 || status.Code(err) != codes.Unavailable {
		t.Fatalf("error %v, want UNAVAILABLE after 2 attempts", err)
	}
	if h1 != nil || h2 != nil || t1 != nil || t2 != nil {
		t.Errorf("headers %v and %v, trailers %v and %v; want all nil, the last attempt's, which reached no server", h1, h2, t1, t2)
	}
}

// waitNot waits until cc leaves state s, failing the test after 10 s.
func waitNot(t *testing.T, cc *grpc.ClientConn, s connectivity.State) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for cc.GetState() == s {
		if !cc.WaitForStateChange(ctx, s) {
			t.Fatalf("channel still %v", s)
		}
	}
}

// panicValue returns what f panics with, nil if it returns.
func panicValue(f func()) (v any) {
	defer func() { v = recover() }()
	f()
	return nil
}

// TestCallerMDAsWithout: the caller's Header and Trailer options, given
// per call, as pointers, twice, with a nil address, or as default call
// options of the channel, get what grpc gives them without the
// interceptor, for a call that succeeds at once, one that succeeds on the
// interceptor's retry (the retry's metadata) and one committed (the
// server's headers, then UNAVAILABLE: one attempt, ErrCommitted); a nil
// address panics as in grpc.
func TestCallerMDAsWithout(t *testing.T) {
	answers := map[string]func(ctx context.Context, n int) error{
		"succeeds": func(ctx context.Context, _ int) error {
			grpc.SetHeader(ctx, metadata.Pairs("h", "1"))
			grpc.SetTrailer(ctx, metadata.Pairs("t", "1"))
			return nil
		},
		"committed": func(ctx context.Context, _ int) error {
			grpc.SendHeader(ctx, metadata.Pairs("h", "1"))
			grpc.SetTrailer(ctx, metadata.Pairs("t", "1"))
			return status.Error(codes.Unavailable, "after answering")
		},
	}
	retried := func(ctx context.Context, n int) error { // the retry succeeds, as "succeeds" does
		if n == 1 {
			grpc.SetTrailer(ctx, metadata.Pairs("t", "failed"))
			return status.Error(codes.Unavailable, "injected")
		}
		return answers["succeeds"](ctx, n)
	}
	type got struct {
		h, t   [2]metadata.MD
		code   codes.Code
		calls  int
		panics bool
	}
	run := func(t *testing.T, answer func(context.Context, int) error, interceptor bool, defaults bool, opts func(h, tr *[2]metadata.MD) []grpc.CallOption) got {
		svc := mdService(answer)
		var g got
		callOpts := opts(&g.h, &g.t)
		var dialOpts []grpc.DialOption
		if defaults {
			dialOpts = append(dialOpts, grpc.WithDefaultCallOptions(callOpts...))
			callOpts = nil
		}
		c := client(t, ClientConfig{Retrier: immediate(3)})
		if interceptor {
			dialOpts = append(dialOpts, grpc.WithUnaryInterceptor(c.UnaryInterceptor()))
		}
		cc := dial(t, listen(t, svc), dialOpts...)
		var err error
		g.panics = panicValue(func() { _, err = call(context.Background(), cc, "hi", callOpts...) }) != nil
		g.code, g.calls = status.Code(err), svc.count(unaryMethod)
		return g
	}
	for _, o := range []struct {
		name     string
		defaults bool
		opts     func(h, tr *[2]metadata.MD) []grpc.CallOption
	}{
		{"per call", false, func(h, tr *[2]metadata.MD) []grpc.CallOption {
			return []grpc.CallOption{grpc.Header(&h[0]), grpc.Trailer(&tr[0])}
		}},
		{"pointers", false, func(h, tr *[2]metadata.MD) []grpc.CallOption {
			return []grpc.CallOption{&grpc.HeaderCallOption{HeaderAddr: &h[0]}, &grpc.TrailerCallOption{TrailerAddr: &tr[0]}}
		}},
		{"twice", false, func(h, tr *[2]metadata.MD) []grpc.CallOption {
			return []grpc.CallOption{grpc.Header(&h[0]), grpc.Trailer(&tr[0]), grpc.Header(&h[1]), grpc.Trailer(&tr[1])}
		}},
		{"nil header address", false, func(h, tr *[2]metadata.MD) []grpc.CallOption {
			return []grpc.CallOption{grpc.Header(nil), grpc.Trailer(&tr[0])}
		}},
		{"nil trailer address", false, func(h, tr *[2]metadata.MD) []grpc.CallOption {
			return []grpc.CallOption{grpc.Header(&h[0]), grpc.Trailer(nil)}
		}},
		{"default call options", true, func(h, tr *[2]metadata.MD) []grpc.CallOption {
			return []grpc.CallOption{grpc.Header(&h[0]), grpc.Trailer(&tr[0])}
		}},
	} {
		for _, name := range []string{"succeeds", "committed"} {
			t.Run(o.name+"/"+name, func(t *testing.T) {
				want := run(t, answers[name], false, o.defaults, o.opts)
				if g := run(t, answers[name], true, o.defaults, o.opts); !reflect.DeepEqual(g, want) {
					t.Errorf("with the interceptor %+v, without %+v", g, want)
				}
				if name == "succeeds" && !want.panics {
					// The interceptor's retry of a failure ends as the
					// success does without it, in 2 calls.
					want.calls = 2
					if g := run(t, retried, true, o.defaults, o.opts); !reflect.DeepEqual(g, want) {
						t.Errorf("retried: with the interceptor %+v, want %+v", g, want)
					}
				}
			})
		}
	}
}

// TestConnectingChannelCounts: a call that begins while its channel is
// connecting, its resolver not yet answered (so that its service config is
// not known), is counted, as UnaryInterceptor says: once the resolver
// answers with the channel's default config of grpc-go's retries, the
// interceptor stands back from them (3 calls at the server, not 9).
func TestConnectingChannelCounts(t *testing.T) {
	svc := alwaysUnavailable()
	r := manual.NewBuilderWithScheme("idlechannel")
	c := client(t, ClientConfig{Retrier: immediate(3)})
	var began sync.Once
	reached := make(chan struct{})
	signal := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		began.Do(func() { close(reached) }) // inside the interceptor: it has looked at the channel
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	cc := dial(t, "idlechannel:///server", grpc.WithResolvers(r), grpc.WithDefaultServiceConfig(retryConfig),
		grpc.WithChainUnaryInterceptor(c.UnaryInterceptor(), signal))
	cc.Connect() // leaves Idle for Connecting; the resolver does not answer yet
	waitState(t, cc, connectivity.Connecting)
	errc := make(chan error, 1)
	go func() {
		_, err := call(context.Background(), cc, "hi")
		errc <- err
	}()
	<-reached
	r.UpdateState(resolver.State{Addresses: []resolver.Address{{Addr: listen(t, svc)}}})
	err := <-errc
	if status.Code(err) != codes.Unavailable || !errors.Is(err, backoff.ErrRetriedBelow) || svc.count(unaryMethod) != 3 {
		t.Errorf("error %v after %d calls, want Unavailable, ErrRetriedBelow, after 3", err, svc.count(unaryMethod))
	}
}

// TestTransparentRetryWithoutPolicy: on a new channel without a
// retryPolicy the interceptor counts grpc-go's attempts (its service
// config is not known yet), and grpc-go's transparent retry of a refused
// stream makes two of one attempt of the interceptor's; without a
// retryPolicy that is no retry of grpc-go's to stand back from
// (UnaryInterceptor: "more than one attempt and the method has a
// retryPolicy"): the interceptor's 3 attempts, after the refused stream.
func TestTransparentRetryWithoutPolicy(t *testing.T) {
	for _, method := range []string{unaryMethod, serverMethod} {
		t.Run(method, func(t *testing.T) {
			addr, streams := refuser(t)
			c := client(t, ClientConfig{Retrier: immediate(3)})
			cc := dial(t, addr, grpc.WithUnaryInterceptor(c.UnaryInterceptor()), grpc.WithStreamInterceptor(c.StreamInterceptor()))
			var err error
			if method == unaryMethod {
				_, err = call(context.Background(), cc, "hi")
			} else {
				_, err = recvAll(context.Background(), cc, "hi")
			}
			if status.Code(err) != codes.Unavailable || !errors.Is(err, backoff.ErrExhausted) || streams.Load() != 4 {
				t.Errorf("error %v after %d streams, want Unavailable, ErrExhausted, after 4", err, streams.Load())
			}
		})
	}
}

// TestNilClientConn: the interceptors called directly with no channel
// (as a test of other middleware may) retry as usual.
func TestNilClientConn(t *testing.T) {
	var n int
	invoker := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error {
		if n++; n < 3 {
			return status.Error(codes.Unavailable, "injected")
		}
		return nil
	}
	c := client(t, ClientConfig{Retrier: immediate(3)})
	if err := c.UnaryInterceptor()(context.Background(), unaryMethod, &msg{}, new(msg), nil, invoker); err != nil || n != 3 {
		t.Errorf("unary: %v after %d attempts, want nil after 3", err, n)
	}
	n = 0
	streamer := func(context.Context, *grpc.StreamDesc, *grpc.ClientConn, string, ...grpc.CallOption) (grpc.ClientStream, error) {
		if n++; n < 3 {
			return nil, status.Error(codes.Unavailable, "injected")
		}
		return nil, status.Error(codes.InvalidArgument, "not retried")
	}
	s, err := c.StreamInterceptor()(context.Background(), streamDesc(serverMethod), nil, serverMethod, streamer)
	if err != nil { // the first open's failure is retried: it surfaces in RecvMsg
		t.Fatal(err)
	}
	if err := s.RecvMsg(new(msg)); status.Code(err) != codes.InvalidArgument || n != 3 {
		t.Errorf("stream: %v after %d attempts, want InvalidArgument after 3", err, n)
	}
}

// TestCallerPointerOptionsReset: the caller's Header and Trailer options
// given as pointers are the caller's too: nil after a call whose last
// attempt reached no server, as UnaryInterceptor says.
func TestCallerPointerOptionsReset(t *testing.T) {
	c := client(t, ClientConfig{Retrier: immediate(2)})
	cc := dial(t, "127.0.0.1:1", grpc.WithUnaryInterceptor(c.UnaryInterceptor()))
	header, trailer := metadata.Pairs("stale", "x"), metadata.Pairs("stale", "x")
	_, err := call(context.Background(), cc, "hi", &grpc.HeaderCallOption{HeaderAddr: &header}, &grpc.TrailerCallOption{TrailerAddr: &trailer})
	if status.Code(err) != codes.Unavailable || header != nil || trailer != nil {
		t.Errorf("error %v, header %v, trailer %v; want Unavailable, nil, nil", err, header, trailer)
	}
}

// TestCancelDuringTimedAttempt: a caller that cancels its call during an
// attempt bounded by AttemptTimeout gets CANCELLED, not the attempt's
// timeout, and ShouldRetry is not asked (its context has ended).
func TestCancelDuringTimedAttempt(t *testing.T) {
	arrived := make(chan struct{}, 1)
	svc := &service{unary: func(ctx context.Context, _ *msg) (*msg, error) {
		arrived <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	var asked atomic.Int64
	cc, _ := connect(t, svc, ClientConfig{AttemptTimeout: time.Minute, ShouldRetry: func(f Failure) bool {
		asked.Add(1)
		return DefaultShouldRetry(f)
	}})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-arrived; cancel() }()
	_, err := call(ctx, cc, "hi")
	if status.Code(err) != codes.Canceled || isTimeout(err) || asked.Load() != 0 {
		t.Errorf("error %v (a timeout: %v), ShouldRetry asked %d times; want CANCELLED, no timeout, not asked", err, isTimeout(err), asked.Load())
	}
}

// TestOnRetryGetsTheFailure: OnRetry's error is Failure.Err, the very
// value ShouldRetry was given, for unary calls and streams.
func TestOnRetryGetsTheFailure(t *testing.T) {
	svc, _ := sequenced(failCodes(codes.Unavailable, codes.OK, codes.Unavailable, codes.OK))
	var mu sync.Mutex
	var seen []error
	r := immediate(3)
	var retried []error
	r.OnRetry = func(_ context.Context, _ int, err error, _ time.Duration) { retried = append(retried, err) }
	c := client(t, ClientConfig{Retrier: r, ShouldRetry: func(f Failure) bool {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, f.Err)
		return true
	}})
	cc := dial(t, listen(t, svc), grpc.WithUnaryInterceptor(c.UnaryInterceptor()), grpc.WithStreamInterceptor(c.StreamInterceptor()))
	if _, err := call(context.Background(), cc, "hi"); err != nil {
		t.Fatal(err)
	}
	if _, err := streamCall(context.Background(), cc, serverMethod); err != nil {
		t.Fatal(err)
	}
	if len(retried) != 2 || len(seen) != 2 || retried[0] != seen[0] || retried[1] != seen[1] {
		t.Errorf("OnRetry got %v, ShouldRetry %v; want the same 2 errors", retried, seen)
	}
}

// TestShouldRetryNotAskedBelow: ShouldRetry is not asked when the server
// said not to retry (pushback -1), which stops the call with
// ErrRetriedBelow whatever ShouldRetry would say; with RetryInner it is
// asked, and a no stops the call after that attempt.
func TestShouldRetryNotAskedBelow(t *testing.T) {
	for _, inner := range []bool{false, true} {
		svc := &service{unary: failing(10, pushback(codes.Internal, "-1"))}
		var asked atomic.Int64
		r := immediate(3)
		r.RetryInner = inner
		var done error
		r.OnDone = func(_ context.Context, _ int, err error) { done = err }
		c := client(t, ClientConfig{Retrier: r, ShouldRetry: func(Failure) bool { asked.Add(1); return false }})
		cc := dial(t, listen(t, svc), grpc.WithUnaryInterceptor(c.UnaryInterceptor()))
		_, err := call(context.Background(), cc, "hi")
		wantAsked, wantReason := int64(0), backoff.ErrRetriedBelow
		if inner {
			wantAsked, wantReason = 1, backoff.ErrPermanent
		}
		if status.Code(err) != codes.Internal || svc.count(unaryMethod) != 1 || asked.Load() != wantAsked || !errors.Is(done, wantReason) {
			t.Errorf("RetryInner %v: %v (OnDone %v) after %d calls, ShouldRetry asked %d times; want INTERNAL, %v, after 1, asked %d",
				inner, err, done, svc.count(unaryMethod), asked.Load(), wantReason, wantAsked)
		}
	}
}

// TestCommittedIsBackoffError: a call committed on its only attempt (the
// server's headers, then UNAVAILABLE) returns the *backoff.Error of 1
// attempt that OnDone gets, matching ErrCommitted, with the attempt's
// UNAVAILABLE as grpc returned it for Err and for status.Code.
func TestCommittedIsBackoffError(t *testing.T) {
	svc := &service{unary: func(ctx context.Context, _ *msg) (*msg, error) {
		grpc.SendHeader(ctx, metadata.Pairs("k", "v"))
		return nil, status.Error(codes.Unavailable, "after answering")
	}}
	cc, done := connect(t, svc, ClientConfig{})
	_, err := call(context.Background(), cc, "hi")
	var e *backoff.Error
	if status.Code(err) != codes.Unavailable || !errors.As(err, &e) || e.Attempts != 1 || !errors.Is(err, ErrCommitted) || *done != err ||
		e.Err.Error() != "rpc error: code = Unavailable desc = after answering" {
		t.Errorf("error %v (%T), OnDone %v; want the *backoff.Error of 1 attempt, ErrCommitted, UNAVAILABLE, given to OnDone", err, err, *done)
	}
}

// TestBudgetUsed: the Retrier's Budget is the interceptors': a Budget of
// one retry lets the first call retry once and refuses the next call's
// retry (ErrBudget), unary or stream.
func TestBudgetUsed(t *testing.T) {
	for _, method := range []string{unaryMethod, serverMethod} {
		t.Run(method, func(t *testing.T) {
			svc, got := sequenced(failCodes(codes.Unavailable, codes.Unavailable, codes.Unavailable, codes.Unavailable))
			r := immediate(3)
			r.Budget = backoff.Must(backoff.NewBudget(backoff.BudgetConfig{Burst: 1, Reserve: 0.001}))
			c := client(t, ClientConfig{Retrier: r})
			cc := dial(t, listen(t, svc), grpc.WithUnaryInterceptor(c.UnaryInterceptor()), grpc.WithStreamInterceptor(c.StreamInterceptor()))
			for i, want := range []int{2, 3} { // calls at the server so far
				var err error
				if method == unaryMethod {
					_, err = call(context.Background(), cc, "hi")
				} else {
					_, err = streamCall(context.Background(), cc, method)
				}
				if !errors.Is(err, backoff.ErrBudget) || len(*got) != want {
					t.Errorf("call %d: %v after %d calls at the server, want ErrBudget after %d", i+1, err, len(*got), want)
				}
			}
		})
	}
}

// TestPreviousAttemptsOverBuiltinRetries: on a channel with grpc-go's
// retries, a retry of grpc-go's within a retry of the interceptor's (the
// interceptor retried ABORTED twice, which grpc-go's policy does not
// retry, then grpc-go retried UNAVAILABLE) carries PreviousAttemptsKey
// twice, as its doc says: grpc-go's count, then the interceptor's.
func TestPreviousAttemptsOverBuiltinRetries(t *testing.T) {
	for _, method := range []string{unaryMethod, serverMethod} {
		t.Run(method, func(t *testing.T) {
			svc, _ := sequenced(failCodes(codes.Aborted, codes.Aborted, codes.Unavailable, codes.OK))
			c := client(t, ClientConfig{Retrier: immediate(3), ShouldRetry: retryAborted})
			cc := dial(t, listen(t, svc), grpc.WithDefaultServiceConfig(retryConfig),
				grpc.WithUnaryInterceptor(c.UnaryInterceptor()), grpc.WithStreamInterceptor(c.StreamInterceptor()))
			var err error
			if method == unaryMethod {
				_, err = call(context.Background(), cc, "hi")
			} else {
				_, err = streamCall(context.Background(), cc, method)
			}
			if got := svc.attempts(method); err != nil || !slices.Equal(got, []string{"", "1", "2", "1,2"}) {
				t.Errorf("%v; the server's calls had PreviousAttemptsKey %q, want \"\", \"1\", \"2\", then grpc-go's and the interceptor's: \"1,2\"", err, got)
			}
		})
	}
}

// TestServiceConfigChangesDuringCall: grpc-go retries a call under the
// method config it read when the call began. When the resolver takes the
// retryPolicy away while grpc-go is retrying (here: during grpc-go's
// third and last attempt), grpc-go has still retried the failure, and the
// interceptor must stand back from it (3 calls at the server), not retry
// it as on a channel without a retryPolicy (5).
func TestServiceConfigChangesDuringCall(t *testing.T) {
	for _, method := range []string{unaryMethod, serverMethod} {
		t.Run(method, func(t *testing.T) {
			r := manual.NewBuilderWithScheme("scchange")
			var calls atomic.Int64
			var addr string
			fail := func() error {
				if calls.Add(1) == 3 {
					r.UpdateState(resolver.State{Addresses: []resolver.Address{{Addr: addr}}, ServiceConfig: r.CC().ParseServiceConfig(`{}`)})
				}
				return status.Error(codes.Unavailable, "down")
			}
			svc := &service{
				unary:  func(context.Context, *msg) (*msg, error) { return nil, fail() },
				server: func(*msg, grpc.ServerStream) error { return fail() },
			}
			addr = listen(t, svc)
			r.InitialState(resolver.State{Addresses: []resolver.Address{{Addr: addr}}})
			c := client(t, ClientConfig{Retrier: immediate(3)})
			cc := dial(t, "scchange:///server", grpc.WithResolvers(r), grpc.WithDefaultServiceConfig(retryConfig),
				grpc.WithUnaryInterceptor(c.UnaryInterceptor()), grpc.WithStreamInterceptor(c.StreamInterceptor()))
			cc.Connect()
			waitState(t, cc, connectivity.Ready)
			var err error
			if method == unaryMethod {
				_, err = call(context.Background(), cc, "hi")
			} else {
				_, err = recvAll(context.Background(), cc, "hi")
			}
			if status.Code(err) != codes.Unavailable || !errors.Is(err, backoff.ErrRetriedBelow) || calls.Load() != 3 {
				t.Errorf("error %v after %d calls, want Unavailable, ErrRetriedBelow, after 3", err, calls.Load())
			}
		})
	}
}

// TestPoolKeepsNoCallerOptions: a unary call's pooled state does not
// keep the caller's options alive after the call (the metadata address of
// its grpc.Header option here): once the call has returned, a collection
// frees it although the pool still holds the call's state.
func TestPoolKeepsNoCallerOptions(t *testing.T) {
	svc := &service{unary: func(_ context.Context, in *msg) (*msg, error) { return in, nil }}
	cc, _ := connect(t, svc, ClientConfig{})
	header := new(metadata.MD)
	w := weak.Make(header)
	if _, err := call(context.Background(), cc, "hi", grpc.Header(header)); err != nil {
		t.Fatal(err)
	}
	header = nil
	runtime.GC() // the pool's values survive one collection (as its victims)
	if w.Value() != nil {
		t.Error("the caller's header address is still reachable after the call")
	}
}

// TestTransientFailureComesBack: a call begun while its channel is in
// TransientFailure, its server down, that waits for the channel
// (grpc.WaitForReady) runs once the server is back; over grpc-go's retries the
// interceptor stands back from them (3 calls at the server, not 9), unary
// and stream.
func TestTransientFailureComesBack(t *testing.T) {
	for _, method := range []string{unaryMethod, serverMethod} {
		t.Run(method, func(t *testing.T) {
			l := lis(t)
			addr := l.Addr().String()
			l.Close() // the server is down
			svc := alwaysUnavailable()
			svc.server = func(*msg, grpc.ServerStream) error { return status.Error(codes.Unavailable, "bottom down") }
			c := client(t, ClientConfig{Retrier: immediate(3)})
			var began sync.Once
			reached := make(chan struct{}) // the interceptor has looked at the channel, in TransientFailure
			signalUnary := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
				began.Do(func() { close(reached) })
				return invoker(ctx, method, req, reply, cc, opts...)
			}
			signalStream := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
				began.Do(func() { close(reached) })
				return streamer(ctx, desc, cc, method, opts...)
			}
			cc := dial(t, addr, grpc.WithDefaultServiceConfig(retryConfig),
				grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoffConfig, MinConnectTimeout: time.Second}),
				grpc.WithChainUnaryInterceptor(c.UnaryInterceptor(), signalUnary), grpc.WithChainStreamInterceptor(c.StreamInterceptor(), signalStream))
			cc.Connect()
			waitState(t, cc, connectivity.TransientFailure)
			errc := make(chan error, 1)
			go func() {
				var err error
				if method == unaryMethod {
					_, err = call(context.Background(), cc, "hi", grpc.WaitForReady(true))
				} else {
					var s grpc.ClientStream
					if s, err = cc.NewStream(context.Background(), streamDesc(method), method, grpc.WaitForReady(true)); err == nil {
						s.SendMsg(&msg{Text: "hi"})
						s.CloseSend()
						err = s.RecvMsg(new(msg))
					}
				}
				errc <- err
			}()
			<-reached
			l2, err := net.Listen("tcp", addr) // the server comes back
			if err != nil {
				t.Skipf("the port could not be taken again: %v", err)
			}
			serve(t, l2, svc)
			err = <-errc
			if status.Code(err) != codes.Unavailable || !errors.Is(err, backoff.ErrRetriedBelow) || svc.count(method) != 3 {
				t.Errorf("error %v after %d calls, want Unavailable, ErrRetriedBelow, after 3", err, svc.count(method))
			}
		})
	}
}

// backoffConfig reconnects a channel within milliseconds.
var backoffConfig = grpcbackoff.Config{BaseDelay: 5 * time.Millisecond, Multiplier: 1, MaxDelay: 5 * time.Millisecond}

// TestNilCredsOverrideDefault: a call option grpc.PerRPCCredentials(nil)
// takes away the channel's default call credentials, as grpc keeps the
// last: no token reaches the server, with or without the interceptor (which
// counts on this channel, and wraps none).
func TestNilCredsOverrideDefault(t *testing.T) {
	svc := &service{unary: func(ctx context.Context, _ *msg) (*msg, error) {
		return &msg{Text: strings.Join(metadata.ValueFromIncomingContext(ctx, "token"), ",")}, nil
	}}
	addr := listen(t, svc)
	c := client(t, ClientConfig{Retrier: immediate(3)})
	for _, interceptor := range []bool{false, true} {
		opts := []grpc.DialOption{grpc.WithDefaultServiceConfig(retryConfig), grpc.WithDefaultCallOptions(grpc.PerRPCCredentials(tokenCreds{}))}
		if interceptor {
			opts = append(opts, grpc.WithUnaryInterceptor(c.UnaryInterceptor()))
		}
		cc := dial(t, addr, opts...)
		for _, tt := range []struct {
			opts []grpc.CallOption
			want string
		}{{nil, "secret"}, {[]grpc.CallOption{grpc.PerRPCCredentials(nil)}, ""}} {
			if got, err := call(context.Background(), cc, "hi", tt.opts...); err != nil || got != tt.want {
				t.Errorf("interceptor %v, options %v: token %q, %v; want %q", interceptor, tt.opts, got, err, tt.want)
			}
		}
	}
}
