package backoffhttp

// Hedging at its edges: the checks it shares with the retry loop.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/hedge"
)

// TestHedgeCancelledAfterLastAnswerMatchesContext: the caller's context
// ends as the last copy's 503 comes in. The retry loop then stops on the
// context (Transport: "If the request's context has ended by then, that
// response is drained and closed and RoundTrip returns the error", the
// loop's error matching context.Canceled); the hedged RoundTrip returns a
// *backoff.Error whose reason is ErrExhausted and that does not match
// context.Canceled, so a caller that checks errors.Is(err,
// context.Canceled) takes its own cancellation for a server failure.
func TestHedgeCancelledAfterLastAnswerMatchesContext(t *testing.T) {
	for _, hedged := range []bool{false, true} {
		t.Run(fmt.Sprintf("hedged=%v", hedged), func(t *testing.T) {
			var n atomic.Int32
			inBubble(t, playFaults(&n, status(503)), func(t *testing.T, base *http.Transport) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				a := &attempts{counter: counter{base: base}, afterAttempt: 2, then: cancel}
				zero := backoff.PolicyFunc(func(int, error) (time.Duration, error) { return 0, nil })
				tr := &Transport{Base: a, Retrier: &backoff.Retrier{Policy: zero}}
				if hedged {
					tr.Hedging = &Hedging{Delay: time.Hour, MaxAttempts: 2}
				}
				_, _, _, err := roundTripTimed(t, tr, pipeGet(t).WithContext(ctx))
				if !errors.Is(err, context.Canceled) {
					t.Errorf("RoundTrip = %v; want an error matching context.Canceled, as the loop's", err)
				}
				a.check(t, 2)
			})
		})
	}
}

// TestHedgeNoCopyAfterContextEnds: once the caller's context has ended, no
// further copy is sent, OnRetry is not called and the Budget is not drawn
// on, as the loop's Retrier checks the context before each retry. The
// hedged RoundTrip, on a 503 that came as the context ended, calls
// OnRetry, withdraws from the Budget and hands a second copy to Base with
// a dead context.
func TestHedgeNoCopyAfterContextEnds(t *testing.T) {
	var n atomic.Int32
	inBubble(t, playFaults(&n, status(503)), func(t *testing.T, base *http.Transport) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		a := &attempts{counter: counter{base: base}, afterAttempt: 1, then: cancel}
		var h hooks
		r := h.retrier()
		r.Budget = must(backoff.NewBudget(backoff.BudgetConfig{Burst: 10, Reserve: 0.001}))
		tr := &Transport{Base: a, Retrier: r, Hedging: &Hedging{Delay: time.Hour, MaxAttempts: 3}}
		before := r.Budget.Available()
		_, _, _, err := roundTripTimed(t, tr, pipeGet(t).WithContext(ctx))
		a.mu.Lock()
		sent := len(a.ctxs)
		a.mu.Unlock()
		if !errors.Is(err, context.Canceled) || sent != 1 || len(h.errs) != 0 || r.Budget.Available() != before {
			t.Errorf("%v; %d copies handed to Base, OnRetry heard %v, budget %v → %v; want canceled after 1 copy, no OnRetry, the budget untouched",
				err, sent, h.errs, before, r.Budget.Available())
		}
	})
}

// TestHedgeOnRetryPanicRefundsBudget: the Retrier returns to the Budget
// the retry it withdrew when OnRetry panics (Retrier.announce); the
// hedged RoundTrip, whose OnRetry is the Retrier's, keeps the withdrawal
// of a copy it never sent.
func TestHedgeOnRetryPanicRefundsBudget(t *testing.T) {
	for _, hedged := range []bool{false, true} {
		t.Run(fmt.Sprintf("hedged=%v", hedged), func(t *testing.T) {
			var n atomic.Int32
			inBubble(t, playFaults(&n, status(503)), func(t *testing.T, base *http.Transport) {
				b := must(backoff.NewBudget(backoff.BudgetConfig{Burst: 10, Reserve: 0.001}))
				r := &backoff.Retrier{Policy: minute, Budget: b,
					OnRetry: func(context.Context, int, error, time.Duration) { panic("hook") }}
				tr := &Transport{Base: base, Retrier: r}
				if hedged {
					tr.Hedging = &Hedging{Delay: time.Hour}
				}
				before := b.Available()
				func() {
					defer func() {
						if p := recover(); p != "hook" {
							t.Errorf("recovered %v; want OnRetry's panic", p)
						}
					}()
					tr.RoundTrip(pipeGet(t))
				}()
				if got := b.Available(); got != before {
					t.Errorf("budget %v → %v; want the withdrawal refunded, as the loop does", before, got)
				}
			})
		})
	}
}

