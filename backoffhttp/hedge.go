package backoffhttp

import (
	"context"
	"errors"
	"net/http"
	"sync"
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
	// latencies that the Transport observes, one per request won: the
	// first copy's, or when a later copy won while the first was out, the
	// first's time until then (it would have taken longer); the winner's
	// when the first failed. While it has too few, a copy is sent only
	// after a failure. Nil means a hedge.NewDelay(hedge.Config{}) of the
	// Transport's own.
	Adaptive *hedge.Delay

	// MaxAttempts is the number of copies in all, the first included,
	// from 2 to 5; zero means 2.
	MaxAttempts int

	// OnWin, when not nil, is called once per request that sent more than
	// one copy and got a winner, with the winner's number (1 is the first
	// copy).
	OnWin func(ctx context.Context, copy int)
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

// hedging is the state of one hedged RoundTrip, on its goroutine. It is
// pooled with its bound funcs, and a RoundTrip that leaves nothing running
// puts it back (see put). Its channel and timer are the call's own: a
// synctest bubble's must not serve another.
type hedging struct {
	perCall
	nextFn func(context.Context) error
	fireFn func() // the delay timer's
	copies [maxHedges]copyJob
}

// perCall is the part of a hedging that each RoundTrip starts from zero.
type perCall struct {
	c    call
	host string // c.req.URL.Host, the Throttle's target
	// results receives n when copy n's result is in copies[n-1].res, and
	// 0 when the delay runs out; it holds every copy's and every firing's,
	// so that no sender ever blocks.
	results chan int
	timer   *time.Timer // the delay's (time.AfterFunc of fireFn), once a copy is sent
	armed   bool        // timer runs, its firing not yet received
	stale   int         // firings sent or to come that a Stop came too late for
	cancels [maxHedges]context.CancelCauseFunc
	sent    int // copies sent
	running int // copies sent whose result is not in
	delay   time.Duration
	timed   bool // delay is known
	win     *http.Response
	winner  int           // win's copy number
	last    *attemptError // the failure that RoundTrip would return
	kept    bool          // last is returned to RoundTrip, which delivers or discards it
	unsent  bool          // GetBody failed: no more copies, those sent go on
}

// copyJob is one copy's goroutine: run, bound once, sends r with a.
type copyJob struct {
	h     *hedging
	n     int
	ctx   context.Context
	r     *http.Request
	a     *attemptTimer
	start time.Time // when it was sent
	run   func()
	res   copyResult
}

var hedgings = sync.Pool{New: func() any {
	h := &hedging{}
	h.nextFn, h.fireFn = h.next, h.fire
	for i := range h.copies {
		j := &h.copies[i]
		j.h, j.n, j.run = h, i+1, j.send
	}
	return h
}}

// put returns h, whose copies are all in, to the pool unless a firing of
// its timer is still to come.
func (h *hedging) put() {
	if h.stale > 0 {
		return
	}
	h.perCall = perCall{}
	for i := range h.copies {
		j := &h.copies[i]
		j.ctx, j.r, j.a, j.start, j.res = nil, nil, nil, time.Time{}, copyResult{}
	}
	hedgings.Put(h)
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
	h := hedgings.Get().(*hedging)
	h.c, h.host = cv, cv.req.URL.Host
	t := h.c.t
	h.results = make(chan int, 2*t.hcfg.MaxAttempts) // a firing per copy at most
	defer h.end()
	defer func() { sent = h.sent }() // before end, which may put h back
	h.delay, h.timed = t.hcfg.Delay, true
	if t.adaptive != nil {
		h.delay, h.timed = t.adaptive.Hedge()
	}
	ctx := h.c.req.Context()
	err = t.hedger.Do(ctx, h.nextFn)
	if h.win == nil {
		err = h.rest(ctx, err.(*backoff.Error)) // every stop of Do is one
	}
	if h.win != nil && h.sent > 1 && t.hcfg.OnWin != nil {
		h.onWin(ctx)
	}
	return h.win, 0, err
}

// onWin calls OnWin; if it panics, the winner's body is closed first.
func (h *hedging) onWin(ctx context.Context) {
	returned := false
	defer func() {
		if !returned {
			h.win.Body.Close()
		}
	}()
	h.c.t.hcfg.OnWin(ctx, h.winner)
	returned = true
}

// next sends the next copy and waits for what comes first: a winner
// (nil), a failure, or the delay.
func (h *hedging) next(ctx context.Context) error {
	if err := h.send(ctx); err != nil {
		h.unsent = true
		return err
	}
	if h.timed {
		h.arm()
	}
	err := h.await(ctx)
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

// arm starts the delay's timer anew.
func (h *hedging) arm() {
	if h.timer == nil {
		h.timer = time.AfterFunc(h.delay, h.fireFn)
	} else {
		h.disarm()
		h.timer.Reset(h.delay)
	}
	h.armed = true
}

// disarm stops the delay's timer; a firing already under way is stale.
func (h *hedging) disarm() {
	if h.armed && !h.timer.Stop() {
		h.stale++
	}
	h.armed = false
}

// fire tells that the delay ran out.
func (h *hedging) fire() { h.results <- 0 }

// await waits for the next copy's result, or for the delay when armed: it
// returns nil for a winner, in h.win, or the failure.
func (h *hedging) await(ctx context.Context) error {
	for {
		n := <-h.results
		if n == 0 {
			if h.stale > 0 {
				h.stale--
				continue
			}
			h.armed = false
			return &delayFired{d: h.delay, host: h.host}
		}
		r := h.copies[n-1].res
		h.running--
		h.cancels[r.n-1] = nil // sendOn cancelled a failed copy, send a panicked one; else the response's timer ends it
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
			d.Observe(h.firstTook(r))
		}
		h.win, h.winner = win, r.n
		return nil
	}
}

// firstTook returns the latency to observe when r wins: that of the first
// copy when it is still out, a lower bound (so that a straggler enters the
// window above the delay, not as its hedge's time), r's otherwise.
func (h *hedging) firstTook(r copyResult) time.Duration {
	if r.n > 1 && h.cancels[0] != nil {
		return time.Since(h.copies[0].start)
	}
	return r.took
}

// rest waits, once the Retrier stopped with stop, for the copies still
// running: the first to win is kept in h.win, and rest returns nil. An error not to retry ends every
// copy, as does the context. Otherwise RoundTrip gives up with stop's
// reason, and the failure it belongs to: the last one when the reason
// says nothing of a response (no more copies, budget, deadline).
func (h *hedging) rest(ctx context.Context, stop *backoff.Error) error {
	h.disarm()
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
		err := h.await(ctx)
		if h.win != nil {
			return nil
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
	return stop
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
	j := &h.copies[n-1]
	j.ctx, j.r, j.a, j.start = ctx, r, a, time.Now()
	go j.run()
	return nil
}

// send sends the copy and reports its result, its last touch of h.
func (j *copyJob) send() {
	res := &j.res
	*res = copyResult{n: j.n}
	results := j.h.results
	defer func() {
		if p := recover(); p != nil {
			j.a.cancel(nil) // no response will end it
			res.panic, res.fell = p, true
		}
		results <- j.n
	}()
	res.resp, res.timer, res.err = j.h.c.t.sendOn(j.ctx, j.r, j.a)
	res.took = time.Since(j.start)
}

// end cancels the copies still running, whose responses are then drained
// and closed on a goroutine of their own.
func (h *hedging) end() {
	h.disarm()
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
		h.put()
		return
	}
	go func(h *hedging, n int) {
		for n > 0 {
			if k := <-h.results; k > 0 {
				n--
				if r := &h.copies[k-1].res; r.resp != nil {
					(&attemptError{resp: r.resp, timer: r.timer}).discard()
				}
			}
		}
	}(h, h.running)
}
