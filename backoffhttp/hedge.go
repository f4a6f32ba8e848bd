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
// the first withdraws from; an error that ShouldRetry would not retry, or
// the end of the request's context, ends every copy. Copies after the
// first are the retries of the Retrier's loop: a copy is sent only past
// its checks (the context, an inner loop's give-up, the Transport's
// Throttle, MaxElapsed and the deadline, the Budget, OnRetry). A Retry-After of any value, 0 included,
// stops further copies. A panic of Base in a copy still running when
// RoundTrip returns cannot reach the caller: it is dropped. Each copy after the first gets its body from GetBody and
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

// setupHedging reads h, valid, once: the hedging loop is a Retrier with
// r's Budget, MaxElapsed, RetryInner and OnRetry, whose Policy stops at
// MaxAttempts copies or a Retry-After and never waits, so that a copy is
// sent by the checks of the retry loop's retries.
func (t *Transport) setupHedging(h Hedging, r *backoff.Retrier) {
	if h.MaxAttempts == 0 {
		h.MaxAttempts = 2
	}
	if h.Delay == 0 {
		t.adaptive = h.Adaptive
		if t.adaptive == nil {
			t.adaptive, _ = hedge.NewDelay(hedge.Config{}) // the defaults are valid
		}
	}
	t.hcfg = h
	most := h.MaxAttempts
	t.hedger = &backoff.Retrier{
		Policy: backoff.PolicyFunc(func(copies int, err error) (time.Duration, error) {
			if copies >= most {
				return 0, backoff.ErrExhausted
			}
			if ae, ok := err.(*attemptError); ok && ae.resp != nil && hasRetryAfter(ae.resp.Header) {
				return 0, backoff.ErrHintTooLong
			}
			return 0, nil
		}),
		Budget: r.Budget, MaxElapsed: r.MaxElapsed, RetryInner: r.RetryInner,
	}
	if onRetry := r.OnRetry; onRetry != nil {
		t.hedger.OnRetry = func(ctx context.Context, copies int, err error, _ time.Duration) {
			if w, ok := err.(*delayFired); ok {
				onRetry(ctx, copies, ErrHedgeDelay, w.d)
				return
			}
			onRetry(ctx, copies, err.(*attemptError).hookErr(), 0)
		}
	}
}

// hasRetryAfter reports whether h holds a valid Retry-After, 0 included.
func hasRetryAfter(h http.Header) bool {
	_, ok := ParseRetryAfter(h.Get("Retry-After"), time.Time{})
	return ok
}

// delayFired is the failure of a copy unanswered within the delay: a
// reason to send the next copy.
type delayFired struct {
	d    time.Duration
	host string // the request's URL.Host, the Throttle's target
}

func (e *delayFired) Error() string   { return ErrHedgeDelay.Error() }
func (e *delayFired) Unwrap() error   { return ErrHedgeDelay }
func (e *delayFired) Retryable() bool { return true }

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
	delay   time.Duration
	timed   bool        // delay is known
	timer   *time.Timer // the delay's, once a copy is sent
	win     *http.Response
	last    *attemptError // the failure that RoundTrip would return
	kept    bool          // last is returned to RoundTrip, which delivers or discards it
	unsent  bool          // GetBody failed: no more copies, those sent go on
}

// errLost is the cause with which a copy that lost is cancelled.
var errLost = errors.New("backoffhttp: another copy of the request won")

// hedged runs the hedged request of c, which it copies so that a call not
// hedged stays on its goroutine's stack: its result is that of loop, and the
// number of copies sent. Each copy after the first is a retry of the
// Transport's hedging Retrier, decided by its checks (the context, an error
// not to retry, an inner loop's give-up, the copies and Retry-After, the
// Throttle, MaxElapsed and the deadline, the Budget, OnRetry) at a failure or
// when the delay runs out. Once it stops, the copies sent may still win.
func hedged(cv call) (resp *http.Response, sent int, err error) {
	h := &hedging{c: cv}
	t := h.c.t
	defer func() { sent = h.sent }()
	h.results = make(chan copyResult, t.hcfg.MaxAttempts)
	defer h.end()
	h.delay, h.timed = t.hcfg.Delay, true
	if t.adaptive != nil {
		h.delay, h.timed = t.adaptive.Hedge()
	}
	ctx := h.c.req.Context()
	err = t.hedger.Do(ctx, h.next)
	if h.win != nil {
		return h.win, 0, nil
	}
	stop := err.(*backoff.Error) // every stop of Do is one
	return h.rest(ctx, stop)
}

