package backoffgrpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/hedge"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// copyNumber returns the copy of the call that ctx serves: 1 for the
// first, 1 + PreviousAttemptsKey for a hedge.
func copyNumber(ctx context.Context) int {
	v := metadata.ValueFromIncomingContext(ctx, PreviousAttemptsKey)
	if len(v) == 0 {
		return 1
	}
	var n int
	fmt.Sscan(v[0], &n)
	return n + 1
}

// copies answers each copy of a call by its number: answer(n) nil hangs
// until the copy is cancelled, which it counts in cancelled.
type copies struct {
	answer    func(n int) (time.Duration, func(context.Context) error) // how long copy n takes, and how it fails (nil: it answers "copy n")
	cancelled atomic.Int64
}

// service returns the service of cs: its unary method answers "copy n";
// its streams read every message, then answer "copy n" twice (once for
// the client stream), their headers with the first.
func (cs *copies) service() *service {
	answer := func(ctx context.Context) (string, error) {
		n := copyNumber(ctx)
		d, fail := cs.answer(n)
		if d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				cs.cancelled.Add(1)
				return "", ctx.Err()
			}
		}
		if fail != nil {
			return "", fail(ctx)
		}
		return fmt.Sprintf("copy %d", n), nil
	}
	stream := func(ss grpc.ServerStream, replies int) error {
		text, err := answer(ss.Context())
		for ; err == nil && replies > 0; replies-- {
			err = ss.SendMsg(&msg{Text: text})
		}
		return err
	}
	return &service{
		unary: func(ctx context.Context, _ *msg) (*msg, error) {
			text, err := answer(ctx)
			if err != nil {
				return nil, err
			}
			return &msg{Text: text}, nil
		},
		server: func(_ *msg, ss grpc.ServerStream) error { return stream(ss, 2) },
		client: func(ss grpc.ServerStream) error { recvTexts(ss); return stream(ss, 1) },
		bidi:   func(ss grpc.ServerStream) error { recvTexts(ss); return stream(ss, 2) },
	}
}

// hedgeRecord is what a hedged call's hooks heard.
type hedgeRecord struct {
	mu      sync.Mutex
	retries []string // OnRetry's "attempt:err:delay"
	wins    []int
	done    []string // OnDone's "attempts:err"
}

// hedgeClient returns a Client of cfg hedging by h whose Retrier
// (immediate(3) when nil) records its hooks in rec.
func hedgeClient(t *testing.T, cfg ClientConfig, h Hedging, rec *hedgeRecord) *Client {
	r := cfg.Retrier
	if r == nil {
		r = immediate(3)
	}
	r2 := *r
	r2.OnRetry = func(_ context.Context, attempt int, err error, d time.Duration) {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		why := status.Code(err).String()
		if errors.Is(err, ErrHedgeDelay) {
			why = "delay"
		}
		rec.retries = append(rec.retries, fmt.Sprintf("%d:%s:%v", attempt, why, d))
	}
	r2.OnDone = func(_ context.Context, attempts int, err error) {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		rec.done = append(rec.done, fmt.Sprintf("%d:%v", attempts, status.Code(err)))
	}
	h.OnWin = func(_ context.Context, n int) {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		rec.wins = append(rec.wins, n)
	}
	cfg.Retrier, cfg.Hedging = &r2, &h
	return client(t, cfg)
}

