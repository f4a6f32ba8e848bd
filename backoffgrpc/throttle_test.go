package backoffgrpc

import (
	"cmp"
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/throttle"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// newTestThrottle returns a Throttle of cfg with a seeded Rng.
func newTestThrottle(t *testing.T, cfg throttle.Config) *throttle.Throttle {
	th, err := throttle.New(cfg, backoff.NewSeededRng(7))
	if err != nil {
		t.Fatal(err)
	}
	return th
}

// connectRefusing connects to svc with a Client of cfg whose Throttle
// (cfg's, a new one of the default Config when nil) has seen the server
// reject 10,000 requests: it refuses a retry with p ≈ 1 − 1e-4.
func connectRefusing(t *testing.T, svc *service, cfg ClientConfig) (*grpc.ClientConn, *error) {
	if cfg.Throttle == nil {
		cfg.Throttle = newTestThrottle(t, throttle.Config{})
	}
	th := cfg.Throttle
	cc, done := connect(t, svc, cfg)
	for range 10000 {
		th.Record(cc.Target(), false)
	}
	return cc, done
}

// checkRefusal fails unless err, and done (OnDone's), are a refusal of
// the Throttle after sent attempts whose last failed with code (OK for
// none).
func checkRefusal(t *testing.T, err, done error, sent int, code codes.Code) {
	t.Helper()
	var stop *backoff.Error
	if !errors.As(err, &stop) || !errors.Is(err, throttle.ErrThrottled) || done != err {
		t.Fatalf("call = %v (OnDone's err %v); want a *backoff.Error matching throttle.ErrThrottled, OnDone's too", err, done)
	}
	if stop.Reason != throttle.ErrThrottled || stop.Attempts != sent {
		t.Fatalf("stop %+v; want Reason ErrThrottled and %d attempts", stop, sent)
	}
	if code == codes.OK && stop.Err != nil || code != codes.OK && status.Code(stop.Err) != code {
		t.Fatalf("stop's Err = %v, want the last failure's code %v", stop.Err, code)
	}
	if want := cmp.Or(code, codes.Unknown); status.Code(err) != want {
		t.Fatalf("status.Code(err) = %v, want %v", status.Code(err), want)
	}
}

// TestThrottleOutcomes: which answers count as rejections, for a unary
// call and a server stream. Each call is one attempt, its first try gated
// (FirstTries): none of 40 calls is refused while the server accepts them
// (OK, a plain INTERNAL, NOT_FOUND), and some are once it does not
// (RESOURCE_EXHAUSTED, UNAVAILABLE, DEADLINE_EXCEEDED, a pushback that
// says not to retry, the attempt's timeout).
func TestThrottleOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		answer   func(ctx context.Context) error
		rejected bool
	}{
		{"OK", func(context.Context) error { return nil }, false},
		{"INTERNAL", code(codes.Internal), false},
		{"NOT_FOUND", code(codes.NotFound), false},
		{"INTERNAL, pushback 10ms", pushback(codes.Internal, "10"), false},
		{"RESOURCE_EXHAUSTED", code(codes.ResourceExhausted), true},
		{"UNAVAILABLE", code(codes.Unavailable), true},
		{"DEADLINE_EXCEEDED", code(codes.DeadlineExceeded), true},
		{"INTERNAL, don't retry", pushback(codes.Internal, "-1"), true},
		{"attempt timeout", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }, true},
	} {
		for _, method := range []string{unaryMethod, serverMethod} {
			t.Run(tc.name+" "+method, func(t *testing.T) {
				svc := answering(tc.answer)
				svc.unary = func(ctx context.Context, in *msg) (*msg, error) {
					if err := tc.answer(ctx); err != nil {
						return nil, err
					}
					return in, nil
				}
				cc, done := connect(t, svc, ClientConfig{Retrier: immediate(1), AttemptTimeout: 20 * time.Millisecond,
					Throttle: newTestThrottle(t, throttle.Config{FirstTries: true})})
				const calls = 40
				refused := 0
				for range calls {
					if err := callMethod(context.Background(), cc, method); errors.Is(err, throttle.ErrThrottled) {
						checkRefusal(t, err, *done, 0, codes.OK)
						refused++
					}
				}
				if sent := svc.count(method); sent+refused != calls {
					t.Fatalf("%d sent and %d refused, want %d in all", sent, refused, calls)
				}
				if (refused > 0) != tc.rejected {
					t.Fatalf("%d of %d refused; want some: %v", refused, calls, tc.rejected)
				}
			})
		}
	}
}

