package backoffhttp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/hedge"
	"github.com/backoffgo/backoff/internal/race"
)

// byCopy is a handler that plays faults[n-1] for copy n of a request, as
// its AttemptCountHeader says (the last fault for later copies), after
// reading the body, and counts the copies in n.
func byCopy(n *atomic.Int32, faults ...fault) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		io.Copy(io.Discard, r.Body)
		faults[min(Attempt(r), len(faults))-1](w, r)
	}
}

// after answers with f after d, or records in cancelled that the client
// went away first.
func after(d time.Duration, f fault, cancelled *atomic.Int32) fault {
	return func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(d):
			f(w, r)
		case <-r.Context().Done():
			if cancelled != nil {
				cancelled.Add(1)
			}
		}
	}
}

// hooks records what a Retrier's hooks heard.
type hooks struct {
	mu       sync.Mutex
	attempts []int
	errs     []error
	delays   []time.Duration
	done     int
	doneErr  error
}

func (h *hooks) retrier() *backoff.Retrier {
	return &backoff.Retrier{Policy: minute,
		OnRetry: func(_ context.Context, attempt int, err error, delay time.Duration) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.attempts, h.errs, h.delays = append(h.attempts, attempt), append(h.errs, err), append(h.delays, delay)
		},
		OnDone: func(_ context.Context, attempts int, err error) { h.done, h.doneErr = attempts, err },
	}
}

func pipeGet(t *testing.T) *http.Request {
	t.Helper()
	return must(http.NewRequest("GET", "http://pipe/", nil))
}

// roundTripTimed sends req through tr and returns the body read, the
// response, how long RoundTrip took, and the error.
func roundTripTimed(t *testing.T, tr *Transport, req *http.Request) (string, *http.Response, time.Duration, error) {
	t.Helper()
	start := time.Now()
	resp, err := tr.RoundTrip(req)
	elapsed := time.Since(start)
	if err != nil {
		return "", nil, elapsed, err
	}
	b, rerr := io.ReadAll(resp.Body)
	resp.Body.Close()
	if rerr != nil {
		t.Errorf("reading the body: %v", rerr)
	}
	return string(b), resp, elapsed, nil
}

// TestHedgeSlowCopyHedgedAfterDelay: a first copy without an answer after
// Delay gets a hedge, sent exactly then; the hedge's fast answer wins, and
// the first copy is cancelled.
func TestHedgeSlowCopyHedgedAfterDelay(t *testing.T) {
	var n, cancelled atomic.Int32
	inBubble(t, byCopy(&n, after(time.Second, ok("slow"), &cancelled), ok("fast")), func(t *testing.T, base *http.Transport) {
		var h hooks
		c := &counter{base: base}
		tr := &Transport{Base: c, Retrier: h.retrier(), Hedging: &Hedging{Delay: 10 * time.Millisecond}}
		body, _, elapsed, err := roundTripTimed(t, tr, pipeGet(t))
		if body != "fast" || err != nil || elapsed != 10*time.Millisecond {
			t.Errorf("%q, %v after %v; want fast after 10ms", body, err, elapsed)
		}
		synctest.Wait()
		if n.Load() != 2 || cancelled.Load() != 1 {
			t.Errorf("%d copies, %d cancelled; want 2, the first cancelled", n.Load(), cancelled.Load())
		}
		if len(h.errs) != 1 || h.errs[0] != ErrHedgeDelay || h.attempts[0] != 1 || h.delays[0] != 10*time.Millisecond {
			t.Errorf("OnRetry heard %v %v %v; want once: 1, ErrHedgeDelay, 10ms", h.attempts, h.errs, h.delays)
		}
		if h.done != 2 || h.doneErr != nil {
			t.Errorf("OnDone heard %d, %v; want 2, nil", h.done, h.doneErr)
		}
		c.check(t, 1)
	})
}

