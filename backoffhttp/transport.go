package backoffhttp

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/hedge"
	"github.com/backoffgo/backoff/internal/nilness"
	"github.com/backoffgo/backoff/throttle"
)

// DefaultMaxRetryAfter is the longest Retry-After a [Transport] honours when
// its MaxRetryAfter is zero.
const DefaultMaxRetryAfter = 30 * time.Second

// DefaultRetrier returns a new Retrier, the one of a [Transport] whose
// Retrier is nil: full jitter with Base 200 ms, Cap 10 s and MaxAttempts 5
// (one attempt and up to four retries), a Policy shared by every call.
func DefaultRetrier() *backoff.Retrier {
	return &backoff.Retrier{Policy: defaultPolicy}
}

// defaultPolicy is DefaultRetrier's Policy, immutable and shared.
var defaultPolicy = backoff.Must(backoff.NewFullJitter(backoff.Config{
	Base: 200 * time.Millisecond, Cap: 10 * time.Second, MaxAttempts: 5,
}, backoff.RuntimeRng{}))

// Transport is an http.RoundTripper that retries the requests it may
// safely repeat, with the loop of a [backoff.Retrier]. Its zero value is
// ready to use and wraps http.DefaultTransport.
//
// # What is retried
//
// A request is repeatable when its method is idempotent (Idempotent, by
// default [IsIdempotent]) and it has no body or its body can be rewound
// (Request.GetBody, which each retry calls; a body is never buffered). For
// a repeatable request, ShouldRetry (by default [DefaultShouldRetry])
// decides which outcomes are retried. A request whose body can be rewound
// but whose method is not idempotent is retried only after an error that
// proves it was never sent (the connection could not be opened, or
// net/http refused it) and that ShouldRetry retries; a request whose body
// cannot be rewound is sent once. Each
// retry carries [AttemptCountHeader]; a response that says
// [DontRetryHeader] is not retried unless the Retrier's RetryInner is set.
//
// Between attempts the Transport waits as the Retrier's Policy says, or as
// a response's Retry-After says, measured from its Date header when that
// is valid. A Retry-After over MaxRetryAfter makes it give up (RFC 9110,
// section 10.2.3), or with ClampRetryAfter wait MaxRetryAfter. The
// request's context cancels a wait at once, and a retry that could not
// start before its deadline or the Retrier's MaxElapsed is not waited for.
//
// # What RoundTrip returns
//
// A response that is not to be retried is returned as Base returned it,
// but that a nil Body is made http.NoBody, as on every path. When the
// Transport gives up on a status it would have retried, it returns that
// last response, body unread, and a nil error, as http.Client does;
// [CheckResponse] returns why. If the request's context has ended by then,
// that response is drained and closed and RoundTrip returns the error.
//
// Otherwise RoundTrip returns a nil response and a *[backoff.Error] that
// wraps the last attempt's error; errors.Is matches that error's chain and
// why the loop stopped: [backoff.ErrPermanent], [ErrNotRepeatable],
// [backoff.ErrExhausted], [backoff.ErrDeadline], [backoff.ErrBudget],
// [throttle.ErrThrottled] or the context's error.
//
// Every response it does not return is drained and closed, exactly once,
// on a goroutine of its own that never delays RoundTrip: its body is read
// to its end, but for at most 64 KiB and one byte and one second, and
// closed unread past that (closing its connection). A retry that starts
// before the drain ends closes that body first, from another goroutine
// while the read waits, as net/http's bodies allow (a Base's must too).
//
// # Contract
//
// RoundTrip does not modify the request and always closes its body. A
// Transport is safe for concurrent use; its fields must not be changed,
// nor it copied, once used. An invalid field makes every RoundTrip return
// a *[backoff.ParamError] that names it, and so does a request that could
// never be sent, without an attempt: a nil req or req.URL and, when Base
// is an *http.Transport (or nil), a URL without a scheme or a host, or
// with a control character in RawQuery or Opaque.
type Transport struct {
	// Base sends each attempt. Nil means http.DefaultTransport. A response
	// it returns beside an error is drained and closed; the error stands.
	Base http.RoundTripper

	// Retrier runs the loop: its Policy, wrapped in a [backoff.RetryAfter]
	// with MaxRetryAfter, its Budget, MaxElapsed, RetryInner and hooks,
	// which get the request's context. Nil means [DefaultRetrier]. It is
	// read at the first RoundTrip. OnRetry's err is the attempt's failure:
	// a *[StatusError] for a status (also one that a Transport in Base
	// gave up on), the transport's error otherwise.
	//
	// OnDone is called once per RoundTrip, but for a nil req. Its attempts
	// is 0 when the context ended first or RoundTrip returns a
	// *[backoff.ParamError] (an invalid field, this Retrier's Policy or
	// MaxElapsed included, or a request that could never be sent); its err
	// is nil when RoundTrip returns a response that was not to be retried,
	// that ParamError, or the *[backoff.Error] that says why the Transport
	// stopped. That error's Err is the last attempt's failure, but for a
	// status that a Transport in Base gave up on, whose Err is that
	// Transport's *backoff.Error (which wraps the *StatusError), so that a
	// loop around stands back from it when it retried.
	Retrier *backoff.Retrier

	// MaxRetryAfter is the longest Retry-After honoured; at a longer one
	// the Transport gives up ([backoff.ErrHintTooLong]). It must not be
	// negative; zero means [DefaultMaxRetryAfter].
	MaxRetryAfter time.Duration

	// ClampRetryAfter, when true, makes a Retry-After longer than
	// MaxRetryAfter wait MaxRetryAfter and retry, instead of giving up.
	ClampRetryAfter bool

	// AttemptTimeout, when positive, bounds each attempt until its
	// response headers arrive; zero means none, and it must not be
	// negative. An attempt out of time fails with an error that matches
	// context.DeadlineExceeded, not context.Canceled, and whose Timeout
	// method reports true, as do the *backoff.Error and *url.Error that
	// wrap it; it is retried like any transport error. A response that
	// arrives is kept, even as the time runs out (its body may then fail
	// to read with the timeout's error); the body of the response
	// RoundTrip returns is bound by the request's context alone.
	AttemptTimeout time.Duration

	// Idempotent reports whether a request may be sent more than once.
	// Nil means [IsIdempotent]. It must be safe for concurrent use.
	Idempotent func(req *http.Request) bool

	// ShouldRetry reports whether the outcome of an attempt of a
	// repeatable request, or net/http's refusal to send any request, is
	// worth retrying: exactly one of resp and err is non-nil. It must not
	// read or close resp.Body, and is not asked once the request's context
	// has ended. Nil means [DefaultShouldRetry]. It must be safe for
	// concurrent use.
	ShouldRetry func(resp *http.Response, err error) bool

	// Hedging, when not nil, makes the Transport hedge a repeatable
	// request instead of retrying it (see [Hedging]); other requests are
	// sent as without it. It is read at the first RoundTrip.
	Hedging *Hedging

	// Throttle, when not nil, gates every attempt, keyed by the request's
	// URL.Host (see [throttle.Throttle]): first tries only with its
	// Config.FirstTries, as they are sent; retries and hedged copies always,
	// once the Retrier's Policy allows them, before the deadline, the Budget,
	// OnRetry and the wait (a retry refused withdraws nothing). An attempt it
	// refuses is not sent, nor is any after it: RoundTrip returns a nil response
	// and a *[backoff.Error] whose Reason is [throttle.ErrThrottled], whose Err
	// is the last failure of an attempt sent (nil for none) and whose Attempts
	// are those sent; unless a hedged copy sent before wins, or fails after, the
	// refusal (its failure is then the last, given up on with that Reason). An
	// attempt sent is recorded once its outcome is known, as accepted unless it
	// got no response (an error, AttemptTimeout, the request's deadline), a 429
	// or 503, or one that says [DontRetryHeader]; one cancelled is accepted: by
	// the request's context, or by the Transport (a hedged copy once another has
	// won, or failed for good).
	Throttle *throttle.Throttle

	onDone   func(ctx context.Context, attempts int, err error)
	once     sync.Once
	initErr  error
	base     http.RoundTripper
	retrier  *backoff.Retrier
	hedger   *backoff.Retrier // the hedging loop's, when Hedging is set
	hcfg     Hedging          // Hedging as read at the first RoundTrip, MaxAttempts set
	adaptive *hedge.Delay     // Hedging's, when its Delay is zero
}