// TestThrottleRefusesByTheRule: rounds of a call that succeeds and one
// that fails with UNAVAILABLE and is retried at once: each retry is
// refused with probability max(0, (R − 2A)/(R + 1)), R and A the requests
// and accepts that the test counts before it. Over 2,000 rounds the
// refusals are within 4 standard deviations of the sum of those
// probabilities.
func TestThrottleRefusesByTheRule(t *testing.T) {
	svc := &service{unary: func(_ context.Context, in *msg) (*msg, error) {
		if in.Text == "good" {
			return in, nil
		}
		return nil, status.Error(codes.Unavailable, "down")
	}}
	cc, done := connect(t, svc, ClientConfig{Retrier: immediate(2), Throttle: newTestThrottle(t, throttle.Config{})})
	const rounds = 2000
	var requests, accepts, want, variance float64
	refused := 0
	for range rounds {
		if _, err := call(context.Background(), cc, "good"); err != nil {
			t.Fatal(err)
		}
		requests, accepts = requests+1, accepts+1
		_, err := call(context.Background(), cc, "bad")
		requests++ // the first try: not gated, refused by the server
		p := max(0, (requests-2*accepts)/(requests+1))
		want, variance = want+p, variance+p*(1-p)
		requests++ // the retry, made or not
		if errors.Is(err, throttle.ErrThrottled) {
			checkRefusal(t, err, *done, 1, codes.Unavailable)
			refused++
		} else if !errors.Is(err, backoff.ErrExhausted) {
			t.Fatalf("bad call: %v", err)
		}
	}
	if d := math.Abs(float64(refused) - want); d > 4*math.Sqrt(variance) || want < rounds/10 {
		t.Fatalf("%d retries refused; want %.0f ± %.0f (4 sd), at least %d", refused, want, 4*math.Sqrt(variance), rounds/10)
	}
	t.Logf("%d of %d retries refused; the rule expects %.1f ± %.1f", refused, rounds, want, math.Sqrt(variance))
}

// TestThrottlePerTarget: one Client on two connections: a server that
// rejects everything does not throttle the other, whose plain INTERNAL
// failures are accepted and retried (3 attempts a call).
func TestThrottlePerTarget(t *testing.T) {
	c := client(t, ClientConfig{Retrier: immediate(3), Throttle: newTestThrottle(t, throttle.Config{FirstTries: true}),
		ShouldRetry: func(Failure) bool { return true }})
	bad := alwaysUnavailable()
	good := &service{unary: func(context.Context, *msg) (*msg, error) { return nil, status.Error(codes.Internal, "bug") }}
	badCC := dial(t, listen(t, bad), grpc.WithUnaryInterceptor(c.UnaryInterceptor()))
	goodCC := dial(t, listen(t, good), grpc.WithUnaryInterceptor(c.UnaryInterceptor()))
	refusedBad := 0
	for range 50 {
		if _, err := call(context.Background(), badCC, "x"); errors.Is(err, throttle.ErrThrottled) {
			refusedBad++
		}
		if _, err := call(context.Background(), goodCC, "x"); !errors.Is(err, backoff.ErrExhausted) {
			t.Fatalf("the other server: %v; want its INTERNAL after 3 attempts", err)
		}
	}
	if n := good.count(unaryMethod); refusedBad == 0 || n != 150 {
		t.Fatalf("%d calls to the rejecting server refused; the other server got %d attempts; want some, and 150", refusedBad, n)
	}
}

// TestThrottleStreamRetry: a stream's retry is gated: once refused, the
// stream's RecvMsg returns the refusal, with the first attempt's
// UNAVAILABLE as Err.
func TestThrottleStreamRetry(t *testing.T) {
	svc := answering(code(codes.Unavailable))
	cc, done := connectRefusing(t, svc, ClientConfig{})
	checkRefusal(t, callMethod(context.Background(), cc, serverMethod), *done, 1, codes.Unavailable)
	if n := svc.count(serverMethod); n != 1 {
		t.Fatalf("the server saw %d streams, want 1", n)
	}
}

// TestThrottleAllocs: a Throttle adds no allocation to a unary call that
// succeeds, its first try gated, around an invoker that allocates nothing.
func TestThrottleAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	c := client(t, ClientConfig{Retrier: immediate(3), Throttle: newTestThrottle(t, throttle.Config{FirstTries: true})})
	cc := dial(t, "127.0.0.1:1") // never connects: the invoker stands in
	invoker := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error { return nil }
	interceptor := c.UnaryInterceptor()
	if n := testing.AllocsPerRun(500, func() {
		if err := interceptor(context.Background(), unaryMethod, nil, nil, cc, invoker, grpc.StaticMethod()); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("%v allocations per call with a Throttle, want 0", n)
	}
}