// next sends the next copy and waits for what comes first: a winner
// (nil), a failure, or the delay.
func (h *hedging) next(ctx context.Context) error {
	if err := h.send(ctx); err != nil {
		h.unsent = true
		return err
	}
	if h.timed {
		if h.timer == nil {
			h.timer = time.NewTimer(h.delay)
		} else {
			h.timer.Reset(h.delay)
		}
	}
	err := h.await(ctx, h.timer)
	if ae, ok := err.(*attemptError); ok {
		h.hold(ae)
	}
	return err
}

// hold makes ae the failure RoundTrip would return, discarding the one
// before (which the Retrier discarded already when it sent another copy).
func (h *hedging) hold(ae *attemptError) {
	if h.last != nil && h.last != ae {
		h.last.discard()
	}
	h.last = ae
}

// await waits for the next copy's result, or for timer when not nil: it
// returns nil for a winner, in h.win, or the failure.
func (h *hedging) await(ctx context.Context, timer *time.Timer) error {
	var fired <-chan time.Time
	if timer != nil {
		fired = timer.C
	}
	select {
	case <-fired:
		return &delayFired{d: h.delay, host: h.c.req.URL.Host}
	case r := <-h.results:
		h.running--
		h.cancels[r.n-1] = nil // sendOn cancelled a failed copy; else the response's timer ends it
		if r.fell {
			panic(r.panic)
		}
		c := &h.c
		if r.err != nil {
			if r.err == errNilResponse {
				return r.err
			}
			return c.failure(ctx, r.err)
		}
		win, ae := c.judge(r.resp, r.timer)
		if win == nil {
			return ae
		}
		if d := c.t.adaptive; d != nil {
			d.Observe(r.took)
		}
		h.win = win
		return nil
	}
}

// rest waits, once the Retrier stopped with stop, for the copies still
// running: the first to win is returned. An error not to retry ends every
// copy, as does the context. Otherwise RoundTrip gives up with stop's
// reason, and the failure it belongs to: the last one when the reason
// says nothing of a response (no more copies, budget, deadline).
func (h *hedging) rest(ctx context.Context, stop *backoff.Error) (*http.Response, int, error) {
	stopThrottled(stop, h.last, h.sent)
	if _, ok := stop.Err.(*delayFired); ok {
		stop.Err = ErrHedgeDelay
		if h.last != nil {
			stop.Err = h.last
		}
	}
	own := stop.Reason == backoff.ErrRetriedBelow || stop.Reason == backoff.ErrHintTooLong
	ended := ctx.Err() != nil || stop.Reason == backoff.ErrPermanent && !h.unsent
	for !ended && h.running > 0 {
		err := h.await(ctx, nil)
		if h.win != nil {
			return h.win, 0, nil
		}
		ae, _ := err.(*attemptError)
		switch {
		case ctx.Err() != nil:
			stop.Reason, ended = ctx.Err(), true
		case ae == nil || !ae.retry:
			stop.Reason, ended = backoff.ErrPermanent, true
		case own:
			ae.discard()
			continue
		}
		if ae != nil {
			h.hold(ae)
		}
		stop.Err = err
	}
	stop.Attempts = h.sent
	h.kept = stop.Err == error(h.last)
	return nil, 0, stop
}

// send sends the next copy on a goroutine of its own, unless GetBody
// fails: it returns that error.
func (h *hedging) send(ctx context.Context) error {
	c := &h.c
	n := h.sent + 1
	// The copy's context is its attempt's, with AttemptTimeout's timer if
	// any: it ends when the response is discarded, or its body closed.
	a := startTimer(ctx, c.t.AttemptTimeout)
	r, err := c.request(a.ctx, n)
	if err != nil {
		a.cancel(nil)
		return err
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
	return nil
}

// end cancels the copies still running, whose responses are then drained
// and closed on a goroutine of their own.
func (h *hedging) end() {
	if h.timer != nil {
		h.timer.Stop()
	}
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