// TestHedgingReadAtFirstRoundTrip: Transport.Hedging "is read at the
// first RoundTrip", where it is validated; its fields are read again at
// every RoundTrip, so a change made later to the *Hedging (here an invalid
// MaxAttempts, which the first RoundTrip would have refused) reaches the
// hedging loop unchecked and panics with an index out of range on
// Hedging's fixed array of 5 cancels.
func TestHedgingReadAtFirstRoundTrip(t *testing.T) {
	// A loopback server outside a bubble: the panic leaves a goroutine
	// (hedging.end's) waiting forever for a copy never started, which would
	// deadlock a bubble.
	var n atomic.Int32
	srv := startServer(t, false, playFaults(&n, status(503)))
	h := &Hedging{Delay: time.Hour, MaxAttempts: 2}
	tr := &Transport{Retrier: retrier(minute), Hedging: h}
	req := func() *http.Request { return must(http.NewRequest("GET", srv.URL, nil)) }
	roundTripTimed(t, tr, req())
	first := n.Swap(0)
	h.MaxAttempts = 9 // for another Transport, say; this one read its Hedging already
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Errorf("second RoundTrip panicked: %v", p)
			}
		}()
		roundTripTimed(t, tr, req())
	}()
	if n.Load() != first {
		t.Errorf("%d copies at the second RoundTrip, %d at the first; want the same: Hedging was read at the first", n.Load(), first)
	}
}

// TestHedgeStandsBackFromInnerLoopsError: under a Transport in Base that
// retried and gave up with an error, the retry loop stands back
// (ErrRetriedBelow: "a loop around stands back from it when it
// retried"), and hedging does so for a status that Transport gave up on;
// but for its error, hedging sends another copy, which the inner loop
// retries again: (R+1)·(H+1) attempts, which the hedging docs say never
// happens ("so they never multiply").
func TestHedgeStandsBackFromInnerLoopsError(t *testing.T) {
	for _, hedged := range []bool{false, true} {
		t.Run(fmt.Sprintf("hedged=%v", hedged), func(t *testing.T) {
			var n atomic.Int32
			inBubble(t, playFaults(&n, closeBeforeAnswer), func(t *testing.T, base *http.Transport) {
				base.DisableKeepAlives = true // no silent retry by net/http on a reused connection
				inner := &Transport{Base: base, Retrier: retrier(fast)}
				outer := &Transport{Base: inner, Retrier: retrier(fast)}
				if hedged {
					outer.Hedging = &Hedging{Delay: time.Hour, MaxAttempts: 2}
				}
				_, _, _, err := roundTripTimed(t, outer, pipeGet(t))
				if !errors.Is(err, backoff.ErrRetriedBelow) || n.Load() != 4 {
					t.Errorf("%v after %d attempts at the server; want ErrRetriedBelow after the inner loop's 4", err, n.Load())
				}
			})
		})
	}
}

// TestHedgeRetryAfterZeroStopsCopies: "A response that ... carries a
// Retry-After stops further copies" (Hedging; docs/http.md: "A response
// with ... a Retry-After stops further copies: the server is
// overloaded"). A 503 with Retry-After: 0 (or an HTTP-date already past)
// carries one, yet the next copy is sent at once.
func TestHedgeRetryAfterZeroStopsCopies(t *testing.T) {
	var n atomic.Int32
	inBubble(t, byCopy(&n, status(503, "Retry-After", "0"), ok("second")), func(t *testing.T, base *http.Transport) {
		tr := &Transport{Base: base, Retrier: retrier(minute), Hedging: &Hedging{Delay: time.Minute, MaxAttempts: 3}}
		_, resp, _, err := roundTripTimed(t, tr, pipeGet(t))
		if err != nil || resp.StatusCode != 503 || n.Load() != 1 {
			t.Errorf("%v, %v after %d copies; want the 503 given up on after 1", err, resp, n.Load())
		}
	})
}

