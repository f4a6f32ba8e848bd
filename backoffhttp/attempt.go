package backoffhttp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/internal/decided"
)

// call is the state of one RoundTrip.
type call struct {
	t        *Transport
	req      *http.Request
	rewind   bool // the body can be sent again
	idem     bool // the request may be sent again: rewind and idempotent
	attempts int
	last     *attemptError // the failure of the last attempt, whose drain the next one ends
	held     attemptError  // the response in hand while ShouldRetry judges it
}

// loop runs the retry loop. When a hook panics in it (ShouldRetry, the
// Policy, the Budget's clock, OnRetry) while a response is in hand or
// waits to be retried, that response is discarded before the panic goes
// on.
func (c *call) loop() (*http.Response, error) {
	returned := false
	defer func() {
		if returned {
			return
		}
		c.held.discard()
		if c.last != nil {
			c.last.discard()
		}
	}()
	var resp *http.Response
	var failed *attemptError // the last failure of an attempt sent
	err := c.t.retrier.Do(c.req.Context(), func(ctx context.Context) error {
		var err error
		resp, err = c.attempt(ctx)
		if ae, ok := err.(*attemptError); ok {
			failed = ae
		}
		return err
	})
	returned = true
	if err != nil {
		stop, _ := err.(*backoff.Error)
		stopThrottled(stop, failed, c.attempts)
		return nil, err
	}
	return resp, nil
}

// attempt sends the request once more; the Retrier's loop calls it.
func (c *call) attempt(ctx context.Context) (*http.Response, error) {
	c.attempts++
	if c.last != nil && c.last.cut != nil {
		// The retry must not wait for the connection that drain holds
		// (a base transport may have no other: MaxConnsPerHost).
		c.last.cut()
	}
	c.last = nil
	r, err := c.request(c.req.Context(), c.attempts)
	if err != nil {
		if err == errThrottled {
			c.attempts-- // not sent
		}
		return nil, err
	}
	resp, a, err := c.t.send(ctx, r)
	if err != nil {
		if err == errNilResponse {
			return nil, err
		}
		return nil, c.failure(ctx, err)
	}
	resp, ae := c.judge(resp, a)
	if ae != nil {
		c.last = ae // not ae.call = c: c would then escape, one allocation per RoundTrip
		return nil, ae
	}
	return resp, nil
}

// request returns the request of attempt n, or errThrottled when the
// Transport's Throttle refuses it (a first try: the Transport's gate gates
// retries):
// for n > 1, with a body from GetBody and
// the AttemptCountHeader, and ctx as its context unless ctx is the
// request's own.
func (c *call) request(ctx context.Context, n int) (*http.Request, error) {
	if err := c.t.allow(c.req, n); err != nil {
		return nil, err
	}
	r := c.req
	if n > 1 {
		r2 := *r
		if r.Body != nil && r.Body != http.NoBody {
			body, err := r.GetBody()
			if err != nil {
				return nil, backoff.Permanent(&getBodyError{err})
			}
			r2.Body = body
		}
		r2.Header = attemptHeader(r.Header, n)
		r = &r2
	}
	if ctx != c.req.Context() {
		r = r.WithContext(ctx)
	}
	return r, nil
}

// send sends r once through Base, bound by AttemptTimeout: it returns a
// response with a non-nil Body and its timer, stopped, or an error (the
// timer's, if it expired) and no response. A nil response with a nil
// error is errNilResponse.
func (t *Transport) send(ctx context.Context, r *http.Request) (*http.Response, *attemptTimer, error) {
	var a *attemptTimer
	if d := t.AttemptTimeout; d > 0 {
		a = startTimer(ctx, d)
		r = r.WithContext(a.ctx)
	}
	return t.sendOn(ctx, r, a)
}

// sendOn is send with a's context, already r's: a may be nil, or have no
// timer (a hedged copy's context without AttemptTimeout).
func (t *Transport) sendOn(ctx context.Context, r *http.Request, a *attemptTimer) (*http.Response, *attemptTimer, error) {
	resp, err := t.base.RoundTrip(r)
	t.record(ctx, r, resp, err)
	if err != nil && resp != nil {
		// A base transport that broke http.RoundTripper's contract: its
		// error stands, and its response is given back as any discarded one.
		if resp.Body == nil {
			resp.Body = http.NoBody
		}
		(&attemptError{resp: resp}).discard()
		resp = nil
	}
	if err != nil || resp == nil {
		if a != nil {
			if a.timer != nil && !a.timer.Stop() && ctx.Err() == nil && err != nil {
				err = a.expired(err)
			}
			a.cancel(nil)
		}
		if err == nil {
			return nil, nil, errNilResponse
		}
		return nil, nil, err
	}
	if resp.Body == nil {
		resp.Body = http.NoBody // as http.Client reads a nil Body
	}
	// A response in hand wins over the timer, even when it fired as the
	// response came: the server has answered.
	if a != nil && a.timer != nil {
		a.timer.Stop()
	}
	return resp, a, nil
}

