package backoffhttp

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/internal/nilness"
)

// DefaultMaxRetryAfter is the longest Retry-After a [Transport] honours when
// its MaxRetryAfter is zero. A longer hint makes it give up, unless its
// ClampRetryAfter is set.
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
// safely repeat, with the policies of package backoff. Its zero value is
// ready to use and wraps http.DefaultTransport; [NewClient] returns an
// *http.Client that uses one.
//
// # What is retried
//
// A request is retried only when sending it again is safe:
//
//   - its method is idempotent ([IsIdempotent]: GET, HEAD, OPTIONS, TRACE,
//     PUT, DELETE, or any request with an Idempotency-Key header), unless
//     the Idempotent field says otherwise; and
//   - it has no body, or its body can be rewound: http.NewRequest sets
//     Request.GetBody for the usual in-memory bodies, and each retry sends
//     a fresh body from GetBody. A request with a body and no GetBody is
//     sent once; the Transport never buffers a body to replay it.
//
// For such a request, ShouldRetry (by default [DefaultShouldRetry])
// decides which outcomes are retried: by default the statuses of
// [RetryableStatus] and the transport errors that a retry may mend.
//
// Each retry carries [AttemptCountHeader] with its number; a response that
// says [DontRetryHeader] is not retried, whatever its status, unless
// its Retrier's RetryInner is set.
//
// A request whose method is not idempotent, but whose body can be rewound,
// is retried only after an error that proves it was never sent, and
// ShouldRetry agrees: the connection to the server (or proxy) could not be
// opened, or net/http refused to send the request (see
// [DefaultShouldRetry], which does not retry such a refusal). Any other
// outcome of it ends the RoundTrip at once.
//
// # Waiting and stopping
//
// Between attempts the Transport waits as its Retrier's Policy says, or as a response's
// Retry-After says (measured from its Date header when that is valid) when
// it has one. A Retry-After longer than MaxRetryAfter makes it give up, as
// the server asked not to be called again before then (RFC 9110, section
// 10.2.3); with ClampRetryAfter it waits MaxRetryAfter and retries instead.
// It runs the loop of [backoff.Do]: the request's context cancels a wait
// at once, a retry that could not start before the context's deadline is
// not waited for, and a shared Budget limits the retries of all requests
// that use it (see [backoff.Retrier]).
//
// # What RoundTrip returns
//
// A response that is not retried (a success, a status that is not retried,
// any status of a request that may not be repeated) is returned as the base
// transport returned it, except that a nil Body, which http.Client takes
// for an empty one, is made http.NoBody, as on every other path. When the
// Transport gives up on a status it would have retried (the policy's
// attempts are spent, its Retry-After is over MaxRetryAfter, the next wait
// would pass the deadline, the budget refuses), it returns that last
// response, body unread, and a nil error, as http.Client does for any
// status; [CheckResponse] returns why it gave up. If the request's context has
// ended by then (a deadline that passed while OnRetry ran, say), that
// response, whose body could no longer be read, is drained and closed,
// and RoundTrip returns the error instead.
//
// Otherwise RoundTrip returns a nil response and a *[backoff.Error] that
// wraps the last attempt's error and says why it stopped: errors.Is
// matches [backoff.ErrPermanent] (an error that is not retried),
// [ErrNotRepeatable] (an error of a request that may not be sent again),
// [backoff.ErrExhausted], [backoff.ErrDeadline], [backoff.ErrBudget] or the
// context's error, and the last error's own chain.
//
// Every response it does not return is drained and closed, exactly once,
// so that its connection can be reused: its body is read until it ends,
// but for at most 64 KiB and one byte (so any body of up to 64 KiB is read
// to its end, whatever its framing) and for at most one second. A body
// that has not ended by then is closed unread, which closes its connection
// too. The drain runs on a goroutine of its own, which ends within that
// second: it never delays a decision, a retry or the return of RoundTrip.
// A retry that starts before it ends closes that body first (over HTTP/1,
// its connection too), so that the retry never waits for it, even when
// the base transport may open no other connection (MaxConnsPerHost).
// Closing a body whose read has stalled happens on another goroutine,
// while the read waits: net/http's bodies allow it, and a Base's must too.
//
// # Contract
//
// RoundTrip does not modify the request and always closes its body, as
// http.RoundTripper requires. A Transport is safe for concurrent use by any
// number of goroutines. Its fields must not be changed once it has been
// used, and it must not be copied after first use. An invalid field makes
// every RoundTrip return a *[backoff.ParamError] that names it. So does a
// request that could never be sent, without an attempt: a nil req or
// req.URL and, when Base is an *http.Transport (or nil), a URL without a
// scheme or a host, or with a control character in RawQuery or Opaque.
type Transport struct {
	// Base sends each attempt. Nil means http.DefaultTransport. A response
	// it returns beside an error, against http.RoundTripper's contract, is
	// drained and closed, and the error stands.
	Base http.RoundTripper

	// Retrier runs the loop: its Policy, wrapped in a [backoff.RetryAfter]
	// with MaxRetryAfter, its Budget, MaxElapsed and RetryInner, and its
	// hooks, which get the request's context. Nil means [DefaultRetrier].
	// OnRetry's err is the attempt's failure: a *[StatusError] for a
	// status, the transport's error otherwise. OnDone is called once per
	// RoundTrip, before it returns: attempts is 0 when the context ended
	// first; err is nil when RoundTrip returns a response that was not to
	// be retried, and otherwise the *[backoff.Error] that says why the
	// Transport stopped, which [CheckResponse] returns for a response it
	// gave up on. The Retrier is read at the first RoundTrip.
	Retrier *backoff.Retrier

	// MaxRetryAfter is the longest Retry-After honoured. At a longer one
	// the Transport gives up and returns that response; OnDone's error
	// then matches [backoff.ErrHintTooLong]. It must not be negative; zero
	// means [DefaultMaxRetryAfter].
	MaxRetryAfter time.Duration

	// ClampRetryAfter, when true, makes a Retry-After longer than
	// MaxRetryAfter wait MaxRetryAfter and retry, instead of giving up.
	ClampRetryAfter bool

	// AttemptTimeout, when positive, bounds each attempt from the moment
	// it is sent until its response headers have arrived. An attempt that
	// runs out of time fails with an error that matches
	// context.DeadlineExceeded, not context.Canceled, and whose Timeout
	// method reports true (so do the *backoff.Error and http.Client's
	// *url.Error that wrap it); it is retried like any transport error.
	// A response that the base transport returns with a nil error is kept
	// even when the time ran out as it arrived: the server has answered,
	// so it is returned or retried as if it had come in time, though its
	// body may fail to read with the timeout's error, the attempt's
	// context having ended. The body of the response RoundTrip returns is
	// not bound by AttemptTimeout, only by the request's context. Zero
	// means no per-attempt timeout; it must not be negative.
	AttemptTimeout time.Duration

	// Idempotent reports whether a request may be sent more than once
	// (see "What is retried"). Nil means [IsIdempotent]. Return true for
	// a POST the server deduplicates to have it retried. A body without
	// GetBody still makes a request unrepeatable. It must be safe for
	// concurrent use.
	Idempotent func(req *http.Request) bool

	// ShouldRetry reports whether the outcome of an attempt of a
	// repeatable request, or net/http's refusal to send any request, is
	// worth retrying: exactly one of resp and err is non-nil. It must not
	// read or close resp.Body. Nil means [DefaultShouldRetry]. It is not
	// asked about a failure once the request's context has ended, which
	// always stops. It must be safe for concurrent use.
	ShouldRetry func(resp *http.Response, err error) bool

	onDone  func(ctx context.Context, attempts int, err error)
	once    sync.Once
	initErr error
	base    http.RoundTripper
	retrier *backoff.Retrier
}