// TestHedgeFirstCopyWinsBeforeDelay: no hedge when the first copy answers
// in time.
func TestHedgeFirstCopyWinsBeforeDelay(t *testing.T) {
	var n atomic.Int32
	inBubble(t, byCopy(&n, after(5*time.Millisecond, ok("first"), nil), ok("hedge")), func(t *testing.T, base *http.Transport) {
		var h hooks
		tr := &Transport{Base: base, Retrier: h.retrier(), Hedging: &Hedging{Delay: 10 * time.Millisecond}}
		body, _, elapsed, err := roundTripTimed(t, tr, pipeGet(t))
		if body != "first" || err != nil || elapsed != 5*time.Millisecond || n.Load() != 1 || len(h.errs) != 0 || h.done != 1 {
			t.Errorf("%q, %v after %v, %d copies, OnRetry %v, OnDone %d; want first after 5ms, 1 copy, no OnRetry, OnDone 1",
				body, err, elapsed, n.Load(), h.errs, h.done)
		}
	})
}

// TestHedgeNonFatalSendsNextAtOnce: a 503, or an error ShouldRetry
// retries, sends the next copy at once, whatever the Delay.
func TestHedgeNonFatalSendsNextAtOnce(t *testing.T) {
	for name, first := range map[string]fault{"503": status(503), "reset": resetMidResponse} {
		t.Run(name, func(t *testing.T) {
			var n atomic.Int32
			inBubble(t, byCopy(&n, first, ok("second")), func(t *testing.T, base *http.Transport) {
				var h hooks
				c := &counter{base: base}
				tr := &Transport{Base: c, Retrier: h.retrier(), Hedging: &Hedging{Delay: time.Minute}}
				body, _, elapsed, err := roundTripTimed(t, tr, pipeGet(t))
				if body != "second" || err != nil || elapsed != 0 || n.Load() != 2 {
					t.Errorf("%q, %v after %v and %d copies; want second at once after 2", body, err, elapsed, n.Load())
				}
				if len(h.errs) != 1 || h.delays[0] != 0 || h.attempts[0] != 1 || errors.Is(h.errs[0], ErrHedgeDelay) {
					t.Errorf("OnRetry heard %v %v %v; want once: 1, the failure, 0", h.attempts, h.errs, h.delays)
				}
				if name == "503" {
					c.check(t, 2)
				}
			})
		})
	}
}

// TestHedgeStoppedByServer: a response that says DontRetryHeader, or
// carries a Retry-After, stops further copies; the copies in flight still
// run, and when none wins the Transport gives up on the last response.
func TestHedgeStoppedByServer(t *testing.T) {
	cases := []struct {
		name   string
		first  fault
		inner  bool
		copies int32
		reason error
	}{
		{"DontRetryHeader", status(503, DontRetryHeader, "true"), false, 1, backoff.ErrRetriedBelow},
		{"Retry-After", status(503, "Retry-After", "1"), false, 1, backoff.ErrHintTooLong},
		{"DontRetryHeader with RetryInner", status(503, DontRetryHeader, "true"), true, 3, backoff.ErrExhausted},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int32
			inBubble(t, byCopy(&n, tc.first, status(503)), func(t *testing.T, base *http.Transport) {
				r := retrier(minute)
				r.RetryInner = tc.inner
				c := &counter{base: base}
				tr := &Transport{Base: c, Retrier: r, Hedging: &Hedging{Delay: time.Minute, MaxAttempts: 3}}
				_, resp, _, err := roundTripTimed(t, tr, pipeGet(t))
				var e *backoff.Error
				if err != nil || resp.StatusCode != 503 || !errors.As(CheckResponse(resp), &e) || e.Reason != tc.reason || e.Attempts != int(tc.copies) {
					t.Fatalf("%v, %v (%v); want the 503 given up on with %v after %d", err, resp, CheckResponse(resp), tc.reason, tc.copies)
				}
				if n.Load() != tc.copies {
					t.Errorf("%d copies; want %d", n.Load(), tc.copies)
				}
				c.check(t, int(tc.copies))
			})
		})
	}
	t.Run("while a hedge is in flight", func(t *testing.T) {
		var n atomic.Int32
		inBubble(t, byCopy(&n, after(15*time.Millisecond, status(503, DontRetryHeader, "true"), nil), after(30*time.Millisecond, ok("hedge"), nil)),
			func(t *testing.T, base *http.Transport) {
				tr := &Transport{Base: base, Hedging: &Hedging{Delay: 10 * time.Millisecond, MaxAttempts: 3}}
				body, _, elapsed, err := roundTripTimed(t, tr, pipeGet(t))
				if body != "hedge" || err != nil || elapsed != 40*time.Millisecond || n.Load() != 2 {
					t.Errorf("%q, %v after %v and %d copies; want hedge after 40ms and 2", body, err, elapsed, n.Load())
				}
			})
	})
}

