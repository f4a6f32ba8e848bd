package backoffhttp

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/internal/hop"
	"github.com/backoffgo/backoff/internal/nilness"
)

// DefaultMaxRetryAfter is the longest Retry-After a [Transport] honours when
// its MaxRetryAfter is zero. A longer hint makes it give up, unless its
// ClampRetryAfter is set.
const DefaultMaxRetryAfter = 30 * time.Second

// ErrNotRepeatable is the reason a [Transport] stops after an attempt that
// failed with an error, when the request may not be sent again: its method
// is not idempotent and the error does not prove that it was never sent,
// or its body cannot be rewound (see "What is retried" at [Transport]). The
// *[backoff.Error] that RoundTrip returns matches it with errors.Is, and
// does not match [backoff.ErrPermanent]: the error itself might have been
// worth retrying.
var ErrNotRepeatable = errors.New("backoffhttp: request may not be sent again")

// maxDrain and drainTimeout bound what a Transport reads of a response it
// discards, in bytes and in time (see "What RoundTrip returns" at
// Transport). The byte over 64 KiB reads the end of a body of exactly
// 64 KiB, such as the last chunk of a chunked one.
const (
	maxDrain     = 64<<10 + 1
	drainTimeout = time.Second
)

// defaultPolicy is the policy of a Transport whose Policy is nil.
var defaultPolicy = backoff.Must(backoff.NewFullJitter(backoff.Config{
	Base:        200 * time.Millisecond,
	Cap:         10 * time.Second,
	MaxAttempts: 5,
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
// A request whose method is not idempotent, but whose body can be rewound,
// is retried only after an error that proves it was never sent: the
// connection to the server (or proxy) could not be opened, and ShouldRetry
// agrees. Any other outcome of it ends the RoundTrip at once.
//
// # Waiting and stopping
//
// Between attempts the Transport waits as Policy says, or as a response's
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
// transport returned it. When the Transport gives up on a status it would
// have retried (the policy's attempts are spent, its Retry-After is over
// MaxRetryAfter, the next wait would pass the deadline, the budget
// refuses), it returns that last response, body unread, and a nil error,
// as http.Client does for any status.
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
// too; a stalled body never holds a RoundTrip up. Closing a body whose
// read has stalled happens on another goroutine, while the read waits:
// net/http's bodies allow it, and a Base's must too.
//
// # Contract
//
// RoundTrip does not modify the request and always closes its body, as
// http.RoundTripper requires. A Transport is safe for concurrent use by any
// number of goroutines. Its fields must not be changed once it has been
// used, and it must not be copied after first use. An invalid field makes
// every RoundTrip return a *[backoff.ParamError] that names it.
type Transport struct {
	// Base sends each attempt. Nil means http.DefaultTransport.
	Base http.RoundTripper

	// Policy decides how long to wait before each retry and when to stop.
	// Nil means full jitter (backoff.FullJitter) with Base 200 ms, Cap
	// 10 s and MaxAttempts 5: one attempt and up to four retries. The
	// policy is wrapped in a [backoff.RetryAfter] with MaxRetryAfter, so
	// it need not handle Retry-After itself.
	Policy backoff.Policy

	// MaxRetryAfter is the longest Retry-After honoured. At a longer one
	// the Transport gives up and returns that response; OnDone's error
	// then matches [backoff.ErrHintTooLong]. It must not be negative; zero
	// means [DefaultMaxRetryAfter].
	MaxRetryAfter time.Duration

	// RetryInner, when true, retries a response that carries
	// [OverloadedHeader] like any other; by default the Transport returns
	// it at once, since its server has retried already (see [Handler]).
	RetryInner bool

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
	// repeatable request is worth retrying: exactly one of resp and err is
	// non-nil. It must not read or close resp.Body. Nil means
	// [DefaultShouldRetry]. It is not asked about a failure once the
	// request's context has ended, which always stops. It must be safe
	// for concurrent use.
	ShouldRetry func(resp *http.Response, err error) bool

	// Budget, when not nil, limits the retries of every request that
	// shares it to a ratio of requests (see [backoff.Budget]). Share one
	// Budget per downstream service.
	Budget *backoff.Budget

	// OnRetry, when not nil, is called before each wait for a retry of
	// req: attempt is the number of attempts made so far, err the last
	// one's failure (an *[Error] for a status, the transport's error
	// otherwise) and delay the wait about to begin. It is a hook for logs
	// and per-host metrics (req.URL.Host).
	OnRetry func(req *http.Request, attempt int, err error, delay time.Duration)

	// OnDone, when not nil, is called once per RoundTrip, just before it
	// returns: attempts is the number of attempts made (0 when the
	// context ended first); err is nil when RoundTrip returns a response
	// that was not to be retried, and otherwise the *[backoff.Error] that
	// says why the Transport stopped: the error RoundTrip returns or, when
	// it returns the response of a status it gave up on, the reason it
	// gave up.
	//
	// Both hooks run on RoundTrip's goroutine and delay it by the time
	// they take; they must be safe for concurrent use.
	OnDone func(req *http.Request, attempts int, err error)

	once    sync.Once
	initErr error
	base    http.RoundTripper
	retrier *backoff.Retrier
}

// NewClient returns an *http.Client that sends its requests through t, or
// through a Transport with every field at its default when t is nil. The
// client's Timeout, if the caller sets one, bounds the whole exchange,
// retries and waits included.
func NewClient(t *Transport) *http.Client {
	if t == nil {
		t = &Transport{}
	}
	return &http.Client{Transport: t}
}

// IsIdempotent reports whether req may be sent more than once: its method
// is idempotent (RFC 9110, section 9.2.2: GET, HEAD, OPTIONS, TRACE, PUT,
// DELETE; an empty method means GET), or it carries an Idempotency-Key or
// X-Idempotency-Key header, as net/http itself accepts. It says nothing of
// the body (see [Transport]). A nil req is not idempotent.
func IsIdempotent(req *http.Request) bool {
	if req == nil {
		return false
	}
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace,
		http.MethodPut, http.MethodDelete:
		return true
	}
	return hasHeader(req.Header, "Idempotency-Key") || hasHeader(req.Header, "X-Idempotency-Key")
}

// hasHeader reports whether h has key, also with a nil or empty value as
// net/http reads it.
func hasHeader(h http.Header, key string) bool {
	_, ok := h[key]
	return ok
}

// DefaultShouldRetry is the classification a [Transport] uses when its
// ShouldRetry is nil. A response is retried when [RetryableStatus] says so
// (408, 425, 429, 500, 502, 503, 504). An error is retried unless it is
// one of these, found in its chain as errors.As finds errors:
//
//   - a failed check of the server's TLS certificate
//     (*tls.CertificateVerificationError, x509.UnknownAuthorityError,
//     x509.HostnameError, x509.CertificateInvalidError);
//   - a TLS handshake with a server that does not speak TLS
//     (tls.RecordHeaderError, "first record does not look like a TLS
//     handshake"), such as https:// sent to a plain HTTP port;
//   - a request that net/http's Transport refuses before sending it: a
//     plain error (of errors.New, or fmt.Errorf without %w) whose text
//     begins with "unsupported protocol scheme", "net/http: invalid
//     header", "net/http: invalid trailer", "net/http: invalid method",
//     "http: nil Request." or "http: no Host in request URL";
//   - an error whose own Retryable method (see [backoff.Retryable]) says
//     no.
//
// Each is the same at every attempt: a retry cannot mend it.
func DefaultShouldRetry(resp *http.Response, err error) bool {
	if err == nil {
		return resp != nil && RetryableStatus(resp.StatusCode)
	}
	return !certificateError(err) && !notTLS(err) && !refused(err) && backoff.Retryable(err)
}

// notTLS reports whether err is a TLS handshake with a server that does not
// speak TLS.
func notTLS(err error) bool {
	var rh tls.RecordHeaderError
	return errors.As(err, &rh)
}

// refusals begin the texts of the errors of net/http's Transport that
// refuse a request before sending it, all of them plain errors.
var refusals = [...]string{
	"unsupported protocol scheme",
	"net/http: invalid header",
	"net/http: invalid trailer",
	"net/http: invalid method",
	"http: nil Request.",
	"http: no Host in request URL",
}

// plainError is the type of errors.New's values, and fmt.Errorf's without
// %w.
var plainError = reflect.TypeOf(errors.New(""))

// refused reports whether err, or an error it wraps, is net/http's refusal
// to send a request.
func refused(err error) bool {
	for ; err != nil; err = errors.Unwrap(err) {
		if reflect.TypeOf(err) != plainError {
			continue
		}
		for _, prefix := range refusals {
			if strings.HasPrefix(err.Error(), prefix) {
				return true
			}
		}
	}
	return false
}

// certificateError reports whether err is a failed check of a TLS
// certificate.
func certificateError(err error) bool {
	var verify *tls.CertificateVerificationError
	var authority x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	return errors.As(err, &verify) || errors.As(err, &authority) || errors.As(err, &host) || errors.As(err, &invalid)
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
	t.base = t.baseTransport()
	policy := t.Policy
	if policy == nil {
		policy = defaultPolicy
	}
	maxWait := t.MaxRetryAfter
	if maxWait == 0 {
		maxWait = DefaultMaxRetryAfter
	}
	ra, err := backoff.NewRetryAfter(policy, backoff.RetryAfterConfig{MaxWait: maxWait, GiveUp: !t.ClampRetryAfter})
	if err != nil {
		// maxWait is positive: only a Policy that is a nil pointer or func
		// fails, which NewRetryAfter checks.
		return &backoff.ParamError{Param: "Transport.Policy", Value: t.Policy, Reason: "must not be a nil pointer or func; leave it nil for the default"}
	}
	t.retrier = &backoff.Retrier{Policy: ra, Budget: t.Budget, RetryInner: t.RetryInner, OnRetry: t.onRetry}
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
	resp, err := backoff.DoValueWith(req.Context(), c.attempt, t.retrier)
	if err == nil {
		if t.OnDone != nil {
			t.OnDone(req, c.attempts, nil)
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
	if t.OnDone != nil {
		t.OnDone(req, c.attempts, err)
	}
	if last == nil || last.resp == nil {
		return nil, err
	}
	if req.Context().Err() != nil {
		last.discard()
		return nil, err
	}
	resp = last.deliver()
	if stop.RetriedBelow() {
		// Retried, or held back, here: a loop around this RoundTrip must
		// not retry the response again (see CheckResponse).
		resp.Body = &retriedBody{resp.Body}
	}
	return resp, nil
}

// retriedBody is the body of a response that a Transport returns after
// retrying it, by which CheckResponse knows.
type retriedBody struct{ io.ReadCloser }

var (
	errNilRequest = &backoff.ParamError{Param: "req", Value: nil, Reason: "must not be nil"}
	errNilURL     = &backoff.ParamError{Param: "req.URL", Value: nil, Reason: "must not be nil"}
)

// checkURL rejects a request that an *http.Transport would refuse without
// sending it, every time: retrying it could only waste the waits.
func (t *Transport) checkURL(req *http.Request) error {
	if req.URL == nil {
		return errNilURL
	}
	if _, ok := t.base.(*http.Transport); ok && (req.URL.Scheme == "" || req.URL.Host == "") {
		return &backoff.ParamError{Param: "req.URL", Value: req.URL.String(), Reason: "must be absolute, with a scheme and a host"}
	}
	return nil
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

// onRetry is the Retrier's OnRetry: the retry is decided, so the response
// being retried is discarded before the wait, and the user's hook is told.
func (t *Transport) onRetry(_ context.Context, attempt int, err error, delay time.Duration) {
	ae := err.(*attemptError) // every failure of an attempt is one
	ae.discard()
	if t.OnRetry != nil {
		t.OnRetry(ae.req, attempt, ae.err, delay)
	}
}

// call is the state of one RoundTrip.
type call struct {
	t        *Transport
	req      *http.Request
	rewind   bool // the body can be sent again
	idem     bool // the request may be sent again: rewind and idempotent
	attempts int
}

// attempt sends the request once more; backoff.DoValue calls it.
func (c *call) attempt(ctx context.Context) (*http.Response, error) {
	c.attempts++
	r := c.req
	if c.attempts > 1 && r.Body != nil && r.Body != http.NoBody {
		body, err := r.GetBody()
		if err != nil {
			return nil, backoff.Permanent(&getBodyError{err})
		}
		r2 := *r
		r2.Body = body
		r = &r2
	}
	var a *attemptTimer
	if d := c.t.AttemptTimeout; d > 0 {
		a = startTimer(ctx, d)
		r = r.WithContext(a.ctx)
	}
	resp, err := c.t.base.RoundTrip(r)
	if err != nil {
		if a != nil {
			if !a.timer.Stop() && ctx.Err() == nil {
				err = a.expired(err)
			}
			a.cancel(nil)
		}
		return nil, c.failure(ctx, err)
	}
	// A response in hand wins over the timer, even when it fired as the
	// response came: the server has answered.
	if a != nil {
		a.timer.Stop()
	}
	if !c.idem || !c.t.shouldRetry(resp, nil) {
		if a != nil {
			a.attach(resp)
		}
		if overloaded(resp) {
			hop.Mark(c.req.Context()) // a loop below retried it: say so upwards
		}
		return resp, nil
	}
	ae := &attemptError{req: c.req, resp: resp, retry: true, timer: a}
	ae.status = statusError(resp)
	ae.err = &ae.status
	return nil, ae
}

// failure returns the attemptError of an attempt that failed with err: it
// is retried when the request may be sent again and ShouldRetry agrees.
// ShouldRetry is not asked once the context has ended, which stops the
// loop anyway.
func (c *call) failure(ctx context.Context, err error) *attemptError {
	ae := &attemptError{err: err, req: c.req}
	switch {
	case ctx.Err() != nil:
	case !c.rewind || !c.idem && !notSent(err):
		ae.notRepeatable = true
	default:
		ae.retry = c.t.shouldRetry(nil, err)
	}
	return ae
}

// attemptTimer is the per-attempt timeout of one attempt: a context that
// a timer ends, with a *timeoutError as its cause, stopped once the
// response headers are in.
type attemptTimer struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	timer  *time.Timer
	d      time.Duration
}

func startTimer(parent context.Context, d time.Duration) *attemptTimer {
	a := &attemptTimer{d: d}
	a.ctx, a.cancel = context.WithCancelCause(parent)
	a.timer = time.AfterFunc(d, a.expire)
	return a
}

// expire ends the attempt's context with its timeout as the cause, which
// is what net/http's HTTP/1 transport then returns.
func (a *attemptTimer) expire() { a.cancel(&timeoutError{timeout: a.d}) }

// expired returns the failure of an attempt that ran out of time and
// failed with err. An err that matches a context error is the end of the
// attempt's context as the base transport reports it (context.Canceled
// from HTTP/2 or a dial, the cause from HTTP/1): it says nothing more and
// is dropped, so that the failure never reads as a cancellation. Any other
// err is kept.
func (a *attemptTimer) expired(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		err = nil
	}
	return &timeoutError{timeout: a.d, err: err}
}

// attach makes closing resp's body end the attempt's context.
func (a *attemptTimer) attach(resp *http.Response) {
	if rwc, ok := resp.Body.(io.ReadWriteCloser); ok {
		resp.Body = &cancelReadWriteCloser{cancelReadCloser{rwc, a.cancel}, rwc}
		return
	}
	resp.Body = &cancelReadCloser{resp.Body, a.cancel}
}

// cancelReadCloser is a response body that ends its attempt's context when
// closed.
type cancelReadCloser struct {
	io.ReadCloser
	cancel context.CancelCauseFunc
}

func (b *cancelReadCloser) Close() error {
	err := b.ReadCloser.Close()
	b.cancel(nil)
	return err
}

// cancelReadWriteCloser is cancelReadCloser for the writable body of a
// 101 Switching Protocols response: Writer is the same body.
type cancelReadWriteCloser struct {
	cancelReadCloser
	io.Writer
}

// timeoutError is the failure of an attempt that ran out of AttemptTimeout.
type timeoutError struct {
	timeout time.Duration
	err     error // what the base transport returned, unless it was the timeout itself
}

func (e *timeoutError) Error() string {
	msg := "backoffhttp: attempt timed out after " + e.timeout.String() + " (Transport.AttemptTimeout)"
	if e.err != nil {
		msg += ": " + e.err.Error()
	}
	return msg
}

// Is makes a timed-out attempt match context.DeadlineExceeded.
func (e *timeoutError) Is(target error) bool { return target == context.DeadlineExceeded }

// Timeout reports true, as net.Error's Timeout does for a timeout.
func (e *timeoutError) Timeout() bool { return true }

// Unwrap returns the base transport's error, nil when it said only that
// the attempt's context ended.
func (e *timeoutError) Unwrap() error { return e.err }

// notSent reports whether err proves that the request never left: the
// connection could not be opened.
func notSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// attemptError is what an attempt returns to the loop when it failed or got
// a status to retry. It stands in the loop for its err: Error, Unwrap and
// the hint are err's, Retryable is the Transport's verdict.
type attemptError struct {
	err    error          // &status for a status; the transport's error otherwise
	req    *http.Request  // the caller's request, for the hooks
	resp   *http.Response // the response of a status, body unread; nil otherwise and once discarded
	timer  *attemptTimer  // the attempt's timeout, when there is one
	retry  bool           // the Transport's verdict: retry it
	status Error

	// notRepeatable: the request may not be sent again, so the loop stops
	// with ErrNotRepeatable (retry is false).
	notRepeatable bool
}

func (e *attemptError) Error() string { return e.err.Error() }

// Unwrap returns the failure: an *Error or the transport's error.
func (e *attemptError) Unwrap() error { return e.err }

// Retryable reports the Transport's verdict on the failure. The hint, if
// any, is found through Unwrap, as for any error: a status's Retry-After,
// or one that a base transport's error carries.
func (e *attemptError) Retryable() bool { return e.retry }

// discard drains and closes the response, then ends its attempt; it does
// so once, however often it is called.
func (e *attemptError) discard() {
	if e.resp == nil {
		return
	}
	body := e.resp.Body
	e.resp = nil
	drain(body)
	if e.timer != nil {
		e.timer.cancel(nil)
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

// drain reads body until it ends, but for at most maxDrain bytes and
// drainTimeout, and closes it, once: by then, or from the timer's
// goroutine when the time runs out, which ends the read that waits.
func drain(body io.ReadCloser) {
	timer := time.AfterFunc(drainTimeout, func() { body.Close() })
	io.Copy(io.Discard, io.LimitReader(body, maxDrain))
	if timer.Stop() {
		body.Close()
	}
}

// getBodyError is the failure of Request.GetBody to rewind a body.
type getBodyError struct{ err error }

func (e *getBodyError) Error() string {
	return "backoffhttp: Request.GetBody failed, the body cannot be sent again: " + e.err.Error()
}

func (e *getBodyError) Unwrap() error { return e.err }