// TestHedgeRules: each rule of Hedging on a real server (in memory, in a
// synctest bubble, so that the times are exact): which copies are sent
// and when, what the call returns, what the hooks hear; for a unary call,
// and for each kind of stream whose send side is closed before it
// receives (the winner's messages, all of them, are the caller's).
func TestHedgeRules(t *testing.T) {
	const hang = time.Hour
	for _, tt := range []struct {
		name           string
		hedging        Hedging
		retrier        *backoff.Retrier
		attemptTimeout time.Duration
		answer         func(n int) (time.Duration, func(context.Context) error)
		reply          string
		code           codes.Code
		reason         error // of the *backoff.Error; nil for a success
		took           time.Duration
		attempts       []string // PreviousAttemptsKey of each copy, in order sent
		retries        []string
		wins           []int
		done           string
		below          bool // the error matches backoff.ErrRetriedBelow
	}{{
		name:    "first copy answers before the delay: no hedge",
		hedging: Hedging{Delay: 10 * time.Millisecond},
		answer:  func(int) (time.Duration, func(context.Context) error) { return 5 * time.Millisecond, nil },
		reply:   "copy 1", took: 5 * time.Millisecond, attempts: []string{""}, done: "1:OK",
	}, {
		name:    "slow first copy: a hedge after the delay wins and the first is cancelled",
		hedging: Hedging{Delay: 10 * time.Millisecond},
		answer: func(n int) (time.Duration, func(context.Context) error) {
			if n == 1 {
				return hang, nil
			}
			return 3 * time.Millisecond, nil
		},
		reply: "copy 2", took: 13 * time.Millisecond, attempts: []string{"", "1"},
		retries: []string{"1:delay:10ms"}, wins: []int{2}, done: "2:OK",
	}, {
		name:    "a non-fatal failure hedges at once",
		hedging: Hedging{Delay: hang, MaxAttempts: 3},
		answer: func(n int) (time.Duration, func(context.Context) error) {
			if n == 1 {
				return 2 * time.Millisecond, code(codes.Unavailable)
			}
			return 3 * time.Millisecond, nil
		},
		reply: "copy 2", took: 5 * time.Millisecond, attempts: []string{"", "1"},
		retries: []string{"1:Unavailable:0s"}, wins: []int{2}, done: "2:OK",
	}, {
		name:    "a fatal failure ends every copy",
		hedging: Hedging{Delay: 10 * time.Millisecond, MaxAttempts: 3},
		answer: func(n int) (time.Duration, func(context.Context) error) {
			if n == 1 {
				return hang, nil
			}
			return time.Millisecond, code(codes.InvalidArgument)
		},
		code: codes.InvalidArgument, reason: backoff.ErrPermanent, took: 11 * time.Millisecond, attempts: []string{"", "1"},
		retries: []string{"1:delay:10ms"}, done: "2:InvalidArgument",
	}, {
		name:    "pushback -1 stops further copies; a copy in flight may still win",
		hedging: Hedging{Delay: 10 * time.Millisecond, MaxAttempts: 3},
		answer: func(n int) (time.Duration, func(context.Context) error) {
			if n == 1 {
				return 30 * time.Millisecond, nil
			}
			return time.Millisecond, pushback(codes.Unavailable, "-1")
		},
		reply: "copy 1", took: 30 * time.Millisecond, attempts: []string{"", "1"},
		retries: []string{"1:delay:10ms"}, wins: []int{1}, done: "2:OK",
	}, {
		name:    "pushback -1 on the only copy running: the call gives up",
		hedging: Hedging{Delay: hang, MaxAttempts: 3},
		answer: func(n int) (time.Duration, func(context.Context) error) {
			return time.Millisecond, pushback(codes.Unavailable, "-1")
		},
		code: codes.Unavailable, reason: backoff.ErrRetriedBelow, took: time.Millisecond, attempts: []string{""}, done: "1:Unavailable",
	}, {
		name:    "pushback of 7 ms delays the next copy",
		hedging: Hedging{Delay: hang},
		answer: func(n int) (time.Duration, func(context.Context) error) {
			if n == 1 {
				return time.Millisecond, pushback(codes.Unavailable, "7")
			}
			return time.Millisecond, nil
		},
		reply: "copy 2", took: 9 * time.Millisecond, attempts: []string{"", "1"},
		retries: []string{"1:Unavailable:7ms"}, wins: []int{2}, done: "2:OK",
	}, {
		name:    "a pushback over MaxPushback stops further copies",
		hedging: Hedging{Delay: hang, MaxAttempts: 3},
		answer: func(n int) (time.Duration, func(context.Context) error) {
			return time.Millisecond, pushback(codes.Unavailable, "60000")
		},
		code: codes.Unavailable, reason: backoff.ErrHintTooLong, took: time.Millisecond, attempts: []string{""}, done: "1:Unavailable",
	}, {
		name:           "a copy past AttemptTimeout sends the next at once",
		hedging:        Hedging{Delay: hang},
		attemptTimeout: 5 * time.Millisecond,
		answer: func(n int) (time.Duration, func(context.Context) error) {
			if n == 1 {
				return hang, nil
			}
			return time.Millisecond, nil
		},
		reply: "copy 2", took: 6 * time.Millisecond, attempts: []string{"", "1"},
		retries: []string{"1:DeadlineExceeded:0s"}, wins: []int{2}, done: "2:OK",
	}, {
		name:    "MaxElapsed stops further copies; those sent may still win",
		hedging: Hedging{Delay: 10 * time.Millisecond, MaxAttempts: 3},
		retrier: func() *backoff.Retrier { r := immediate(3); r.MaxElapsed = 15 * time.Millisecond; return r }(),
		answer: func(n int) (time.Duration, func(context.Context) error) {
			if n == 1 {
				return 30 * time.Millisecond, nil
			}
			return hang, nil
		},
		reply: "copy 1", took: 30 * time.Millisecond, attempts: []string{"", "1"},
		retries: []string{"1:delay:10ms"}, wins: []int{1}, done: "2:OK",
	}, {
		name:    "a copy in flight wins during a pushback's wait",
		hedging: Hedging{Delay: time.Millisecond, MaxAttempts: 3},
		answer: func(n int) (time.Duration, func(context.Context) error) {
			if n == 1 {
				return 5 * time.Millisecond, nil
			}
			return time.Millisecond / 2, pushback(codes.Unavailable, "10")
		},
		reply: "copy 1", took: 5 * time.Millisecond, attempts: []string{"", "1"},
		retries: []string{"1:delay:1ms", "2:Unavailable:10ms"}, wins: []int{1}, done: "2:OK",
	}, {
		name:    "a fatal failure during a pushback's wait ends every copy",
		hedging: Hedging{Delay: time.Millisecond, MaxAttempts: 3},
		answer: func(n int) (time.Duration, func(context.Context) error) {
			if n == 1 {
				return 5 * time.Millisecond, code(codes.InvalidArgument)
			}
			return time.Millisecond / 2, pushback(codes.Unavailable, "10")
		},
		code: codes.InvalidArgument, reason: backoff.ErrPermanent, took: 5 * time.Millisecond, attempts: []string{"", "1"},
		retries: []string{"1:delay:1ms", "2:Unavailable:10ms"}, done: "2:InvalidArgument",
	}, {
		name:    "no more copies: a fatal failure of one in flight ends the others",
		hedging: Hedging{Delay: 10 * time.Millisecond},
		answer: func(n int) (time.Duration, func(context.Context) error) {
			if n == 1 {
				return 30 * time.Millisecond, code(codes.InvalidArgument)
			}
			return hang, nil
		},
		code: codes.InvalidArgument, reason: backoff.ErrPermanent, took: 30 * time.Millisecond, attempts: []string{"", "1"},
		retries: []string{"1:delay:10ms"}, done: "2:InvalidArgument",
	}, {
		name:    "after pushback -1, a later failure to retry keeps the server's answer",
		hedging: Hedging{Delay: 10 * time.Millisecond, MaxAttempts: 3},
		answer: func(n int) (time.Duration, func(context.Context) error) {
			if n == 1 {
				return 30 * time.Millisecond, code(codes.Unavailable)
			}
			return time.Millisecond, pushback(codes.Unavailable, "-1")
		},
		code: codes.Unavailable, reason: backoff.ErrRetriedBelow, took: 30 * time.Millisecond, attempts: []string{"", "1"},
		retries: []string{"1:delay:10ms"}, done: "2:Unavailable", below: true,
	}, {
		name:    "every copy fails: the last failure, after MaxAttempts copies",
		hedging: Hedging{Delay: 10 * time.Millisecond, MaxAttempts: 4},
		answer: func(n int) (time.Duration, func(context.Context) error) {
			return time.Duration(n) * time.Millisecond, code(codes.Unavailable)
		},
		code: codes.Unavailable, reason: backoff.ErrExhausted, took: 10 * time.Millisecond, attempts: []string{"", "1", "2", "3"},
		retries: []string{"1:Unavailable:0s", "2:Unavailable:0s", "3:Unavailable:0s"}, done: "4:Unavailable",
	}, {
		name:    "MaxAttempts copies, each carrying the copies before it",
		hedging: Hedging{Delay: 10 * time.Millisecond, MaxAttempts: 5},
		answer: func(n int) (time.Duration, func(context.Context) error) {
			if n < 5 {
				return hang, nil
			}
			return time.Millisecond, nil
		},
		reply: "copy 5", took: 41 * time.Millisecond, attempts: []string{"", "1", "2", "3", "4"},
		retries: []string{"1:delay:10ms", "2:delay:10ms", "3:delay:10ms", "4:delay:10ms"}, wins: []int{5}, done: "5:OK",
	}} {
		for _, method := range []string{unaryMethod, serverMethod, clientMethod, bidiMethod} {
			t.Run(tt.name+" "+method, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					cs := &copies{answer: tt.answer}
					svc := cs.service()
					rec := &hedgeRecord{}
					c := hedgeClient(t, ClientConfig{Retrier: tt.retrier, AttemptTimeout: tt.attemptTimeout}, tt.hedging, rec)
					cc := dialBuf(t, svc, grpc.WithUnaryInterceptor(c.UnaryInterceptor()), grpc.WithStreamInterceptor(c.StreamInterceptor()))
					start := time.Now()
					var got string
					var err error
					want := tt.reply
					if method == unaryMethod {
						got, err = call(context.Background(), cc, "hi")
					} else {
						got, err = streamCall(context.Background(), cc, method)
						if method != clientMethod {
							want += "," + tt.reply
						}
					}
					took := time.Since(start)
					var e *backoff.Error
					if tt.reason == nil && err != nil || tt.reason != nil && (!errors.As(err, &e) || e.Reason != tt.reason) {
						t.Errorf("error %v, want reason %v", err, tt.reason)
					}
					if status.Code(err) != tt.code || tt.reason == nil && got != want {
						t.Errorf("reply %q, code %v; want %q, %v", got, status.Code(err), want, tt.code)
					}
					if tt.below && !errors.Is(err, backoff.ErrRetriedBelow) {
						t.Errorf("error %v, want one matching ErrRetriedBelow (pushback -1)", err)
					}
					if took != tt.took {
						t.Errorf("took %v, want %v", took, tt.took)
					}
					synctest.Wait() // the losers' cancellation reaches the server
					if a := svc.attempts(method); !slices.Equal(a, tt.attempts) {
						t.Errorf("copies at the server with %s %q, want %q", PreviousAttemptsKey, a, tt.attempts)
					}
					if !slices.Equal(rec.retries, tt.retries) || !slices.Equal(rec.wins, tt.wins) || !slices.Equal(rec.done, []string{tt.done}) {
						t.Errorf("OnRetry %q, OnWin %v, OnDone %q; want %q, %v, %q", rec.retries, rec.wins, rec.done, tt.retries, tt.wins, tt.done)
					}
					hung := 0
					for i := range tt.attempts {
						if d, _ := tt.answer(i + 1); d > took {
							hung++
						}
					}
					if n := cs.cancelled.Load(); n != int64(hung) {
						t.Errorf("%d copies cancelled at the server, want %d", n, hung)
					}
				})
			})
		}
	}
}

