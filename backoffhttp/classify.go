package backoffhttp

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"strings"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/internal/errchain"
)

// ErrNotRepeatable is the reason a [Transport] stops after an attempt that
// failed with an error, when the request may not be sent again: its method
// is not idempotent and the error does not prove that it was never sent,
// or its body cannot be rewound (see "What is retried" at [Transport]). A
// request that net/http refused to send, which a retry cannot mend, stops
// with [backoff.ErrPermanent] instead, unless ShouldRetry would retry it. The
// *[backoff.Error] that RoundTrip returns matches it with errors.Is, and
// does not match [backoff.ErrPermanent]: the error itself might have been
// worth retrying.
var ErrNotRepeatable = errors.New("backoffhttp: request may not be sent again")

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
//     "http: nil Request.", "http: no Host in request URL", or, refused
//     once the connection is open but before a byte of the request is
//     written, "net/http: can't write control character in Request.URL"
//     or "http: invalid Host header"; over HTTP/2, whose errors of this
//     kind wrap a plain one in "http2: ", the plain one begins with
//     "invalid Host header", "invalid :protocol header", "invalid request
//     :path", "invalid HTTP header", "invalid HTTP trailer", "invalid
//     Trailer key", "invalid Upgrade request header", "invalid
//     Transfer-Encoding request header" or "invalid Connection request
//     header";
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
// refuse a request before sending it, all of them plain errors: checks of
// the request, then those of writing an HTTP/1 request once its
// connection is open (before its first byte), then those of encoding the
// headers of an HTTP/2 one (which net/http wraps in "http2: ").
var refusals = [...]string{
	"unsupported protocol scheme",
	"net/http: invalid header",
	"net/http: invalid trailer",
	"net/http: invalid method",
	"http: nil Request.",
	"http: no Host in request URL",

	"net/http: can't write control character in Request.URL",
	"http: invalid Host header",

	"invalid Host header",
	"invalid :protocol header",
	"invalid request :path",
	"invalid HTTP header",
	"invalid HTTP trailer",
	"invalid Trailer key",
	"invalid Upgrade request header",
	"invalid Transfer-Encoding request header",
	"invalid Connection request header",
}

// refused reports whether err, or an error in its chain (every branch of an
// errors.Join too), is net/http's refusal to send a request.
func refused(err error) bool { return errchain.Walk(err, refusal) }

// refusal stops at a plain error whose text begins with one of refusals.
func refusal(err error) errchain.Step {
	if errchain.IsPlain(err) {
		for _, prefix := range refusals {
			if strings.HasPrefix(err.Error(), prefix) {
				return errchain.Stop
			}
		}
	}
	return errchain.Continue
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

// notSent reports whether err proves that the request never left: the
// connection could not be opened.
func notSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// getBodyError is the failure of Request.GetBody to rewind a body.
type getBodyError struct{ err error }

func (e *getBodyError) Error() string {
	return "backoffhttp: Request.GetBody failed, the body cannot be sent again: " + e.err.Error()
}

func (e *getBodyError) Unwrap() error { return e.err }
