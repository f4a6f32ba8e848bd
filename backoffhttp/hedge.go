package backoffhttp

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/hedge"
)

// Hedging makes a [Transport] hedge a repeatable request instead of
// retrying it: it sends copies of the request while none has answered, and
// returns the first response that ShouldRetry would not retry.
//
// A copy is sent after Delay while no copy has won, and at once after a
// response that ShouldRetry would retry or an error that it would retry.
// The first response not to retry wins: the other copies are cancelled and
// their responses drained and closed, and the winner's context lives until
// its body is closed. A response that says [DontRetryHeader] (unless the
// Retrier's RetryInner is set) or carries a Retry-After stops further
// copies, as does a refusal of the Retrier's Budget, which every copy after
// the first withdraws from; an error that ShouldRetry would not retry ends
// every copy. Each copy after the first gets its body from GetBody and
// carries [AttemptCountHeader]. When no copy wins, RoundTrip gives up as
// the Transport documentation says, with the last copy's outcome; the
// Retrier's Policy is not used.
//
// The Retrier's OnRetry is called before each copy after the first, with
// the number of copies sent, the last failure (or [ErrHedgeDelay]) and
// the delay waited; OnDone once.
type Hedging struct {
	// Delay is how long a copy may go unanswered before the next one is
	// sent; it must not be negative. Zero means Adaptive's delay.
	Delay time.Duration

	// Adaptive, used when Delay is zero, gives the delay from the
	// latencies of the copies that won, which the Transport observes:
	// while it has too few, a copy is sent only after a failure. Nil means
	// a hedge.NewDelay(hedge.Config{}) of the Transport's own.
	Adaptive *hedge.Delay

	// MaxAttempts is the number of copies in all, the first included,
	// from 2 to 5; zero means 2.
	MaxAttempts int
}

// ErrHedgeDelay is the failure that OnRetry hears of before a copy sent
// because no copy answered within [Hedging].Delay.
var ErrHedgeDelay = errors.New("backoffhttp: no answer within the hedging delay")

// maxHedges is the most copies a Hedging may send: gRFC A6's cap.
const maxHedges = 5

// checkHedging validates h.
func checkHedging(h *Hedging) error {
	switch {
	case h.Delay < 0:
		return &backoff.ParamError{Param: "Transport.Hedging.Delay", Value: h.Delay, Reason: "must not be negative"}
	case h.MaxAttempts != 0 && (h.MaxAttempts < 2 || h.MaxAttempts > maxHedges):
		return &backoff.ParamError{Param: "Transport.Hedging.MaxAttempts", Value: h.MaxAttempts, Reason: "must be 0 or from 2 to 5"}
	}
	return nil
}

// copyResult is what one copy's goroutine reports.
type copyResult struct {
	n     int
	took  time.Duration // from the copy's start to its response or error
	resp  *http.Response
	timer *attemptTimer
	err   error
	panic any // what Base panicked with, if it did
	fell  bool
}

// hedging is the state of one hedged RoundTrip, on its goroutine.
type hedging struct {
	c       call
	results chan copyResult
	cancels [maxHedges]context.CancelCauseFunc
	sent    int // copies sent
	running int // copies sent whose result is not in
	last    *attemptError
	kept    bool  // last is returned to RoundTrip, which delivers or discards it
	stop    error // why no more copies are sent, once one is not
}

// errLost is the cause with which a copy that lost is cancelled.
var errLost = errors.New("backoffhttp: another copy of the request won")

// hedged runs the hedged request of c, which it copies so that a call
// not hedged stays on its goroutine's stack: its result is that of loop,
// and the number of copies sent.
func hedged(cv call) (resp *http.Response, sent int, err error) {
	h := &hedging{c: cv}
	c := &h.c
	t := c.t
	defer func() { sent = h.sent }()
	max := t.Hedging.MaxAttempts
	if max == 0 {
		max = 2
	}
	h.results = make(chan copyResult, max)
	ctx := c.req.Context()
	if err := ctx.Err(); err != nil {
		return nil, 0, &backoff.Error{Reason: err} // no attempt, as in the loop
	}
	if b := t.retrier.Budget; b != nil {
		b.Deposit()
	}
	start := time.Now()
	defer h.end()
	h.send(ctx)
	delay, timed := t.Hedging.Delay, true
	if t.adaptive != nil {
		delay, timed = t.adaptive.Hedge()
	}
	var timer *time.Timer
	var fired <-chan time.Time // nil while no delay is known
	if timed {
		timer = time.NewTimer(delay)
		fired = timer.C
		defer timer.Stop()
	}
	for {
		var more bool // whether to send a copy now
		var failure *attemptError
		waited := time.Duration(0)
		select {
		case <-fired:
			more, failure, waited = true, &attemptError{err: ErrHedgeDelay}, delay
		case r := <-h.results:
			h.running--
			if r.resp == nil {
				h.cancels[r.n-1](nil)
			}
			h.cancels[r.n-1] = nil // else the response's, as its timer's
			if r.fell {
				panic(r.panic)
			}
			win, ae, final := h.judge(ctx, r)
			if win != nil {
				return win, 0, nil
			}
			if final != nil {
				return nil, 0, final
			}
			if h.last != nil {
				h.last.discard()
			}
			h.last, failure, more = ae, ae, true
		}
		if more && h.stop == nil {
			h.stop = h.allowed(max, start)
		}
		if more && h.stop == nil {
			if t.retrier.OnRetry != nil {
				t.retrier.OnRetry(ctx, h.sent, failure, waited)
			}
			h.send(ctx)
			if timed {
				timer.Reset(delay)
			}
		}
		if h.running == 0 {
			h.kept = true
			return nil, 0, &backoff.Error{Reason: h.stop, Err: h.last, Attempts: h.sent}
		}
	}
}