// TestHedgeBudgetRefusal: a refusal of the Retrier's Budget stops further
// copies and is no error: the first copy's answer is returned.
func TestHedgeBudgetRefusal(t *testing.T) {
	var n atomic.Int32
	inBubble(t, byCopy(&n, after(50*time.Millisecond, ok("first"), nil), ok("hedge")), func(t *testing.T, base *http.Transport) {
		b := must(backoff.NewBudget(backoff.BudgetConfig{Burst: 1, Reserve: 0.001}))
		b.Withdraw() // empty
		var h hooks
		r := h.retrier()
		r.Budget = b
		tr := &Transport{Base: base, Retrier: r, Hedging: &Hedging{Delay: 10 * time.Millisecond}}
		body, _, elapsed, err := roundTripTimed(t, tr, pipeGet(t))
		if body != "first" || err != nil || elapsed != 50*time.Millisecond || n.Load() != 1 || len(h.errs) != 0 {
			t.Errorf("%q, %v after %v, %d copies, OnRetry %v; want first after 50ms, 1 copy, no OnRetry", body, err, elapsed, n.Load(), h.errs)
		}
		if got := b.Available(); got < 0.09 || got > 0.11 {
			t.Errorf("budget holds %v; want the call's deposit, 0.1", got)
		}
	})
	t.Run("all copies fail", func(t *testing.T) {
		var n atomic.Int32
		inBubble(t, byCopy(&n, after(50*time.Millisecond, status(503), nil)), func(t *testing.T, base *http.Transport) {
			b := must(backoff.NewBudget(backoff.BudgetConfig{Burst: 1, Reserve: 0.001}))
			b.Withdraw()
			tr := &Transport{Base: base, Retrier: &backoff.Retrier{Policy: minute, Budget: b}, Hedging: &Hedging{Delay: 10 * time.Millisecond}}
			_, resp, _, err := roundTripTimed(t, tr, pipeGet(t))
			var e *backoff.Error
			if err != nil || !errors.As(CheckResponse(resp), &e) || !errors.Is(e.Reason, backoff.ErrBudget) || n.Load() != 1 {
				t.Errorf("%v, %v, %d copies; want the 503 given up on for the budget after 1", err, CheckResponse(resp), n.Load())
			}
		})
	})
}

// TestHedgeMaxAttempts: MaxAttempts bounds the copies, which are sent
// Delay apart; when all fail, the last one's response is returned.
func TestHedgeMaxAttempts(t *testing.T) {
	var n atomic.Int32
	inBubble(t, byCopy(&n, after(time.Second, status(503), nil)), func(t *testing.T, base *http.Transport) {
		var h hooks
		c := &counter{base: base}
		tr := &Transport{Base: c, Retrier: h.retrier(), Hedging: &Hedging{Delay: 10 * time.Millisecond, MaxAttempts: 3}}
		_, resp, elapsed, err := roundTripTimed(t, tr, pipeGet(t))
		var e *backoff.Error
		var se *StatusError
		if err != nil || !errors.As(CheckResponse(resp), &e) || e.Reason != backoff.ErrExhausted || e.Attempts != 3 ||
			!errors.As(e.Err, &se) || se.StatusCode != 503 {
			t.Fatalf("%v, %v; want the 503 given up on, exhausted after 3, its Err the last 503's StatusError", err, CheckResponse(resp))
		}
		if n.Load() != 3 || elapsed != time.Second+20*time.Millisecond || h.done != 3 {
			t.Errorf("%d copies, the last answer after %v, OnDone %d; want 3, 1.02s, 3", n.Load(), elapsed, h.done)
		}
		if want := []int{1, 2}; len(h.attempts) != 2 || h.attempts[0] != 1 || h.attempts[1] != 2 {
			t.Errorf("OnRetry heard attempts %v; want %v", h.attempts, want)
		}
		c.check(t, 3)
	})
}