// judge returns resp when it is not to be retried, its attempt's context
// (if any) then living until its body is closed, or else the attemptError
// of a status to retry, which holds resp.
func (c *call) judge(resp *http.Response, a *attemptTimer) (*http.Response, *attemptError) {
	c.held.resp, c.held.timer = resp, a
	retry := c.idem && c.t.shouldRetry(resp, nil)
	c.held.resp, c.held.timer = nil, nil
	if !retry {
		if a != nil {
			a.attach(resp)
		}
		return resp, nil
	}
	ae := &attemptError{resp: resp, retry: true, timer: a, host: c.req.URL.Host}
	ae.status = statusError(resp)
	ae.err = &ae.status
	if g := gaveUpOn(resp); g != nil {
		// A Transport's give-up, in Base: the loop stands back when it
		// retried. The hooks still hear of the status.
		ae.err, ae.gaveUp = g, true
	}
	return nil, ae
}

// failure returns the attemptError of an attempt that failed with err: it
// is retried when the request may be sent again and ShouldRetry agrees.
// ShouldRetry is not asked once the context has ended, which stops the
// loop anyway.
func (c *call) failure(ctx context.Context, err error) *attemptError {
	ae := &attemptError{err: err, host: c.req.URL.Host}
	switch {
	case ctx.Err() != nil:
	case refused(err):
		// Never sent: ShouldRetry decides, whatever the method. A request
		// whose body cannot be sent again still stops if it says yes.
		ae.retry = c.t.shouldRetry(nil, err)
		if ae.retry && !c.rewind {
			ae.retry, ae.notRepeatable = false, true
		}
	case !c.rewind || !c.idem && !notSent(err):
		ae.notRepeatable = true
	default:
		ae.retry = c.t.shouldRetry(nil, err)
	}
	return ae
}

// errNilResponse is the failure of a base transport that returned neither
// a response nor an error.
var errNilResponse = backoff.Permanent(errors.New("backoffhttp: Transport.Base returned a nil *http.Response and a nil error"))

// attemptError is what an attempt returns to the loop when it failed or got
// a status to retry. It stands in the loop for its err: Error, Unwrap and
// the hint are err's, Retryable is the Transport's verdict.
type attemptError struct {
	err    error          // &status for a status (or a Transport's give-up on it); the transport's error otherwise
	resp   *http.Response // the response of a status, body unread; nil otherwise and once discarded
	timer  *attemptTimer  // the attempt's timeout, when there is one
	cut    func()         // once discarded, ends resp's drain; the next attempt calls it
	retry  bool           // the Transport's verdict: retry it
	host   string         // the request's URL.Host, the Throttle's target
	status StatusError

	// notRepeatable: the request may not be sent again, so the loop stops
	// with ErrNotRepeatable (retry is false).
	notRepeatable bool

	// gaveUp: err is the give-up of a Transport in Base on the status.
	gaveUp bool
}

// hookErr is the failure as OnRetry hears of it: the *StatusError of a
// status, also one that a Transport in Base gave up on; err otherwise.
func (e *attemptError) hookErr() error {
	if e.gaveUp {
		return &e.status
	}
	return e.err
}

func (e *attemptError) Error() string { return e.err.Error() }

// Unwrap returns the failure: a *StatusError, a give-up of a Transport in Base, or the transport's error.
func (e *attemptError) Unwrap() error { return e.err }

// Retryable reports the Transport's verdict on the failure. The hint, if
// any, is found through Unwrap, as for any error: a status's Retry-After,
// or one that a base transport's error carries.
func (e *attemptError) Retryable() bool { return e.retry }

// RetryDecided is called by the loop once it will retry after e, past
// every check that could still make the Transport give up and return
// e.resp: it discards the response, whose drain then runs beside the wait.
func (e *attemptError) RetryDecided(decided.Token) { e.discard() }

// discard drains and closes the response, then ends its attempt, on a
// goroutine of its own so that a slow body never holds the RoundTrip up
// (but for http.NoBody, which has nothing to wait for); it does so once,
// however often it is called. The call's next attempt, if it starts
// before the drain ends, closes the body first.
func (e *attemptError) discard() {
	if e.resp == nil {
		return
	}
	body, timer := e.resp.Body, e.timer
	e.resp = nil
	if body == http.NoBody { // nothing to read, and Close does nothing
		if timer != nil {
			timer.cancel(nil)
		}
		return
	}
	closeBody := sync.OnceFunc(func() { body.Close() })
	e.cut = closeBody
	go release(body, closeBody, timer)
}

// release drains body and closes it with closeBody, then ends its
// attempt's timer, if any.
func release(body io.ReadCloser, closeBody func(), timer *attemptTimer) {
	drain(body, closeBody)
	if timer != nil {
		timer.cancel(nil)
	}
}

// deliver returns the response for the caller: its attempt's context, if
// any, now lives until its body is closed.
func (e *attemptError) deliver() *http.Response {
	if e.timer != nil {
		e.timer.attach(e.resp)
	}
	return e.resp
}
