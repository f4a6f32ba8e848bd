package backoffhttp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"
)

// attemptTimer is the per-attempt timeout of one attempt: a context that
// a timer ends, with a *timeoutError as its cause, stopped once the
// response headers are in.
type attemptTimer struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	timer  *time.Timer
	d      time.Duration
	body   cancelReadCloser // the body of the response attached, in the same allocation
}

func startTimer(parent context.Context, d time.Duration) *attemptTimer {
	a := &attemptTimer{d: d}
	a.ctx, a.cancel = context.WithCancelCause(parent)
	if d > 0 {
		a.timer = time.AfterFunc(d, a.expire)
	}
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
	a.body = cancelReadCloser{resp.Body, a.cancel}
	resp.Body = &a.body
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
