package backoffhttp

// Hedging under stress: many requests, sequential and concurrent, in and
// across synctest bubbles, whose copies answer at the very instant the
// delay's timer fires, against Hedging's documentation taken literally.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
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
	"github.com/backoffgo/backoff/throttle"
)

// stressDelay is the hedging delay of the stress tests in a bubble, and
// stressRealDelay in real time; copies answer at multiples of it, when the
// timer fires.
const (
	stressDelay     = 10 * time.Millisecond
	stressRealDelay = 100 * time.Microsecond
)

// stressOutcome is what one copy answers.
type stressOutcome int

const (
	answerOK stressOutcome = iota
	answer503
	answerRetryAfter // a 503 with Retry-After: 0
	answerDontRetry  // a 503 with DontRetryHeader
	answerRetryErr   // an error to retry
	answerFatalErr   // an error not to retry
	answerHang       // no answer until cancelled
	answerPanic      // Base panics (in bubbles with panics)
	answerPanicJudge // a 503 at which ShouldRetry panics (idem)
	numOutcomes
)

var (
	errStressRetry = errors.New("stress: retry me")
	errStressFatal = errors.New("stress: fatal")
)

// stressStep is the plan of one copy: its answer after wait.
type stressStep struct {
	wait time.Duration
	out  stressOutcome
}

// stressCopy is what Base saw of one copy.
type stressCopy struct {
	n        int // its AttemptCountHeader, 1 without
	sent     time.Time
	answered time.Time // when Base returned; zero while it runs
	out      stressOutcome
	ctx      context.Context
	body     string
	answer   *countedBody // nil for an error
}

// stressReq is one request's plan and what happened to it.
type stressReq struct {
	id      string
	plan    []stressStep
	getBody atomic.Int32

	mu     sync.Mutex
	copies []*stressCopy
	wins   []int
	done   int

	panicOnRetry, panicOnWin bool // the hooks panic, once they heard
	// retries: what OnRetry heard, "n:ErrHedgeDelay" or "n:failure".
	retries []string
}

// stressBase answers the copies of the requests in reqs by their plans.
func stressBase(reqs *sync.Map) roundTripperFunc {
	return func(r *http.Request) (*http.Response, error) {
		v, _ := reqs.Load(r.URL.Query().Get("id"))
		sr := v.(*stressReq)
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		c := &stressCopy{n: Attempt(r), sent: time.Now(), ctx: r.Context(), body: string(b), out: answerHang}
		sr.mu.Lock()
		sr.copies = append(sr.copies, c) // in the order they reach Base
		step := sr.plan[min(c.n, len(sr.plan))-1]
		sr.mu.Unlock()
		finish := func() {
			sr.mu.Lock()
			c.answered = time.Now()
			sr.mu.Unlock()
		}
		defer finish()
		if step.out == answerHang {
			<-r.Context().Done()
			return nil, context.Cause(r.Context())
		}
		timer := time.NewTimer(step.wait)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-r.Context().Done():
			return nil, context.Cause(r.Context())
		}
		sr.mu.Lock()
		c.out = step.out
		sr.mu.Unlock()
		resp := &http.Response{StatusCode: 503, Status: "503 Service Unavailable", Header: http.Header{}, Request: r}
		switch step.out {
		case answerOK:
			resp.StatusCode, resp.Status = 200, "200 OK"
		case answerRetryAfter:
			resp.Header.Set("Retry-After", "0")
		case answerDontRetry:
			resp.Header.Set(DontRetryHeader, "true")
		case answerRetryErr:
			return nil, errStressRetry
		case answerFatalErr:
			return nil, errStressFatal
		case answerPanic:
			panic("stress")
		case answerPanicJudge:
			resp.Header.Set("X-Stress-Panic", "true")
		}
		body := &countedBody{ReadCloser: io.NopCloser(strings.NewReader(fmt.Sprintf("%s/%d", sr.id, c.n)))}
		sr.mu.Lock()
		c.answer = body
		sr.mu.Unlock()
		resp.Body = body
		return resp, nil
	}
}