// TestHedgeBodyReplayed: every copy of a 4 KiB POST with an
// Idempotency-Key gets its whole body from GetBody, over real sockets; a
// request without GetBody is sent once, not hedged.
func TestHedgeBodyReplayed(t *testing.T) {
	payload := strings.Repeat("0123456789abcdef", 256)
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		if Attempt(r) < 3 {
			after(300*time.Millisecond, ok("slow"), nil)(w, r)
			return
		}
		io.WriteString(w, "third")
	}))
	defer srv.Close()
	tr := &Transport{Base: srv.Client().Transport, Hedging: &Hedging{Delay: 5 * time.Millisecond, MaxAttempts: 3}}
	req := must(http.NewRequest("POST", srv.URL, strings.NewReader(payload)))
	req.Header.Set("Idempotency-Key", "k1")
	body, _, _, err := roundTripTimed(t, tr, req)
	mu.Lock()
	if body != "third" || err != nil || len(bodies) != 3 {
		t.Fatalf("%q, %v after %d copies; want third after 3", body, err, len(bodies))
	}
	for i, b := range bodies {
		if b != payload {
			t.Errorf("copy %d sent %d bytes; want the %d of the body", i+1, len(b), len(payload))
		}
	}
	bodies = nil
	mu.Unlock()

	req = must(http.NewRequest("POST", srv.URL, strings.NewReader(payload)))
	req.Header.Set("Idempotency-Key", "k2")
	req.GetBody = nil
	body, _, elapsed, err := roundTripTimed(t, tr, req)
	mu.Lock()
	defer mu.Unlock()
	if body != "slow" || err != nil || len(bodies) != 1 || bodies[0] != payload || elapsed < 300*time.Millisecond {
		t.Errorf("%q, %v after %d copies and %v; want slow after 1 copy of the whole body and 300ms", body, err, len(bodies), elapsed)
	}
}

// TestHedgeWinnerBodyIntact: the winner's body streams on, whole, after
// the losers are cancelled and until it is closed: its context lives till
// then.
func TestHedgeWinnerBodyIntact(t *testing.T) {
	const chunk, chunks = 4 << 10, 64
	var n, cancelled atomic.Int32
	stream := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(chunk*chunks))
		for i := range chunks {
			if i > 0 {
				time.Sleep(time.Millisecond) // the rest comes after the losers are cancelled
			}
			w.Write(bytes.Repeat([]byte{byte('a' + i%26)}, chunk))
			w.(http.Flusher).Flush()
		}
	}
	inBubble(t, byCopy(&n, after(time.Second, ok("slow"), &cancelled), stream), func(t *testing.T, base *http.Transport) {
		c := &counter{base: base}
		tr := &Transport{Base: c, Hedging: &Hedging{Delay: 10 * time.Millisecond, MaxAttempts: 3}}
		resp := must(tr.RoundTrip(pipeGet(t)))
		synctest.Wait()
		if cancelled.Load() != 1 {
			t.Errorf("%d copies cancelled once the winner's headers came; want 1", cancelled.Load())
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || len(b) != chunk*chunks {
			t.Fatalf("read %d bytes, %v; want %d", len(b), err, chunk*chunks)
		}
		for i := range chunks {
			if b[i*chunk] != byte('a'+i%26) || b[i*chunk+chunk-1] != byte('a'+i%26) {
				t.Fatalf("chunk %d is %q; want %q", i, b[i*chunk], 'a'+i%26)
			}
		}
		if n.Load() != 2 {
			t.Errorf("%d copies; want 2", n.Load())
		}
		c.check(t, 1)
	})
}