// TestHedgeAttemptTimeoutRace: a response that arrives just as its
// AttemptTimeout runs out is kept (Transport.AttemptTimeout). The copy's
// goroutine then rewrites the attemptTimer's cancel field (hedge.go's
// send: res.timer.cancel = ...) while the timer's own goroutine reads it
// in expire: a data race, which `go test -race` reports.
func TestHedgeAttemptTimeoutRace(t *testing.T) {
	const d = 10 * time.Millisecond
	for range 50 {
		synctest.Test(t, func(t *testing.T) {
			base := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
				time.Sleep(d) // answers exactly as the attempt's time runs out
				return &http.Response{StatusCode: 200, Body: http.NoBody, Header: http.Header{}, Request: r}, nil
			})
			tr := &Transport{Base: base, AttemptTimeout: d, Hedging: &Hedging{Delay: time.Hour}}
			resp, err := tr.RoundTrip(must(http.NewRequest("GET", "http://example.test/", nil)))
			if err == nil {
				resp.Body.Close()
			}
		})
	}
}

// TestHedgeGiveUpReasonBelongsToItsResponse: when the copies stop for a
// response's own reason (here its Retry-After), that response is the one
// returned, not a later copy's; when they stop for a reason of no
// response's (no more copies), the last failure is returned.
func TestHedgeGiveUpReasonBelongsToItsResponse(t *testing.T) {
	cases := []struct {
		name   string
		faults []fault
		max    int
		reason error
		hint   string
	}{
		{"Retry-After", []fault{after(50*time.Millisecond, status(503), nil), status(503, "Retry-After", "0")}, 3, backoff.ErrHintTooLong, "0"},
		{"exhausted at the delay", []fault{status(503), after(50*time.Millisecond, status(503, "Retry-After", "x"), nil)}, 2, backoff.ErrExhausted, "x"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int32
			inBubble(t, byCopy(&n, tc.faults...), func(t *testing.T, base *http.Transport) {
				tr := &Transport{Base: base, Retrier: retrier(minute), Hedging: &Hedging{Delay: 10 * time.Millisecond, MaxAttempts: tc.max}}
				_, resp, _, err := roundTripTimed(t, tr, pipeGet(t))
				var e *backoff.Error
				if err != nil || !errors.As(CheckResponse(resp), &e) || e.Reason != tc.reason || resp.Header.Get("Retry-After") != tc.hint || n.Load() != 2 {
					t.Errorf("%v, %v after %d copies; want the response with Retry-After %q, given up on for %v after 2", err, CheckResponse(resp), n.Load(), tc.hint, tc.reason)
				}
			})
		})
	}
	if got := (&delayFired{}).Error(); got != ErrHedgeDelay.Error() {
		t.Errorf("delayFired says %q", got)
	}
}

// TestHedgeRunningCopyAfterStop: once no more copies may be sent, a copy
// still running ends the RoundTrip with the context when that ends, and
// with ErrPermanent when it fails with an error ShouldRetry would not
// retry.
func TestHedgeRunningCopyAfterStop(t *testing.T) {
	for _, cancelled := range []bool{false, true} {
		t.Run(fmt.Sprintf("cancelled=%v", cancelled), func(t *testing.T) {
			var n atomic.Int32
			inBubble(t, byCopy(&n, after(50*time.Millisecond, closeBeforeAnswer, nil), status(503)), func(t *testing.T, base *http.Transport) {
				base.DisableKeepAlives = true
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				want := backoff.ErrPermanent
				if cancelled {
					time.AfterFunc(20*time.Millisecond, cancel)
					want = context.Canceled
				}
				tr := &Transport{Base: base, Retrier: retrier(minute), Hedging: &Hedging{Delay: 10 * time.Millisecond},
					ShouldRetry: func(resp *http.Response, err error) bool { return resp != nil }}
				_, _, _, err := roundTripTimed(t, tr, pipeGet(t).WithContext(ctx))
				var e *backoff.Error
				if !errors.As(err, &e) || e.Reason != want || n.Load() != 2 {
					t.Errorf("%v after %d copies; want a give-up for %v after 2", err, n.Load(), want)
				}
			})
		})
	}
}