// TestThrottleRefusalKeepsLastTrailer: a call whose retry is refused gets
// the trailer of the last attempt made, as one whose loop stops otherwise:
// for a unary call through grpc.Trailer, for a stream from Trailer.
func TestThrottleRefusalKeepsLastTrailer(t *testing.T) {
	svc := answering(func(ctx context.Context) error {
		grpc.SetTrailer(ctx, metadata.Pairs("x-answer", "unavailable"))
		return status.Error(codes.Unavailable, "down")
	})
	cc, done := connectRefusing(t, svc, ClientConfig{})
	var unaryTrailer metadata.MD
	err := cc.Invoke(context.Background(), unaryMethod, &msg{Text: "hi"}, new(msg), grpc.Trailer(&unaryTrailer))
	checkRefusal(t, err, *done, 1, codes.Unavailable)
	s, err := cc.NewStream(context.Background(), streamDesc(serverMethod), serverMethod)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SendMsg(&msg{Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	s.CloseSend()
	checkRefusal(t, s.RecvMsg(new(msg)), *done, 1, codes.Unavailable)
	if md, err := s.Header(); md != nil || err != nil {
		t.Errorf("stream: Header() = %v, %v after the refusal; want no headers and nil, as for any failure", md, err)
	}
	for _, tc := range []struct {
		name    string
		trailer metadata.MD
	}{{"unary", unaryTrailer}, {"stream", s.Trailer()}} {
		if got := tc.trailer.Get("x-answer"); len(got) != 1 || got[0] != "unavailable" {
			t.Errorf("%s: trailer %v, want the last attempt's", tc.name, tc.trailer)
		}
	}
}

// TestThrottleCallerCancelIsNoRejection: a call that its caller cancels
// before the server answers is no rejection: none of 40 is refused, a
// Throttle gating first tries, for a unary call, a server stream, each
// hedged (each copy is recorded), and a stream whose context ends before
// its first RecvMsg. One whose deadline ends first is: some are.
func TestThrottleCallerCancelIsNoRejection(t *testing.T) {
	svc := answering(func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
	for _, tc := range []struct {
		name     string
		end      func() (context.Context, context.CancelFunc)
		rejected bool
	}{
		{"cancelled", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(time.Millisecond, cancel)
			return ctx, cancel
		}, false},
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), time.Millisecond)
		}, true},
	} {
		for _, method := range []string{unaryMethod, "hedged", serverMethod, "hedged stream", "unread"} {
			t.Run(tc.name+" "+method, func(t *testing.T) {
				cfg := ClientConfig{Retrier: immediate(1), Throttle: newTestThrottle(t, throttle.Config{FirstTries: true})}
				if strings.HasPrefix(method, "hedged") {
					cfg.Hedging = &Hedging{Delay: 100 * time.Microsecond, MaxAttempts: 3}
				}
				c := client(t, cfg)
				cc := dial(t, listen(t, svc), grpc.WithUnaryInterceptor(c.UnaryInterceptor()), grpc.WithStreamInterceptor(c.StreamInterceptor()))
				refused := 0
				for range 40 {
					ctx, cancel := tc.end()
					var err error
					if method == "unread" {
						var s grpc.ClientStream
						if s, err = cc.NewStream(ctx, streamDesc(serverMethod), serverMethod); err == nil {
							<-ctx.Done()
							err = s.RecvMsg(new(msg)) // once the call has ended, as the watch on ctx ends it
						}
					} else {
						err = callMethod(ctx, cc, cmp.Or(map[string]string{"hedged": unaryMethod, "hedged stream": serverMethod}[method], method))
					}
					if errors.Is(err, throttle.ErrThrottled) {
						refused++
					}
					cancel()
				}
				if (refused > 0) != tc.rejected {
					t.Fatalf("%d of 40 refused; want some: %v", refused, tc.rejected)
				}
			})
		}
	}
}

// TestThrottleRefusedRetryKeepsBudget: a retry, or a hedged copy after
// the first, is asked of the Throttle before the Retrier's Budget, OnRetry
// and the wait: one refused withdraws nothing, is not announced and ends
// the call at once (its Policy would wait an hour; the next copy would go
// at once), for a unary call and a stream, so a Budget of one retry still
// has it for a call of a Client without the Throttle.
func TestThrottleRefusedRetryKeepsBudget(t *testing.T) {
	for _, hedging := range []*Hedging{nil, {Delay: time.Hour}} {
		svc := answering(code(codes.Unavailable))
		epoch := time.Now()
		budget := backoff.Must(backoff.NewBudget(backoff.BudgetConfig{Burst: 1, Reserve: 0.001, Ratio: 0.001, Now: func() time.Time { return epoch }}))
		announced := 0
		hour := &backoff.Retrier{Policy: backoff.Must(backoff.NewExponential(backoff.Config{Base: time.Hour, Cap: time.Hour, MaxAttempts: 2})),
			Budget: budget, OnRetry: func(context.Context, int, error, time.Duration) { announced++ }}
		cc, done := connectRefusing(t, svc, ClientConfig{Retrier: hour, Hedging: hedging})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		for _, method := range []string{unaryMethod, serverMethod} {
			checkRefusal(t, callMethod(ctx, cc, method), *done, 1, codes.Unavailable)
		}
		cancel()
		if announced != 0 {
			t.Fatalf("hedged %v: OnRetry called %d times for retries refused, want 0", hedging != nil, announced)
		}
		plain, _ := connect(t, svc, ClientConfig{Retrier: &backoff.Retrier{Policy: immediate(2).Policy, Budget: budget}})
		if _, err := call(context.Background(), plain, "x"); !errors.Is(err, backoff.ErrExhausted) {
			t.Fatalf("hedged %v: the next call: %v; want its retry made, then ErrExhausted", hedging != nil, err)
		}
		if n := svc.count(unaryMethod); n != 3 {
			t.Fatalf("hedged %v: the server saw %d unary attempts, want 3 (1 refused retry, then 2)", hedging != nil, n)
		}
	}
}