// TestHedgeLosersClosedOrReturned: a loser cancelled before its answer
// has its connection closed; one whose answer came has its body drained
// and closed, its connection returned: no connection stays active, and
// every response body is closed once.
func TestHedgeLosersClosedOrReturned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int32
		var mu sync.Mutex
		states := map[net.Conn]http.ConnState{}
		l := newPipeListener()
		// Copies 1 and 2 answer at 10ms, copy 3 (sent at 10ms) never.
		srv := &http.Server{Handler: byCopy(&n, after(10*time.Millisecond, ok("one"), nil), after(5*time.Millisecond, ok("two"), nil), hang),
			ConnState: func(c net.Conn, s http.ConnState) { mu.Lock(); states[c] = s; mu.Unlock() }}
		go srv.Serve(l)
		base := &http.Transport{DialContext: l.dial}
		c := &counter{base: base}
		tr := &Transport{Base: c, Hedging: &Hedging{Delay: 5 * time.Millisecond, MaxAttempts: 3}}
		for range 3 {
			body, _, _, err := roundTripTimed(t, tr, pipeGet(t))
			if (body != "one" && body != "two") || err != nil {
				t.Errorf("%q, %v; want one or two", body, err)
			}
			time.Sleep(2 * drainTimeout)
			synctest.Wait()
			n.Store(0)
		}
		mu.Lock()
		for conn, s := range states {
			if s == http.StateActive { // New: a connection dialled for a copy cancelled meanwhile, pooled unused
				t.Errorf("connection %p is active; want idle, new or closed", conn)
			}
		}
		mu.Unlock()
		c.check(t, len(c.bodies))
		srv.Close()
		base.CloseIdleConnections()
	})
}

// TestHedgeRaceAndGoroutines: many hedged requests at once over real
// sockets, half of them slow, are -race clean, each gets its own answer,
// and no goroutine is left once the idle connections are closed.
func TestHedgeRaceAndGoroutines(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if Attempt(r) == 1 && r.URL.Query().Get("i")[0]%2 == 0 {
			after(200*time.Millisecond, nil, nil)(w, r) // never answers: cancelled
			return
		}
		io.WriteString(w, r.URL.Query().Get("i"))
	}))
	defer srv.Close()
	before := runtime.NumGoroutine()
	base := &http.Transport{}
	tr := &Transport{Base: base, Hedging: &Hedging{Delay: 2 * time.Millisecond, MaxAttempts: 3}}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 10 {
				id := strconv.Itoa(g*100 + i)
				req := must(http.NewRequest("PUT", srv.URL+"/?i="+id, strings.NewReader(id)))
				body, _, _, err := roundTripTimed(t, tr, req)
				if body != id || err != nil {
					t.Errorf("%q, %v; want %s", body, err, id)
				}
			}
		})
	}
	wg.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for {
		base.CloseIdleConnections()
		if runtime.NumGoroutine() <= before || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := runtime.NumGoroutine(); got > before {
		t.Errorf("%d goroutines; want at most the %d before", got, before)
	}
}

// hedgeAllocs is what a request whose first copy wins before the delay
// allocates beyond the same request through a Transport without Hedging,
// by base: the call's channel and delay timer; the first copy's own
// context (context.WithCancelCause: the context and its cancel func), the
// request bound to it (Request.WithContext), and what ends that context
// when the winner's body is closed; on loopback, also net/http's: that
// context's Done channel and the map of its children, where net/http keeps
// its own context for the request. The goal, none, would need the first
// copy sent on the request's own context, which a winning hedge could not
// cancel, and a channel and timer shared between calls, which synctest
// forbids across bubbles.
var hedgeAllocs = map[string]float64{"in process": 6, "loopback": 9}