// TestHedgeBudgetRefusal: a Budget that refuses stops further copies
// without an error: the first copy's answer comes, late.
func TestHedgeBudgetRefusal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := backoff.NewBudget(backoff.BudgetConfig{Burst: 1})
		if err != nil {
			t.Fatal(err)
		}
		for b.Withdraw() == nil {
		}
		r := immediate(3)
		r.Budget = b
		cs := &copies{answer: func(int) (time.Duration, func(context.Context) error) { return 30 * time.Millisecond, nil }}
		svc := cs.service()
		rec := &hedgeRecord{}
		c := hedgeClient(t, ClientConfig{Retrier: r}, Hedging{Delay: 10 * time.Millisecond}, rec)
		cc := dialBuf(t, svc, grpc.WithUnaryInterceptor(c.UnaryInterceptor()))
		start := time.Now()
		got, err := call(context.Background(), cc, "hi")
		if err != nil || got != "copy 1" || time.Since(start) != 30*time.Millisecond || svc.count(unaryMethod) != 1 || len(rec.retries) != 0 {
			t.Errorf("%q, %v after %v, %d copies, OnRetry %q; want copy 1 after 30ms, 1 copy, no OnRetry", got, err, time.Since(start), svc.count(unaryMethod), rec.retries)
		}
	})
}