// TestHedgeStaleFiring: a firing of the delay's timer that Stop came too
// late for is skipped, not taken for the next delay's; and a hedging with
// such a firing still to come is not put back in the pool.
func TestHedgeStaleFiring(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := hedgings.Get().(*hedging)
		h.results, h.delay = make(chan int, 4), time.Millisecond
		h.arm()
		time.Sleep(time.Millisecond)
		synctest.Wait() // fired: its 0 is in results
		h.arm()         // too late to stop it
		if h.stale != 1 {
			t.Fatalf("stale = %d after arming a fired timer, want 1", h.stale)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if err := h.await(context.Background()); !errors.Is(err, ErrHedgeDelay) || h.stale != 0 || len(h.results) != 0 {
			t.Errorf("await = %v, stale %d, %d left; want the new delay, 0 and 0", err, h.stale, len(h.results))
		}
		h.arm()
		time.Sleep(time.Millisecond)
		synctest.Wait()
		h.disarm()
		h.put() // a firing is in results: not put back
		if h.results == nil {
			t.Error("put reset a hedging whose timer's firing was still to come")
		}
	})
}

// TestHedgeOnWinPanics: a panic of OnWin reaches the caller, and the
// winner's body is closed first.
func TestHedgeOnWinPanics(t *testing.T) {
	closed := make(chan bool, 1)
	base := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		if Attempt(r) == 1 {
			<-r.Context().Done()
			return nil, r.Context().Err()
		}
		return &http.Response{StatusCode: 200, Body: closeTracker{closed}}, nil
	})
	tr := &Transport{Base: base, Hedging: &Hedging{Delay: time.Millisecond, OnWin: func(context.Context, int) { panic("boom") }}}
	defer func() {
		if p := recover(); p != "boom" {
			t.Errorf("recovered %v, want OnWin's panic", p)
		}
		select {
		case <-closed:
		default:
			t.Error("the winner's body was not closed")
		}
	}()
	tr.RoundTrip(must(http.NewRequest("GET", "http://example.test/", nil)))
}

// closeTracker is a body that tells when it is closed.
type closeTracker struct{ closed chan bool }

func (closeTracker) Read([]byte) (int, error) { return 0, io.EOF }
func (c closeTracker) Close() error {
	c.closed <- true
	return nil
}

// TestHedgeObservesTheFirstCopy: when a hedge wins while the first copy is
// out, Adaptive observes the first copy's time so far, not the hedge's: a
// straggler enters the window above the delay. A first request answers in
// 40ms (the delay becomes about 42ms, its bucket's top); the second's
// first copy never answers, its hedge, sent then, answers in 30ms: the
// window holds 40ms and about 72ms, not 30ms, so its top is above 64ms.
func TestHedgeObservesTheFirstCopy(t *testing.T) {
	var calls atomic.Int32
	handler := func(w http.ResponseWriter, r *http.Request) {
		switch {
		case calls.Add(1) == 1:
			after(40*time.Millisecond, ok("first"), nil)(w, r)
		case Attempt(r) == 1:
			hang(w, r)
		default:
			after(30*time.Millisecond, ok("hedge"), nil)(w, r)
		}
	}
	inBubble(t, handler, func(t *testing.T, base *http.Transport) {
		d := must(hedge.NewDelay(hedge.Config{MinSamples: 1}))
		tr := &Transport{Base: base, Hedging: &Hedging{Adaptive: d}}
		if body, _, _, err := roundTripTimed(t, tr, pipeGet(t)); body != "first" || err != nil {
			t.Fatalf("%q, %v; want first", body, err)
		}
		time.Sleep(time.Second) // the next time bucket: the delay is computed anew
		if body, _, _, err := roundTripTimed(t, tr, pipeGet(t)); body != "hedge" || err != nil {
			t.Fatalf("%q, %v; want hedge", body, err)
		}
		time.Sleep(time.Second)
		// MaxExtraLoad 0.05 over 2 latencies: the larger one's bucket.
		if got, ok := d.Hedge(); !ok || got < 64*time.Millisecond {
			t.Errorf("Hedge() = %v, %v; want above 64ms, from the first copy's 72ms", got, ok)
		}
	})
}