// init validates t's fields and builds the loop, once.
func (t *Transport) init() error {
	t.once.Do(func() {
		t.initErr = t.setup()
	})
	return t.initErr
}

func (t *Transport) setup() error {
	switch {
	case t.MaxRetryAfter < 0:
		return &backoff.ParamError{Param: "Transport.MaxRetryAfter", Value: t.MaxRetryAfter, Reason: "must not be negative"}
	case t.AttemptTimeout < 0:
		return &backoff.ParamError{Param: "Transport.AttemptTimeout", Value: t.AttemptTimeout, Reason: "must not be negative"}
	case t.Base != nil && nilness.IsNil(t.Base):
		return &backoff.ParamError{Param: "Transport.Base", Value: t.Base, Reason: "must not be a nil pointer; leave it nil for http.DefaultTransport"}
	}
	r := t.Retrier
	if r == nil {
		r = DefaultRetrier()
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
			onRetry(ctx, attempt, err.(*attemptError).err, delay) // every failure of an attempt is one
		}
	}
	t.onDone = r.OnDone
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
		closeBody(req)
		return nil, err
	}
	if err := t.checkURL(req); err != nil {
		closeBody(req)
		return nil, err
	}
	c := call{t: t, req: req}
	c.rewind = req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
	c.idem = c.rewind && t.isIdempotent(req)
	resp, err := c.loop()
	if err == nil {
		if t.onDone != nil {
			t.onDone(req.Context(), c.attempts, nil)
		}
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
	if t.onDone != nil {
		t.onDone(req.Context(), c.attempts, err)
	}
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