// TestHedgeParamErrors: bad Hedging fields are ParamErrors naming them.
func TestHedgeParamErrors(t *testing.T) {
	for _, tt := range []struct {
		h     Hedging
		param string
	}{
		{Hedging{Delay: -1}, "Hedging.Delay"},
		{Hedging{MaxAttempts: 1}, "Hedging.MaxAttempts"},
		{Hedging{MaxAttempts: 6}, "Hedging.MaxAttempts"},
		{Hedging{MaxAttempts: -2}, "Hedging.MaxAttempts"},
	} {
		_, err := NewClient(ClientConfig{Hedging: &tt.h})
		var pe *backoff.ParamError
		if !errors.As(err, &pe) || pe.Param != tt.param {
			t.Errorf("%+v: %v, want a ParamError for %s", tt.h, err, tt.param)
		}
	}
	for _, n := range []int{0, 2, 5} {
		if _, err := NewClient(ClientConfig{Hedging: &Hedging{MaxAttempts: n}}); err != nil {
			t.Errorf("MaxAttempts %d: %v", n, err)
		}
	}
}

// TestHedgeRaceAndLeak: many concurrent calls on loopback TCP whose
// first copy is often slow, so that hedges run and lose while the winner
// answers (run with -race), unary calls and server streams closed before
// they receive: every call's reply (each of a stream's 3 messages) is its
// winner's, as OnWin tells, never a loser's; the caller's header and
// trailer are the winner's, and a unary call's grpc.Peer filled; and once
// the calls return, the goroutines go back to their count before them.
func TestHedgeRaceAndLeak(t *testing.T) {
	// answer answers copy n of a call of text: slowly for the first copy
	// of a slow one; the header and trailer say n.
	answer := func(ctx context.Context, text string) (string, error) {
		n := copyNumber(ctx)
		grpc.SetHeader(ctx, metadata.Pairs("copy", fmt.Sprint(n)))
		grpc.SetTrailer(ctx, metadata.Pairs("copy", fmt.Sprint(n)))
		if n == 1 && strings.HasSuffix(text, "slow") {
			select {
			case <-time.After(20 * time.Millisecond):
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}
		return strings.Repeat(fmt.Sprint(n), 64), nil
	}
	svc := &service{
		unary: func(ctx context.Context, in *msg) (*msg, error) {
			text, err := answer(ctx, in.Text)
			return &msg{Text: text}, err
		},
		server: func(in *msg, ss grpc.ServerStream) error {
			text, err := answer(ss.Context(), in.Text)
			for i := 0; err == nil && i < 3; i++ {
				err = ss.SendMsg(&msg{Text: text})
			}
			return err
		},
	}
	// calls makes a call of text by method and returns what the caller
	// got: the replies, header and trailer.
	calls := map[string]func(ctx context.Context, cc *grpc.ClientConn, text string) ([]string, metadata.MD, metadata.MD, error){
		unaryMethod: func(ctx context.Context, cc *grpc.ClientConn, text string) ([]string, metadata.MD, metadata.MD, error) {
			var header, trailer metadata.MD
			var p peer.Peer
			got, err := call(ctx, cc, text, grpc.Header(&header), grpc.Trailer(&trailer), grpc.Peer(&p))
			if err == nil && p.Addr == nil {
				err = errors.New("grpc.Peer not filled")
			}
			return []string{got, got, got}, header, trailer, err
		},
		serverMethod: func(ctx context.Context, cc *grpc.ClientConn, text string) ([]string, metadata.MD, metadata.MD, error) {
			s, err := cc.NewStream(ctx, streamDesc(serverMethod), serverMethod)
			if err != nil {
				return nil, nil, nil, err
			}
			if err := s.SendMsg(&msg{Text: text}); err != nil {
				return nil, nil, nil, err
			}
			s.CloseSend()
			got, err := recvTexts(s)
			header, _ := s.Header()
			return got, header, s.Trailer(), err
		},
	}
	for _, method := range []string{unaryMethod, serverMethod} {
		t.Run(method, func(t *testing.T) {
			var winners sync.Map // of the calls' texts: the winner's number
			h := Hedging{Delay: 2 * time.Millisecond, MaxAttempts: 3, OnWin: func(ctx context.Context, n int) {
				winners.Store(ctx.Value(callKey{}), n)
			}}
			c := client(t, ClientConfig{Retrier: immediate(3), Hedging: &h})
			cc := dial(t, listen(t, svc), grpc.WithUnaryInterceptor(c.UnaryInterceptor()), grpc.WithStreamInterceptor(c.StreamInterceptor()))
			if _, _, _, err := calls[method](context.Background(), cc, "warm"); err != nil {
				t.Fatal(err)
			}
			start := runtime.NumGoroutine()
			var wg sync.WaitGroup
			var hedged atomic.Int64
			for g := range 8 {
				wg.Go(func() {
					for i := range 40 {
						text := fmt.Sprintf("%d/%d", g, i)
						if i%2 == 0 {
							text += " slow"
						}
						ctx := context.WithValue(context.Background(), callKey{}, text)
						got, header, trailer, err := calls[method](ctx, cc, text)
						if err != nil {
							t.Errorf("%s: %v", text, err)
							continue
						}
						n := 1
						if w, ok := winners.Load(text); ok {
							n = w.(int)
							hedged.Add(1)
						}
						want := strings.Repeat(fmt.Sprint(n), 64)
						if !slices.Equal(got, []string{want, want, want}) || !slices.Equal(header.Get("copy"), []string{fmt.Sprint(n)}) || !slices.Equal(trailer.Get("copy"), []string{fmt.Sprint(n)}) {
							t.Errorf("%s: replies %q, header %v, trailer %v; want the winner's, copy %d", text, got, header, trailer, n)
						}
					}
				})
			}
			wg.Wait()
			if hedged.Load() == 0 {
				t.Error("no call was hedged")
			}
			var n int
			for range 500 {
				if n = runtime.NumGoroutine(); n <= start {
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
			buf := make([]byte, 1<<20)
			t.Errorf("%d goroutines, %d before the calls\n%s", n, start, buf[:runtime.Stack(buf, true)])
		})
	}
}

type callKey struct{}

// TestHedgeAllocs: a call whose first copy answers before the delay
// allocates, through a hedging Client, at most 5 more than through the same
// Client without Hedging, on loopback TCP: the context by which a winner
// cancels the first copy (context.WithCancel's context and func, its Done
// channel, and the map in which grpc registers its own context as its
// child, 2). A server stream closed before it receives allocates at most
// 20 more (20 when measured: the bound pins the cost, no goal): that
// context, its stop func, and the hedging state, which is not pooled for
// streams (its channel, timer, and a func per copy).
func TestHedgeAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	svc := &service{
		unary:  func(_ context.Context, in *msg) (*msg, error) { return in, nil },
		server: func(in *msg, ss grpc.ServerStream) error { return ss.SendMsg(in) },
	}
	target := listen(t, svc)
	allocs := func(cfg ClientConfig, method string) float64 {
		cc := dial(t, target, client(t, cfg).DialOptions()...)
		return testing.AllocsPerRun(500, func() {
			if err := callMethod(context.Background(), cc, method); err != nil {
				t.Fatal(err)
			}
		})
	}
	for _, tc := range []struct {
		method string
		more   float64
	}{{unaryMethod, 5}, {serverMethod, 20}} {
		plain := allocs(ClientConfig{Retrier: immediate(3)}, tc.method)
		hedged := allocs(ClientConfig{Retrier: immediate(3), Hedging: &Hedging{Delay: time.Hour}}, tc.method)
		t.Logf("%s: allocations per call: %v without Hedging, %v with", tc.method, plain, hedged)
		if hedged > plain+tc.more {
			t.Errorf("%s: %v allocations per call with Hedging, %v without; want at most %v more", tc.method, hedged, plain, tc.more)
		}
	}
}

// TestHedgeRoundRobinBackends: on a round_robin channel over two loopback
// servers, each call's two copies (the first hangs, the hedge answers)
// reach different servers, as consecutive picks do; Hedging chooses no
// backend itself.
func TestHedgeRoundRobinBackends(t *testing.T) {
	var mu sync.Mutex
	seen := map[string][]int{} // call text: the servers of its copies, in order
	server := func(id int) *service {
		return &service{unary: func(ctx context.Context, in *msg) (*msg, error) {
			mu.Lock()
			seen[in.Text] = append(seen[in.Text], id)
			mu.Unlock()
			if in.Text == "warm" {
				return in, nil
			}
			if copyNumber(ctx) == 1 {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			for range 1000 { // until the first copy has arrived, which the hedge's answer cancels
				mu.Lock()
				n := len(seen[in.Text])
				mu.Unlock()
				if n == 2 {
					break
				}
				time.Sleep(time.Millisecond)
			}
			return in, nil
		}}
	}
	r := manual.NewBuilderWithScheme("hedge")
	r.InitialState(resolver.State{Addresses: []resolver.Address{{Addr: listen(t, server(1))}, {Addr: listen(t, server(2))}}})
	c := client(t, ClientConfig{Hedging: &Hedging{Delay: time.Millisecond}})
	cc := dial(t, r.Scheme()+":///backends", grpc.WithResolvers(r), grpc.WithDefaultServiceConfig(`{"loadBalancingConfig": [{"round_robin": {}}]}`),
		grpc.WithUnaryInterceptor(c.UnaryInterceptor()))
	for range 100 { // until both servers are READY
		if _, err := call(context.Background(), cc, "warm"); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		both := slices.Contains(seen["warm"], 1) && slices.Contains(seen["warm"], 2)
		mu.Unlock()
		if both {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	for i := range 10 {
		text := fmt.Sprint("call ", i)
		if _, err := call(context.Background(), cc, text); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		got := seen[text]
		mu.Unlock()
		if len(got) != 2 || got[0] == got[1] {
			t.Errorf("%s: copies reached servers %v, want two different", text, got)
		}
	}
}

// healthCopies answers a health check's first copy after wait, or when
// it is cancelled, and every other at once: SERVING.
type healthCopies struct {
	healthpb.UnimplementedHealthServer
	wait func() time.Duration
}

func (h healthCopies) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	if copyNumber(ctx) == 1 {
		select {
		case <-time.After(h.wait()):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

// TestHedgeProtoReply: a protobuf reply, which the caller had filled
// before the call, holds the winning copy's answer and nothing else, when
// the first copy never answers, and when it answers about when the hedge
// goes out, from concurrent calls (run with -race).
func TestHedgeProtoReply(t *testing.T) {
	for _, wait := range []func() time.Duration{
		func() time.Duration { return time.Hour },
		func() time.Duration { return rand.N(2 * time.Millisecond) },
	} {
		srv := grpc.NewServer()
		healthpb.RegisterHealthServer(srv, healthCopies{wait: wait})
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go srv.Serve(lis)
		t.Cleanup(srv.Stop)
		c := client(t, ClientConfig{Hedging: &Hedging{Delay: time.Millisecond}})
		cc, err := grpc.NewClient(lis.Addr().String(), append(c.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close() })
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for range 25 {
					reply := &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_NOT_SERVING}
					reply.ProtoReflect().SetUnknown([]byte{0x78, 0x01}) // field 15, varint 1: the caller's, not the winner's
					if err := cc.Invoke(context.Background(), healthpb.Health_Check_FullMethodName, &healthpb.HealthCheckRequest{}, reply); err != nil {
						t.Error(err)
						return
					}
					want := &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}
					if !proto.Equal(reply, want) {
						t.Errorf("reply %v, want %v", reply, want)
					}
				}
			})
		}
		wg.Wait()
	}
}

// TestHedgeCancel: the caller's cancellation ends every copy, while
// copies may still be sent and once no more may be, and a wait for the
// server's pushback: the call returns at once with CANCELLED, and the
// server sees each copy end; for a unary call and a server stream.
func TestHedgeCancel(t *testing.T) {
	hang := func(int) (time.Duration, func(context.Context) error) { return time.Hour, nil }
	pushedBack := func(n int) (time.Duration, func(context.Context) error) {
		if n == 1 {
			return time.Millisecond, pushback(codes.Unavailable, "1000")
		}
		return time.Hour, nil
	}
	for _, tt := range []struct {
		most, copies, cancelled int
		answer                  func(int) (time.Duration, func(context.Context) error)
	}{{2, 2, 2, hang}, {3, 3, 3, hang}, {3, 1, 0, pushedBack}} {
		for _, method := range []string{unaryMethod, serverMethod} {
			most := tt.most
			synctest.Test(t, func(t *testing.T) {
				cs := &copies{answer: tt.answer}
				svc := cs.service()
				rec := &hedgeRecord{}
				c := hedgeClient(t, ClientConfig{}, Hedging{Delay: 10 * time.Millisecond, MaxAttempts: most}, rec)
				cc := dialBuf(t, svc, grpc.WithUnaryInterceptor(c.UnaryInterceptor()), grpc.WithStreamInterceptor(c.StreamInterceptor()))
				ctx, cancel := context.WithCancel(context.Background())
				time.AfterFunc(25*time.Millisecond, cancel)
				start := time.Now()
				err := callMethod(ctx, cc, method)
				took := time.Since(start)
				synctest.Wait()
				done := fmt.Sprint(tt.copies, ":Canceled")
				if !errors.Is(err, context.Canceled) || status.Code(err) != codes.Canceled || took != 25*time.Millisecond ||
					svc.count(method) != tt.copies || cs.cancelled.Load() != int64(tt.cancelled) || !slices.Equal(rec.done, []string{done}) {
					t.Errorf("%s, MaxAttempts %d: %v (%v) after %v, %d copies, %d cancelled, OnDone %q; want context.Canceled, CANCELLED, 25ms, %d, %d, %s",
						method, most, err, status.Code(err), took, svc.count(method), cs.cancelled.Load(), rec.done, tt.copies, tt.cancelled, done)
				}
			})
		}
	}
}

// TestHedgeAdaptive: with no Delay, a copy is sent only after a failure
// until the adaptive delay has MinSamples winners; then after their
// quantile (the largest latency of the 5 ms winner's bucket).
func TestHedgeAdaptive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d, err := hedge.NewDelay(hedge.Config{MinSamples: 1})
		if err != nil {
			t.Fatal(err)
		}
		var slow atomic.Bool
		cs := &copies{answer: func(n int) (time.Duration, func(context.Context) error) {
			if n == 1 && slow.Load() {
				return time.Hour, nil
			}
			return 5 * time.Millisecond, nil
		}}
		svc := cs.service()
		rec := &hedgeRecord{}
		c := hedgeClient(t, ClientConfig{}, Hedging{Adaptive: d}, rec)
		cc := dialBuf(t, svc, grpc.WithUnaryInterceptor(c.UnaryInterceptor()))
		if got, err := call(context.Background(), cc, "hi"); err != nil || got != "copy 1" || len(rec.retries) != 0 {
			t.Fatalf("%q, %v, OnRetry %q; want copy 1 without a hedge", got, err, rec.retries)
		}
		delay, ok := d.Hedge()
		if !ok || delay < 5*time.Millisecond || delay > 5*time.Millisecond+5*time.Millisecond/8 {
			t.Fatalf("delay %v, %v after one winner of 5ms; want 5ms to 5.625ms", delay, ok)
		}
		slow.Store(true)
		start := time.Now()
		got, err := call(context.Background(), cc, "hi")
		if took := time.Since(start); err != nil || got != "copy 2" || took != delay+5*time.Millisecond {
			t.Errorf("%q, %v after %v; want copy 2 after %v", got, err, took, delay+5*time.Millisecond)
		}
		if want := []string{fmt.Sprint("1:delay:", delay)}; !slices.Equal(rec.retries, want) {
			t.Errorf("OnRetry %q, want %q", rec.retries, want)
		}
	})
}