// stressTransport is a hedging Transport over base whose hooks record
// into the request's stressReq, found in reqs by the context's value.
func stressTransport(base http.RoundTripper, h *Hedging) *Transport {
	from := func(ctx context.Context) *stressReq { return ctx.Value(stressKey{}).(*stressReq) }
	h.OnWin = func(ctx context.Context, copy int) {
		sr := from(ctx)
		sr.mu.Lock()
		defer sr.mu.Unlock()
		sr.wins = append(sr.wins, copy)
		if sr.panicOnWin {
			panic("stress")
		}
	}
	return &Transport{Base: base, Hedging: h,
		Retrier: &backoff.Retrier{Policy: minute, OnRetry: func(ctx context.Context, attempt int, err error, delay time.Duration) {
			sr := from(ctx)
			heard := fmt.Sprint(attempt, ":failure")
			switch {
			case err == ErrHedgeDelay && (delay == h.Delay || h.Delay == 0 && delay >= 0):
				heard = fmt.Sprint(attempt, ":ErrHedgeDelay")
			case err == ErrHedgeDelay || delay != 0 || err == nil:
				heard = fmt.Sprint(attempt, ": ", err, " after ", delay)
			}
			sr.mu.Lock()
			defer sr.mu.Unlock()
			sr.retries = append(sr.retries, heard)
			if sr.panicOnRetry {
				panic("stress")
			}
		}, OnDone: func(ctx context.Context, attempts int, _ error) {
			sr := from(ctx)
			sr.mu.Lock()
			defer sr.mu.Unlock()
			sr.done = attempts
		}},
		ShouldRetry: func(resp *http.Response, err error) bool {
			if resp != nil {
				if resp.Header.Get("X-Stress-Panic") != "" {
					panic("stress")
				}
				return resp.StatusCode == 503
			}
			return errors.Is(err, errStressRetry) || errors.Is(err, context.DeadlineExceeded) // AttemptTimeout's
		},
	}
}

type stressKey struct{}

// stressPlan draws the plan of a request: per copy, an answer after 0 to
// 3 delays, mostly exactly at a multiple of the delay; with panics, Base
// or ShouldRetry may panic, OnRetry or OnWin too (set in sr).
func stressPlan(rng *rand.Rand, most int, delay time.Duration, panics bool, sr *stressReq) {
	outcomes := answerPanic
	if panics {
		outcomes = numOutcomes
		sr.panicOnRetry, sr.panicOnWin = rng.IntN(6) == 0, rng.IntN(6) == 0
	}
	sr.plan = make([]stressStep, most)
	for i := range sr.plan {
		wait := time.Duration(rng.IntN(4)) * delay
		if rng.IntN(4) == 0 {
			wait += time.Duration(rng.IntN(3)-1) * time.Microsecond
		}
		sr.plan[i] = stressStep{wait: max(wait, 0), out: stressOutcome(rng.IntN(int(outcomes)))}
	}
}