// slowEcho is a service whose unary method answers with its request after
// d, or fails with CANCELLED when its copy is cancelled first.
func slowEcho(d time.Duration) *service {
	return &service{unary: func(ctx context.Context, in *msg) (*msg, error) {
		select {
		case <-time.After(d):
			return in, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}}
}

// TestThrottleHedgeRefused: a hedged copy after the first is gated as a
// retry. When the first copy fails with UNAVAILABLE, at once (the next
// copy would go at once) or after the delay ran out and the next copy was
// refused, the call stops with Reason ErrThrottled and that UNAVAILABLE,
// one copy sent; for a unary call and a server stream. With FirstTries,
// the first copy is gated as a first try: refused, no copy is sent.
func TestThrottleHedgeRefused(t *testing.T) {
	for _, tc := range []struct {
		name       string
		after      time.Duration // the first copy's time
		delay      time.Duration
		firstTries bool
	}{{"at once", 0, time.Hour, false}, {"after the delay", 30 * time.Millisecond, time.Millisecond, false}, {"first copy", 0, time.Hour, true}} {
		for _, method := range []string{unaryMethod, serverMethod} {
			t.Run(tc.name+" "+method, func(t *testing.T) {
				svc := answering(func(context.Context) error {
					time.Sleep(tc.after)
					return status.Error(codes.Unavailable, "down")
				})
				cc, done := connectRefusing(t, svc, ClientConfig{Hedging: &Hedging{Delay: tc.delay, MaxAttempts: 3},
					Throttle: newTestThrottle(t, throttle.Config{FirstTries: tc.firstTries})})
				sent, code := 1, codes.Unavailable
				if tc.firstTries {
					sent, code = 0, codes.OK
				}
				checkRefusal(t, callMethod(context.Background(), cc, method), *done, sent, code)
				if n := svc.count(method); n != sent {
					t.Fatalf("the server saw %d copies, want %d", n, sent)
				}
			})
		}
	}
}

// TestThrottleHedgeRefusedFirstWins: a copy refused once the delay ran
// out leaves the copy sent before it running: it may still win.
func TestThrottleHedgeRefusedFirstWins(t *testing.T) {
	svc := slowEcho(50 * time.Millisecond)
	cc, done := connectRefusing(t, svc, ClientConfig{Hedging: &Hedging{Delay: time.Millisecond, MaxAttempts: 3}})
	if got, err := call(context.Background(), cc, "hi"); err != nil || got != "hi" || *done != nil || svc.count(unaryMethod) != 1 {
		t.Fatalf("call = %q, %v (OnDone's %v; the server saw %d copies); want the first copy's answer, one copy", got, err, *done, svc.count(unaryMethod))
	}
}

// TestThrottleHedgedLosersAreNotRejections: a server that answers every
// call, slowly enough that each is hedged 4 times: the copies that lose
// are cancelled by the Client, not rejected by the server, so a Throttle
// that gates first tries refuses none of the calls.
func TestThrottleHedgedLosersAreNotRejections(t *testing.T) {
	svc := slowEcho(20 * time.Millisecond)
	cc, _ := connect(t, svc, ClientConfig{Throttle: newTestThrottle(t, throttle.Config{FirstTries: true}),
		Hedging: &Hedging{Delay: time.Millisecond, MaxAttempts: 5}})
	const calls = 30
	for i := range calls {
		if _, err := call(context.Background(), cc, "hi"); err != nil {
			t.Fatalf("call %d of %d: %v; want the server's answer (it saw %d copies)", i+1, calls, err, svc.count(unaryMethod))
		}
	}
	if n := svc.count(unaryMethod); n < 2*calls {
		t.Fatalf("the server saw %d copies of %d calls; want each hedged", n, calls)
	}
}