// TestHedgeObservesTheFirstCopy: when a hedge wins while the first copy is
// out, Adaptive observes the first copy's time so far, not the hedge's: a
// straggler enters the window above the delay. A first call answers in
// 40ms (the delay becomes about 42ms, its bucket's top); the second's
// first copy never answers, its hedge, sent then, answers in 30ms: the
// window holds 40ms and about 72ms, not 30ms, so its top is above 64ms.
func TestHedgeObservesTheFirstCopy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d, err := hedge.NewDelay(hedge.Config{MinSamples: 1})
		if err != nil {
			t.Fatal(err)
		}
		var calls atomic.Int32
		cs := &copies{answer: func(n int) (time.Duration, func(context.Context) error) {
			switch {
			case calls.Add(1) == 1:
				return 40 * time.Millisecond, nil
			case n == 1:
				return time.Hour, nil
			}
			return 30 * time.Millisecond, nil
		}}
		c := hedgeClient(t, ClientConfig{}, Hedging{Adaptive: d}, &hedgeRecord{})
		cc := dialBuf(t, cs.service(), grpc.WithUnaryInterceptor(c.UnaryInterceptor()))
		for _, want := range []string{"copy 1", "copy 2"} {
			if got, err := call(context.Background(), cc, "hi"); got != want || err != nil {
				t.Fatalf("%q, %v; want %s", got, err, want)
			}
			time.Sleep(time.Second) // the next time bucket: the delay is computed anew
		}
		// MaxExtraLoad 0.05 over 2 latencies: the larger one's bucket.
		if got, ok := d.Hedge(); !ok || got < 64*time.Millisecond {
			t.Errorf("Hedge() = %v, %v; want above 64ms, from the first copy's 72ms", got, ok)
		}
	})
}