// init validates t's fields and builds the loop, once.
func (t *Transport) init() error {
	t.once.Do(func() {
		t.initErr = t.setup()
	})
	return t.initErr
}

func (t *Transport) setup() error {
	r := t.Retrier
	if r == nil {
		r = DefaultRetrier()
	}
	t.onDone = r.OnDone // called even when a field, the Retrier's too, is invalid
	switch {
	case t.MaxRetryAfter < 0:
		return &backoff.ParamError{Param: "Transport.MaxRetryAfter", Value: t.MaxRetryAfter, Reason: "must not be negative"}
	case t.AttemptTimeout < 0:
		return &backoff.ParamError{Param: "Transport.AttemptTimeout", Value: t.AttemptTimeout, Reason: "must not be negative"}
	case t.Base != nil && nilness.IsNil(t.Base):
		return &backoff.ParamError{Param: "Transport.Base", Value: t.Base, Reason: "must not be a nil pointer; leave it nil for http.DefaultTransport"}
	}
	if h := t.Hedging; h != nil {
		if err := checkHedging(h); err != nil {
			return err
		}
	}
	if r.MaxElapsed < 0 {
		return &backoff.ParamError{Param: "Transport.Retrier.MaxElapsed", Value: r.MaxElapsed, Reason: "must not be negative"}
	}
	t.base = t.baseTransport()
	maxWait := t.MaxRetryAfter
	if maxWait == 0 {
		maxWait = DefaultMaxRetryAfter
	}
	ra, err := backoff.NewRetryAfter(r.Policy, backoff.RetryAfterConfig{MaxWait: maxWait, GiveUp: !t.ClampRetryAfter})
	if err != nil {
		// maxWait is positive: only a nil Policy (or a nil pointer or func)
		// fails, which NewRetryAfter checks.
		return &backoff.ParamError{Param: "Transport.Retrier.Policy", Value: r.Policy, Reason: "must not be nil"}
	}
	t.retrier = &backoff.Retrier{Policy: ra, Budget: r.Budget, MaxElapsed: r.MaxElapsed, RetryInner: r.RetryInner}
	if onRetry := r.OnRetry; onRetry != nil {
		// The hook hears of the failure itself. It leaves the response
		// alone: the deadline, checked again once it returns, may still
		// make the Transport give up and return that response (see
		// attemptError.RetryDecided).
		t.retrier.OnRetry = func(ctx context.Context, attempt int, err error, delay time.Duration) {
			onRetry(ctx, attempt, err.(*attemptError).hookErr(), delay) // every failure of an attempt is one
		}
	}
	if h := t.Hedging; h != nil {
		t.setupHedging(*h, r)
	}
	if t.Throttle != nil {
		t.retrier.Policy = t.gate(t.retrier.Policy)
		if t.hedger != nil {
			t.hedger.Policy = t.gate(t.hedger.Policy)
		}
	}
	return nil
}