// firstCopyBases returns the bases of the allocation count and benchmark,
// by name: one in process that allocates nothing, and a loopback server's
// client transport; and a GET to that server.
func firstCopyBases(tb testing.TB) ([]string, map[string]http.RoundTripper, *http.Request) {
	fixed := &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Header: http.Header{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hi") }))
	tb.Cleanup(srv.Close)
	return []string{"in process", "loopback"}, map[string]http.RoundTripper{
		"in process": roundTripperFunc(func(*http.Request) (*http.Response, error) {
			fixed.Body = http.NoBody // the Transport wraps the Body of the response it returns
			return fixed, nil
		}),
		"loopback": srv.Client().Transport,
	}, must(http.NewRequest("GET", srv.URL, nil))
}

// firstCopy sends req through rt, reads and closes the body.
func firstCopy(tb testing.TB, rt http.RoundTripper, req *http.Request) {
	resp, err := rt.RoundTrip(req)
	if err != nil {
		tb.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// TestHedgeFirstCopyAllocs: a request whose first copy wins before the
// delay allocates at most hedgeAllocs more times than through a Transport
// without Hedging.
func TestHedgeFirstCopyAllocs(t *testing.T) {
	if race.Enabled {
		t.Skip("allocation counts differ under the race detector")
	}
	names, bases, req := firstCopyBases(t)
	for _, name := range names {
		base := bases[name]
		allocs := func(rt http.RoundTripper) float64 {
			return testing.AllocsPerRun(200, func() { firstCopy(t, rt, req) })
		}
		without, with := allocs(&Transport{Base: base}), allocs(&Transport{Base: base, Hedging: &Hedging{Delay: time.Hour}})
		t.Logf("%s: %v allocations without Hedging, %v with", name, without, with)
		if with > without+hedgeAllocs[name] {
			t.Errorf("%s: %v allocations with Hedging, %v without; want at most %v more", name, with, without, hedgeAllocs[name])
		}
	}
}

// BenchmarkHedgeFirstCopy: a request whose first copy wins before the
// delay, through a Transport with and without Hedging (-benchmem).
func BenchmarkHedgeFirstCopy(b *testing.B) {
	names, bases, req := firstCopyBases(b)
	for _, name := range names {
		for _, h := range []*Hedging{nil, {Delay: time.Hour}} {
			b.Run(fmt.Sprintf("base=%s/hedging=%v", name, h != nil), func(b *testing.B) {
				tr := &Transport{Base: bases[name], Hedging: h}
				b.ReportAllocs()
				for b.Loop() {
					firstCopy(b, tr, req)
				}
			})
		}
	}
}

// TestHedgingInvalid: an invalid Hedging makes every RoundTrip return a
// *backoff.ParamError that names it.
func TestHedgingInvalid(t *testing.T) {
	for _, h := range []Hedging{{Delay: -1}, {Delay: 1, MaxAttempts: 1}, {Delay: 1, MaxAttempts: 6}, {MaxAttempts: -2}} {
		tr := &Transport{Base: roundTripperFunc(func(*http.Request) (*http.Response, error) { panic("sent") }), Hedging: &h}
		_, err := tr.RoundTrip(must(http.NewRequest("GET", "http://example.test/", nil)))
		var pe *backoff.ParamError
		if !errors.As(err, &pe) || !strings.HasPrefix(pe.Param, "Transport.Hedging.") {
			t.Errorf("%+v: %v; want a ParamError for a Hedging field", h, err)
		}
	}
}

// TestHedgeAdaptive: with a zero Delay, no copy is sent on time before the
// Adaptive delay has its samples (a Transport's own needs 100); then a
// copy is sent after the quantile of the first copies' latencies.
func TestHedgeAdaptive(t *testing.T) {
	var n atomic.Int32
	var firstTakes atomic.Int64
	firstTakes.Store(int64(50 * time.Millisecond))
	first := func(w http.ResponseWriter, r *http.Request) {
		after(time.Duration(firstTakes.Load()), ok("first"), nil)(w, r)
	}
	inBubble(t, byCopy(&n, first, ok("hedge")), func(t *testing.T, base *http.Transport) {
		body, _, elapsed, err := roundTripTimed(t, &Transport{Base: base, Hedging: &Hedging{}}, pipeGet(t))
		if body != "first" || err != nil || elapsed != 50*time.Millisecond || n.Load() != 1 {
			t.Errorf("%q, %v after %v and %d copies; want first after 50ms and 1", body, err, elapsed, n.Load())
		}
		d := must(hedge.NewDelay(hedge.Config{MinSamples: 1}))
		tr := &Transport{Base: base, Hedging: &Hedging{Adaptive: d}}
		n.Store(0)
		roundTripTimed(t, tr, pipeGet(t)) // observes 50ms
		n.Store(0)
		firstTakes.Store(int64(time.Second))
		body, _, elapsed, err = roundTripTimed(t, tr, pipeGet(t))
		if want, ok := d.Hedge(); body != "hedge" || err != nil || elapsed != want || !ok || want < 50*time.Millisecond || n.Load() != 2 {
			t.Errorf("%q, %v after %v and %d copies; want hedge after %v (about 50ms) and 2", body, err, elapsed, n.Load(), want)
		}
	})
}

// TestHedgeEnds: how a hedged RoundTrip ends without a winner.
func TestHedgeEnds(t *testing.T) {
	boom := errors.New("boom")
	t.Run("the context ends", func(t *testing.T) {
		var n atomic.Int32
		inBubble(t, byCopy(&n, hang), func(t *testing.T, base *http.Transport) {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Millisecond)
			defer cancel()
			tr := &Transport{Base: base, Hedging: &Hedging{Delay: 10 * time.Millisecond, MaxAttempts: 3}}
			_, _, elapsed, err := roundTripTimed(t, tr, pipeGet(t).WithContext(ctx))
			var e *backoff.Error
			if !errors.As(err, &e) || e.Reason != context.DeadlineExceeded || elapsed != 15*time.Millisecond || n.Load() != 2 {
				t.Errorf("%v after %v and %d copies; want the deadline after 15ms and 2", err, elapsed, n.Load())
			}
		})
	})
	t.Run("the context ended before", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		var h hooks
		body := &closeRecorder{Reader: strings.NewReader("x")}
		req := must(http.NewRequestWithContext(ctx, "PUT", "http://example.test/", body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("x")), nil }
		tr := &Transport{Base: roundTripperFunc(func(*http.Request) (*http.Response, error) { panic("sent") }), Retrier: h.retrier(), Hedging: &Hedging{Delay: time.Hour}}
		_, _, _, err := roundTripTimed(t, tr, req)
		if !errors.Is(err, context.Canceled) || h.done != 0 || !body.closed {
			t.Errorf("%v, OnDone %d, body closed %v; want canceled, 0 attempts, the body closed", err, h.done, body.closed)
		}
	})
	t.Run("an error not to retry", func(t *testing.T) {
		tr := &Transport{Base: roundTripperFunc(func(*http.Request) (*http.Response, error) { return nil, boom }),
			ShouldRetry: func(*http.Response, error) bool { return false }, Hedging: &Hedging{Delay: time.Hour}}
		_, _, _, err := roundTripTimed(t, tr, must(http.NewRequest("GET", "http://example.test/", nil)))
		if !errors.Is(err, boom) || !errors.Is(err, backoff.ErrPermanent) {
			t.Errorf("%v; want boom, permanent", err)
		}
	})
	t.Run("no response and no error", func(t *testing.T) {
		tr := &Transport{Base: roundTripperFunc(func(*http.Request) (*http.Response, error) { return nil, nil }), Hedging: &Hedging{Delay: time.Hour}}
		_, _, _, err := roundTripTimed(t, tr, must(http.NewRequest("GET", "http://example.test/", nil)))
		if !errors.Is(err, errNilResponse) || !errors.Is(err, backoff.ErrPermanent) {
			t.Errorf("%v; want errNilResponse, permanent", err)
		}
	})
	t.Run("Base panics", func(t *testing.T) {
		tr := &Transport{Base: roundTripperFunc(func(*http.Request) (*http.Response, error) { panic("base") }), Hedging: &Hedging{Delay: time.Hour}}
		defer func() {
			if p := recover(); p != "base" {
				t.Errorf("recovered %v; want Base's panic", p)
			}
		}()
		tr.RoundTrip(must(http.NewRequest("GET", "http://example.test/", nil)))
	})
	t.Run("MaxElapsed", func(t *testing.T) {
		var n atomic.Int32
		inBubble(t, byCopy(&n, after(20*time.Millisecond, status(503), nil)), func(t *testing.T, base *http.Transport) {
			tr := &Transport{Base: base, Retrier: &backoff.Retrier{Policy: minute, MaxElapsed: 5 * time.Millisecond}, Hedging: &Hedging{Delay: 10 * time.Millisecond}}
			_, resp, _, err := roundTripTimed(t, tr, pipeGet(t))
			var e *backoff.Error
			if err != nil || !errors.As(CheckResponse(resp), &e) || e.Reason != backoff.ErrDeadline || n.Load() != 1 {
				t.Errorf("%v, %v, %d copies; want the 503 given up on at the deadline after 1", err, CheckResponse(resp), n.Load())
			}
		})
	})
	for name, first := range map[string]fault{"after a 503": status(503), "after an error": resetMidResponse, "while a copy runs": after(50*time.Millisecond, ok("first"), nil)} {
		t.Run("GetBody fails "+name, func(t *testing.T) {
			var n atomic.Int32
			inBubble(t, byCopy(&n, first), func(t *testing.T, base *http.Transport) {
				req := must(http.NewRequest("PUT", "http://pipe/", strings.NewReader("body")))
				req.GetBody = func() (io.ReadCloser, error) { return nil, boom }
				tr := &Transport{Base: base, Hedging: &Hedging{Delay: 10 * time.Millisecond}}
				body, resp, _, err := roundTripTimed(t, tr, req)
				switch {
				case n.Load() != 1:
					t.Errorf("%d copies; want 1", n.Load())
				case resp != nil && resp.StatusCode == 503:
					if !errors.Is(CheckResponse(resp), boom) && !errors.Is(CheckResponse(resp), backoff.ErrPermanent) {
						t.Errorf("%v; want a give-up, permanent", CheckResponse(resp))
					}
				case body == "first":
				case !errors.Is(err, boom):
					t.Errorf("%q, %v; want first or an error that is boom", body, err)
				}
			})
		})
	}
}

// TestHedgeAttemptTimeout: each copy has its own AttemptTimeout; the
// winner's context, and a give-up's, live until its body is closed.
func TestHedgeAttemptTimeout(t *testing.T) {
	var n atomic.Int32
	inBubble(t, byCopy(&n, after(time.Second, ok("slow"), nil), ok("fast")), func(t *testing.T, base *http.Transport) {
		a := &attempts{counter: counter{base: base}}
		tr := &Transport{Base: a, AttemptTimeout: 50 * time.Millisecond, Hedging: &Hedging{Delay: 10 * time.Millisecond}}
		resp := must(tr.RoundTrip(pipeGet(t)))
		time.Sleep(time.Second)
		if err := a.ctxs[1].Err(); err != nil {
			t.Errorf("the winner's context ended before its body was closed: %v", err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "fast" || err != nil || a.ctxs[1].Err() == nil || a.ctxs[0].Err() == nil {
			t.Errorf("%q, %v, contexts %v %v; want fast, both contexts ended", b, err, a.ctxs[0].Err(), a.ctxs[1].Err())
		}
	})
	inBubble(t, byCopy(&n, status(503)), func(t *testing.T, base *http.Transport) {
		a := &attempts{counter: counter{base: base}}
		tr := &Transport{Base: a, AttemptTimeout: 50 * time.Millisecond, Hedging: &Hedging{Delay: 10 * time.Millisecond}}
		resp := must(tr.RoundTrip(pipeGet(t)))
		time.Sleep(time.Second)
		if resp.StatusCode != 503 || a.ctxs[1].Err() != nil {
			t.Errorf("%v, %v; want the 503, its context alive", resp.Status, a.ctxs[1].Err())
		}
		resp.Body.Close()
		if a.ctxs[1].Err() == nil {
			t.Error("the give-up's context lives on after its body is closed")
		}
	})
}

// TestHedgeOnWin: on a loopback server, OnWin hears once of the winner of
// a request that sent more than one copy, and not of one that sent one.
func TestHedgeOnWin(t *testing.T) {
	for _, c := range []struct {
		name   string
		faults []fault
		want   []int
	}{
		{"first in time", []fault{ok("1")}, nil},
		{"hedge wins", []fault{hang, ok("2")}, []int{2}},
		{"first wins after the hedge", []fault{after(50*time.Millisecond, ok("1"), nil), hang}, []int{1}},
		{"after a 503", []fault{status(503), ok("2")}, []int{2}},
		{"no winner", []fault{status(503)}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var n atomic.Int32
			srv := httptest.NewServer(byCopy(&n, c.faults...))
			defer srv.Close()
			var mu sync.Mutex
			var wins []int
			onWin := func(ctx context.Context, copy int) {
				mu.Lock()
				defer mu.Unlock()
				wins = append(wins, copy)
			}
			tr := &Transport{Base: &http.Transport{}, Hedging: &Hedging{Delay: 10 * time.Millisecond, OnWin: onWin}}
			defer tr.CloseIdleConnections()
			body, _, _, err := roundTripTimed(t, tr, must(http.NewRequest("GET", srv.URL, nil)))
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(wins) != fmt.Sprint(c.want) {
				t.Errorf("OnWin heard %v (body %q); want %v", wins, body, c.want)
			}
		})
	}
}