// TestHedgeNotPointer: a call whose reply is not a pointer is sent as
// without Hedging: once, however long it takes.
func TestHedgeNotPointer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int64
		invoker := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error {
			calls.Add(1)
			time.Sleep(time.Second)
			return nil
		}
		c := client(t, ClientConfig{Hedging: &Hedging{Delay: time.Millisecond}})
		if err := c.UnaryInterceptor()(context.Background(), unaryMethod, nil, msg{}, nil, invoker); err != nil || calls.Load() != 1 {
			t.Errorf("%v after %d calls, want nil after 1", err, calls.Load())
		}
	})
}

// TestHedgePanic: an invoker's panic in a hedge reaches the caller's
// goroutine, after the other copies are cancelled.
func TestHedgePanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var firstEnded atomic.Bool
		invoker := func(ctx context.Context, _ string, _, _ any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
			if copyOf(ctx) == 2 {
				panic("copy 2")
			}
			<-ctx.Done()
			firstEnded.Store(true)
			return status.FromContextError(ctx.Err()).Err()
		}
		c := client(t, ClientConfig{Hedging: &Hedging{Delay: time.Millisecond}})
		got := panicValue(func() {
			c.UnaryInterceptor()(context.Background(), unaryMethod, nil, new(msg), nil, invoker)
		})
		if got != "copy 2" || !firstEnded.Load() {
			t.Errorf("panic %v, first copy ended %v; want copy 2, true", got, firstEnded.Load())
		}
	})
}