// baseTransport returns Base, or http.DefaultTransport when it is nil.
func (t *Transport) baseTransport() http.RoundTripper {
	if t.Base == nil {
		return http.DefaultTransport
	}
	return t.Base
}

// CloseIdleConnections closes the idle connections of the base transport,
// when it has such a method; http.Client.CloseIdleConnections calls it.
func (t *Transport) CloseIdleConnections() {
	base := t.baseTransport()
	if c, ok := base.(interface{ CloseIdleConnections() }); ok && !nilness.IsNil(base) {
		c.CloseIdleConnections()
	}
}

// RoundTrip sends req, retrying as the [Transport] documentation says.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req == nil {
		return nil, errNilRequest
	}
	if err := t.init(); err != nil {
		return t.refuse(req, err)
	}
	if err := t.checkURL(req); err != nil {
		return t.refuse(req, err)
	}
	c := call{t: t, req: req}
	c.rewind = req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
	c.idem = c.rewind && t.isIdempotent(req)
	var resp *http.Response
	var err error
	if t.hedger != nil && c.idem {
		resp, c.attempts, err = hedged(c)
	} else {
		resp, err = c.loop()
	}
	if err == nil {
		t.done(req, c.attempts, nil)
		return resp, nil
	}
	if c.attempts == 0 {
		closeBody(req) // never handed to the base transport
	}
	// The loop saw each failure through an *attemptError; the caller sees
	// the failure itself in Error.Err, as backoff.Error promises, and a
	// request that may not be repeated stopped for that reason, not
	// because its error was not retryable.
	var last *attemptError
	stop, _ := err.(*backoff.Error)
	if stop != nil {
		if ae, ok := stop.Err.(*attemptError); ok {
			last, stop.Err = ae, ae.err
			if ae.notRepeatable && stop.Reason == backoff.ErrPermanent {
				stop.Reason = ErrNotRepeatable
			}
		}
	}
	t.done(req, c.attempts, err)
	if last == nil || last.resp == nil {
		return nil, err
	}
	if req.Context().Err() != nil {
		last.discard()
		return nil, err
	}
	resp = last.deliver()
	// CheckResponse returns why: a loop around this RoundTrip must not
	// retry a response retried, or held back, here.
	markGaveUp(resp, req, stop)
	return resp, nil
}