// stressOne sends the request sr through tr and checks what Hedging's
// documentation promises of it; in a bubble, also that no copy is sent
// after one that stops copies answered (in real time, Base's clock runs
// ahead of the Transport's).
func stressOne(t *testing.T, tr *Transport, reqs *sync.Map, sr *stressReq, most int, inBubble bool) {
	t.Helper()
	reqs.Store(sr.id, sr)
	defer reqs.Delete(sr.id)
	timeout := time.Second
	if !inBubble {
		timeout = 200 * stressRealDelay
	}
	ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), stressKey{}, sr), timeout)
	defer cancel() // ends a request whose copies all hang
	req := must(http.NewRequestWithContext(ctx,
		"PUT", "http://stress.test/?id="+sr.id, strings.NewReader(sr.id)))
	req.GetBody = func() (io.ReadCloser, error) {
		sr.getBody.Add(1)
		return io.NopCloser(strings.NewReader(sr.id)), nil
	}
	var resp *http.Response
	var err error
	panicked := func() (p any) {
		defer func() { p = recover() }()
		resp, err = tr.RoundTrip(req)
		return nil
	}()
	if panicked != nil && panicked != "stress" {
		panic(panicked)
	}
	returned := time.Now()
	sr.mu.Lock()
	var copies []stressCopy // as they were when RoundTrip returned
	for _, c := range sr.copies {
		copies = append(copies, *c)
	}
	sr.mu.Unlock()
	slices.SortFunc(copies, func(a, b stressCopy) int { return a.n - b.n })
	fail := func(format string, args ...any) {
		t.Helper()
		var plan []string
		for _, s := range sr.plan {
			plan = append(plan, fmt.Sprintf("%v@%v", s.out, s.wait))
		}
		var seen []string
		for _, c := range copies {
			seen = append(seen, fmt.Sprintf("#%d sent %v answered %v", c.n, c.sent.Sub(copies[0].sent), c.answered.Sub(copies[0].sent)))
		}
		t.Errorf("request %s, plan %v, copies %v: %s", sr.id, plan, seen, fmt.Sprintf(format, args...))
	}
	// A copy that stops copies (Retry-After, DontRetryHeader, an error not
	// to retry) is followed by none sent after it answered.
	for _, c := range copies {
		if !inBubble || c.answered.IsZero() || c.answered.After(returned) {
			continue
		}
		if panicked == nil && c.out == answerFatalErr && returned.After(c.answered) {
			fail("RoundTrip returned %v after copy %d's %v, which ends every copy", returned.Sub(c.answered), c.n, c.out)
		}
		if c.out == answerRetryAfter || c.out == answerDontRetry || c.out == answerFatalErr {
			for _, d := range copies {
				if d.sent.After(c.answered) {
					fail("copy %d sent after copy %d's %v", d.n, c.n, c.out)
				}
			}
		}
	}
	winner := 0
	if panicked == nil && err == nil {
		b, rerr := io.ReadAll(resp.Body)
		if rerr != nil {
			fail("reading the body: %v", rerr)
		}
		_, e := fmt.Sscanf(strings.TrimPrefix(string(b), sr.id+"/"), "%d", &winner)
		i := slices.IndexFunc(copies, func(c stressCopy) bool { return c.n == winner })
		switch {
		case e != nil || i < 0:
			fail("body %q: not one of this request's copies", b)
		case resp.StatusCode == 200:
			// The winner's context lives until its body is closed.
			if ctxErr := copies[i].ctx.Err(); ctxErr != nil && ctx.Err() == nil {
				fail("the winner's context ended before its body was closed: %v", ctxErr)
			}
			if copies[i].out != answerOK {
				fail("copy %d won with %v", winner, copies[i].out)
			}
		}
		resp.Body.Close()
	}
	// No copy wins: every copy that answered before RoundTrip returned
	// failed, unless an error not to retry, or the context, ended them.
	if panicked == nil && (err != nil || resp.StatusCode != 200) {
		var e *backoff.Error
		permanent := errors.As(err, &e) && (e.Reason == backoff.ErrPermanent || e.Reason == ctx.Err())
		for _, c := range copies {
			if !permanent && c.out == answerOK && !c.answered.IsZero() && !c.answered.After(returned) {
				fail("copy %d answered 200 before RoundTrip returned %v, %v", c.n, resp, err)
			}
		}
	}
	// Once the body is closed: every copy's context ended, every response
	// drained and closed exactly once (within drainTimeout).
	settled := func() bool {
		sr.mu.Lock()
		defer sr.mu.Unlock()
		copies = copies[:0] // a copy sent as RoundTrip returned may reach Base after
		for _, c := range sr.copies {
			copies = append(copies, *c)
			if c.ctx.Err() == nil || c.answer != nil && c.answer.closes.Load() == 0 {
				return false
			}
		}
		return len(copies) == sr.done
	}
	if inBubble {
		time.Sleep(drainTimeout + time.Second) // fake time: all else ran
		settled()
	} else {
		for deadline := time.Now().Add(drainTimeout + time.Second); !settled() && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
	}
	sr.mu.Lock()
	slices.SortFunc(copies, func(a, b stressCopy) int { return a.n - b.n })
	wins, done, retries := append([]int(nil), sr.wins...), sr.done, append([]string(nil), sr.retries...)
	sr.mu.Unlock()
	// OnRetry: before each copy after the first, with the copies sent;
	// once more when the context ended, or the Throttle refused, the copy
	// it announced.
	// (A panic of OnRetry, too.)
	// (The deadline by the clock, as the Retrier reads it, perhaps before
	// the context's timer ran.)
	deadline, _ := ctx.Deadline()
	if len(retries) != len(copies)-1 && (len(retries) != len(copies) || returned.Before(deadline) && tr.Throttle == nil && panicked == nil) {
		fail("OnRetry heard %v for %d copies (RoundTrip: %v, %v; context %v)", retries, len(copies), resp, err, ctx.Err())
	}
	for i, r := range retries {
		if !strings.HasPrefix(r, fmt.Sprint(i+1, ":")) || strings.Contains(r, ": ") {
			fail("OnRetry heard %v; want 1, 2... each ErrHedgeDelay after the delay, or a failure after 0", retries)
			break
		}
	}
	// Copies: at most MaxAttempts, numbered in order, each after the first
	// with a body from GetBody and its AttemptCountHeader.
	if len(copies) == 0 && !errors.Is(err, context.DeadlineExceeded) || len(copies) > most { // none when the context ended first
		fail("%d copies; want 1 to %d", len(copies), most)
	}
	for i, c := range copies {
		if c.n != i+1 || c.body != sr.id {
			fail("copy %d: Attempt %d, body %q; want %d, %q", i+1, c.n, c.body, i+1, sr.id)
		}
	}
	if got := int(sr.getBody.Load()); got != max(len(copies)-1, 0) {
		fail("GetBody called %d times for %d copies", got, len(copies))
	}
	if panicked == nil && done != len(copies) {
		fail("OnDone heard %d attempts; %d copies were sent", done, len(copies))
	}
	wantWins := "[]"
	if panicked == nil && err == nil && resp.StatusCode == 200 && len(copies) > 1 {
		wantWins = fmt.Sprint([]int{winner})
	}
	if panicked == nil && fmt.Sprint(wins) != wantWins {
		fail("OnWin heard %v; want %s (status %v, err %v)", wins, wantWins, resp, err)
	}
	for _, c := range copies {
		if c.ctx.Err() == nil {
			fail("copy %d's context lives on", c.n)
		}
		if c.answer != nil {
			if n := c.answer.closes.Load(); n != 1 {
				fail("copy %d's body closed %d times", c.n, n)
			}
		}
	}
}