// copyOf returns the copy that an outgoing context is for, as copyNumber
// does for an incoming one.
func copyOf(ctx context.Context) int {
	md, _ := metadata.FromOutgoingContext(ctx)
	return copyNumber(metadata.NewIncomingContext(ctx, md))
}

// TestHedgeStreamEmptyWin: a stream copy that ends OK without headers or
// a message answers: a hedge that does so after 3 ms, while the first copy
// hangs, wins; the caller reads the end at once, and the first copy is
// cancelled.
func TestHedgeStreamEmptyWin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var cancelled atomic.Int64
		svc := &service{server: func(_ *msg, ss grpc.ServerStream) error {
			if copyNumber(ss.Context()) == 1 {
				<-ss.Context().Done()
				cancelled.Add(1)
				return ss.Context().Err()
			}
			time.Sleep(3 * time.Millisecond)
			return nil
		}}
		rec := &hedgeRecord{}
		c := hedgeClient(t, ClientConfig{}, Hedging{Delay: 10 * time.Millisecond}, rec)
		cc := dialBuf(t, svc, grpc.WithStreamInterceptor(c.StreamInterceptor()))
		start := time.Now()
		got, err := recvAll(context.Background(), cc, "hi")
		took := time.Since(start)
		synctest.Wait()
		if err != nil || len(got) != 0 || took != 13*time.Millisecond || !slices.Equal(rec.wins, []int{2}) || cancelled.Load() != 1 {
			t.Errorf("%q, %v after %v, OnWin %v, %d cancelled; want no message, the end after 13ms, [2], 1", got, err, took, rec.wins, cancelled.Load())
		}
	})
}