// allowed returns nil when a copy may be sent now, or why not.
func (h *hedging) allowed(max int, start time.Time) error {
	r := h.c.t.retrier
	switch {
	case h.sent >= max:
		return backoff.ErrExhausted
	case r.MaxElapsed > 0 && time.Since(start) >= r.MaxElapsed:
		return backoff.ErrDeadline
	case r.Budget != nil && r.Budget.Withdraw() != nil:
		return backoff.ErrBudget
	}
	return nil
}

// judge returns the winner, or the failure of a copy that lost (a status
// or an error to retry), or the error that ends the RoundTrip; it records
// in h.stop whether the failure stops further copies.
func (h *hedging) judge(ctx context.Context, r copyResult) (*http.Response, *attemptError, error) {
	c := &h.c
	if r.err != nil {
		if ctx.Err() != nil {
			return nil, nil, &backoff.Error{Reason: ctx.Err(), Err: c.failure(ctx, r.err), Attempts: h.sent}
		}
		if r.err == errNilResponse {
			return nil, nil, &backoff.Error{Reason: backoff.ErrPermanent, Err: r.err, Attempts: h.sent}
		}
		ae := c.failure(ctx, r.err)
		if !ae.retry {
			return nil, nil, &backoff.Error{Reason: backoff.ErrPermanent, Err: ae, Attempts: h.sent}
		}
		return nil, ae, nil
	}
	win, ae := c.judge(r.resp, r.timer)
	if win != nil {
		if d := c.t.adaptive; d != nil {
			d.Observe(r.took)
		}
		return win, nil, nil
	}
	switch {
	case !c.t.retrier.RetryInner && backoff.Retried(ae):
		h.stop = backoff.ErrRetriedBelow
	case ae.status.Delay > 0:
		h.stop = backoff.ErrHintTooLong
	}
	return nil, ae, nil
}

// send sends the next copy on a goroutine of its own, unless GetBody
// fails, which stops further copies.
func (h *hedging) send(ctx context.Context) {
	c := &h.c
	n := h.sent + 1
	// The copy's context is its attempt's, with AttemptTimeout's timer if
	// any: it ends when the response is discarded, or its body closed.
	a := startTimer(ctx, c.t.AttemptTimeout)
	r, err := c.request(a.ctx, n)
	if err != nil {
		a.cancel(nil)
		h.stop = backoff.ErrPermanent
		if h.last == nil || h.last.resp == nil {
			h.last = &attemptError{err: err}
		}
		return
	}
	h.cancels[n-1] = a.cancel
	h.sent, h.running = n, h.running+1 // after all that may panic: end waits for running copies
	go func() {
		res := copyResult{n: n}
		defer func() {
			if p := recover(); p != nil {
				res.panic, res.fell = p, true
			}
			h.results <- res
		}()
		start := time.Now()
		res.resp, res.timer, res.err = c.t.sendOn(ctx, r, a)
		res.took = time.Since(start)
	}()
}

// end cancels the copies still running, whose responses are then drained
// and closed on a goroutine of their own.
func (h *hedging) end() {
	h.c.held.discard() // ShouldRetry panicked
	if !h.kept && h.last != nil {
		h.last.discard()
	}
	for _, cancel := range h.cancels {
		if cancel != nil {
			cancel(errLost)
		}
	}
	if h.running == 0 {
		return
	}
	go func(results <-chan copyResult, n int) {
		for range n {
			r := <-results
			if r.resp != nil {
				(&attemptError{resp: r.resp, timer: r.timer}).discard()
			}
		}
	}(h.results, h.running)
}