// TestHedgeStress: many requests with random plans, whose copies answer
// mostly at the instant the delay's timer fires, sequential then
// concurrent, in many bubbles (the pool serves them all), with a fixed
// delay and the adaptive one, with and without AttemptTimeout and a
// Throttle; every promise of Hedging checked on each,
// and synctest.Test fails if any goroutine is left.
func TestHedgeStress(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 1))
	for bubble := range 40 {
		adaptive, panics := bubble%2 == 1, bubble%7 >= 5
		most := 2 + bubble%4
		seed := rng.Uint64()
		t.Run(fmt.Sprintf("bubble=%d/adaptive=%v/MaxAttempts=%d/AttemptTimeout=%v/Throttle=%v/panics=%v", bubble, adaptive, most, bubble%3 == 2, bubble%5 == 4, panics), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 2))
				var reqs sync.Map
				h := &Hedging{Delay: stressDelay, MaxAttempts: most}
				if adaptive {
					h.Delay, h.Adaptive = 0, must(hedge.NewDelay(hedge.Config{MinSamples: 1}))
				}
				tr := stressTransport(stressBase(&reqs), h)
				if bubble%3 == 2 {
					tr.AttemptTimeout = 5 * stressDelay / 2
				}
				if bubble%5 == 4 {
					tr.Throttle = must(throttle.New(throttle.Config{K: 1}, backoff.RuntimeRng{}))
				}
				id := 0
				next := func() *stressReq {
					id++
					sr := &stressReq{id: fmt.Sprint(bubble, "-", id)}
					stressPlan(rng, most, stressDelay, panics, sr)
					return sr
				}
				for range 20 {
					stressOne(t, tr, &reqs, next(), most, true)
				}
				var wg sync.WaitGroup
				for range 4 {
					batch := []*stressReq{next(), next(), next(), next(), next()}
					wg.Go(func() {
						for _, sr := range batch {
							stressOne(t, tr, &reqs, sr, most, true)
						}
					})
				}
				wg.Wait()
			})
		})
	}
}