// TestHedgeStreamsRetried: with Hedging, a stream that receives before
// its send side is closed is not hedged, however slow, and is retried as
// without it: a bidi stream whose first attempt fails UNAVAILABLE after
// 30 ms is retried once, and its first message comes after 60 ms.
func TestHedgeStreamsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := &service{bidi: func(ss grpc.ServerStream) error {
			in := new(msg)
			if err := ss.RecvMsg(in); err != nil {
				return err
			}
			time.Sleep(30 * time.Millisecond)
			if copyNumber(ss.Context()) == 1 {
				return status.Error(codes.Unavailable, "injected")
			}
			return ss.SendMsg(in)
		}}
		c := client(t, ClientConfig{Retrier: immediate(3), Hedging: &Hedging{Delay: time.Millisecond}})
		cc := dialBuf(t, svc, grpc.WithStreamInterceptor(c.StreamInterceptor()))
		start := time.Now()
		s, err := cc.NewStream(context.Background(), streamDesc(bidiMethod), bidiMethod)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.SendMsg(&msg{Text: "hi"}); err != nil {
			t.Fatal(err)
		}
		got := new(msg)
		err = s.RecvMsg(got)
		if err != nil || got.Text != "hi" || time.Since(start).Round(time.Millisecond) != 60*time.Millisecond || !slices.Equal(svc.attempts(bidiMethod), []string{"", "1"}) {
			t.Errorf("%q, %v after %v, streams %q; want hi after 60ms, streams [\"\" \"1\"]", got.Text, err, time.Since(start), svc.attempts(bidiMethod))
		}
		s.CloseSend()
		if err := s.RecvMsg(got); err != io.EOF {
			t.Errorf("the stream's end: %v, want io.EOF", err)
		}
	})
}