// refuse returns err, a *backoff.ParamError, for req without an attempt:
// it closes req's body and tells OnDone.
func (t *Transport) refuse(req *http.Request, err error) (*http.Response, error) {
	closeBody(req)
	t.done(req, 0, err)
	return nil, err
}

// done tells OnDone, if any, how req's RoundTrip ended.
func (t *Transport) done(req *http.Request, attempts int, err error) {
	if t.onDone != nil {
		t.onDone(req.Context(), attempts, err)
	}
}

var (
	errNilRequest = &backoff.ParamError{Param: "req", Value: nil, Reason: "must not be nil"}
	errNilURL     = &backoff.ParamError{Param: "req.URL", Value: nil, Reason: "must not be nil"}
)

// checkURL rejects a request that an *http.Transport cannot send, every
// time: retrying it could only waste the waits. A control character in the
// request target (from RawQuery or Opaque: Path is escaped) is refused by
// HTTP/1 once the connection is open, and over HTTP/2 makes net/http open
// connection after connection until the context ends.
func (t *Transport) checkURL(req *http.Request) error {
	if req.URL == nil {
		return errNilURL
	}
	if _, ok := t.base.(*http.Transport); ok {
		switch {
		case req.URL.Scheme == "" || req.URL.Host == "":
			return &backoff.ParamError{Param: "req.URL", Value: req.URL.String(), Reason: "must be absolute, with a scheme and a host"}
		case hasCTL(req.URL.RawQuery) || hasCTL(req.URL.Opaque):
			return &backoff.ParamError{Param: "req.URL", Value: req.URL.String(), Reason: "must not hold a control character in RawQuery or Opaque"}
		}
	}
	return nil
}

// hasCTL reports whether s holds an ASCII control character, as net/http
// checks a request target.
func hasCTL(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] == 0x7f {
			return true
		}
	}
	return false
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

func (t *Transport) isIdempotent(req *http.Request) bool {
	if t.Idempotent != nil {
		return t.Idempotent(req)
	}
	return IsIdempotent(req)
}

func (t *Transport) shouldRetry(resp *http.Response, err error) bool {
	if t.ShouldRetry != nil {
		return t.ShouldRetry(resp, err)
	}
	return DefaultShouldRetry(resp, err)
}