// TestHedgeStressRealTime: TestHedgeStress's checks in real time, where
// the delay's AfterFunc and the copies run in parallel: 8 goroutines of 40
// requests each, a delay of 100µs; then no goroutine is left.
func TestHedgeStressRealTime(t *testing.T) {
	before := runtime.NumGoroutine()
	for _, adaptive := range []bool{false, true} {
		t.Run(fmt.Sprintf("adaptive=%v", adaptive), func(t *testing.T) {
			var reqs sync.Map
			h := &Hedging{Delay: stressRealDelay, MaxAttempts: 3}
			if adaptive {
				h.Delay, h.Adaptive = 0, must(hedge.NewDelay(hedge.Config{MinSamples: 1}))
			}
			tr := stressTransport(stressBase(&reqs), h)
			var wg sync.WaitGroup
			for g := range 8 {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(g), 3))
					for i := range 40 {
						sr := &stressReq{id: fmt.Sprint(g, "-", i)}
						stressPlan(rng, 3, stressRealDelay, false, sr)
						stressOne(t, tr, &reqs, sr, 3, false)
					}
				})
			}
			wg.Wait()
		})
	}
	goroutinesBackTo(t, before, func() {})
}

// goroutinesBackTo reports an error unless, within 5 s of calling
// closeIdle every 10 ms, there are at most before goroutines.
func goroutinesBackTo(t *testing.T, before int, closeIdle func()) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for closeIdle(); runtime.NumGoroutine() > before && time.Now().Before(deadline); closeIdle() {
		time.Sleep(10 * time.Millisecond)
	}
	if got := runtime.NumGoroutine(); got > before {
		t.Errorf("%d goroutines; want at most the %d before", got, before)
	}
}

func (o stressOutcome) String() string {
	return [...]string{"200", "503", "503+Retry-After", "503+DontRetry", "retry-error", "fatal-error", "hang", "Base-panics", "ShouldRetry-panics"}[o]
}

// TestHedgeWinnerBodyUnderLoserCancels: over real sockets, HTTP/1.1 and
// HTTP/2 (where the copies share a connection), many concurrent requests
// whose copies all stream the same 64 KiB body, at once or after about the
// delay, so that copies win, lose and are cancelled while the winner's
// body is read: every body read is whole and the request's own; then no
// goroutine is left.
func TestHedgeWinnerBodyUnderLoserCancels(t *testing.T) {
	const chunk, chunks = 1 << 10, 64
	for _, h2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("h2=%v", h2), func(t *testing.T) {
			srv := startServer(t, h2, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				id := r.URL.Query().Get("id")
				if (Attempt(r)+len(id))%2 == 1 {
					time.Sleep(time.Duration(len(id)%3) * time.Millisecond)
				}
				w.Header().Set("Content-Length", fmt.Sprint(chunk*chunks))
				for i := range chunks {
					if _, err := io.WriteString(w, strings.Repeat(id[i%len(id):i%len(id)+1], chunk)); err != nil {
						return
					}
					if i%8 == 0 {
						w.(http.Flusher).Flush()
					}
				}
			}))
			base := srv.Client().Transport.(*http.Transport)
			before := runtime.NumGoroutine()
			var hedgeWins atomic.Int32
			tr := &Transport{Base: base, Hedging: &Hedging{Delay: time.Millisecond, MaxAttempts: 3,
				OnWin: func(_ context.Context, copy int) {
					if copy > 1 {
						hedgeWins.Add(1)
					}
				}}}
			var wg sync.WaitGroup
			for g := range 8 {
				wg.Go(func() {
					for i := range 25 {
						id := fmt.Sprintf("%d-%d-", g, i)
						req := must(http.NewRequest("PUT", srv.URL+"/?id="+id, strings.NewReader(id)))
						body, _, _, err := roundTripTimed(t, tr, req)
						if err != nil || len(body) != chunk*chunks {
							t.Errorf("%s: %d bytes, %v; want %d", id, len(body), err, chunk*chunks)
							continue
						}
						for c := range chunks {
							if want := strings.Repeat(id[c%len(id):c%len(id)+1], chunk); body[c*chunk:(c+1)*chunk] != want {
								t.Errorf("%s: chunk %d is not %q", id, c, want[:1])
								break
							}
						}
					}
				})
			}
			wg.Wait()
			if hedgeWins.Load() == 0 {
				t.Error("no hedge won: the test tested nothing")
			}
			t.Logf("%d of 200 requests won by a hedge", hedgeWins.Load())
			goroutinesBackTo(t, before, base.CloseIdleConnections)
		})
	}
}
