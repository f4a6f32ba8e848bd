package backoffhttp

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/backoffgo/backoff"
)

// TestTransportCertificateError: a TLS server the client does not trust is
// not retried.
func TestTransportCertificateError(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshake fails on purpose
	srv.StartTLS()
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL, nil)
	r := roundTrip(t, &Transport{Retrier: retrier(fast), Base: &http.Transport{}}, req)
	if r.err == nil || !errors.Is(r.err, backoff.ErrPermanent) || r.attempts != 1 {
		t.Errorf("RoundTrip = %v after %d attempts; want a certificate error, not retried", r.err, r.attempts)
	}
}

// TestTransportUnmendableErrors: errors that no retry can mend end the
// RoundTrip at the first attempt: net/http's refusals of a request it
// cannot send, and TLS spoken to a server that does not speak it.
func TestTransportUnmendableErrors(t *testing.T) {
	srv := newServer(t, ok("hi"))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	host := strings.TrimPrefix(srv.URL, "http://")
	tests := []struct {
		name   string
		method string
		url    string
		header http.Header
		want   string
	}{
		{"unsupported scheme", "GET", "ftp://" + host + "/", nil, `unsupported protocol scheme "ftp"`},
		{"invalid header field value", "GET", srv.URL, http.Header{"X-Bad": {"a\nb"}}, `net/http: invalid header field value for "X-Bad"`},
		{"invalid header field name", "GET", srv.URL, http.Header{"Bad Name": {"x"}}, `net/http: invalid header field name "Bad Name"`},
		{"invalid method", "BAD METHOD", srv.URL, http.Header{"Idempotency-Key": {"k"}}, `net/http: invalid method "BAD METHOD"`},
		{"https to a plain HTTP server", "GET", "https://" + host + "/", nil, "first record does not look like a TLS handshake"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest("GET", tt.url, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Method = tt.method
			for k, v := range tt.header {
				req.Header[k] = v
			}
			r := roundTrip(t, &Transport{Base: &http.Transport{}, Retrier: retrier(fast)}, req)
			if r.resp != nil || !errors.Is(r.err, backoff.ErrPermanent) || r.attempts != 1 || !strings.Contains(r.err.Error(), tt.want) {
				t.Errorf("RoundTrip = %v, %v after %d attempts; want %q at the first, not retried", r.resp, r.err, r.attempts, tt.want)
			}
			if e, ok := r.err.(*backoff.Error); !ok || DefaultShouldRetry(nil, e.Err) {
				t.Errorf("DefaultShouldRetry(nil, %v) = true", r.err)
			}
		})
	}
	if srv.attempts.Load() != 0 {
		t.Errorf("the server's handler saw %d requests; want none", srv.attempts.Load())
	}
	var rh tls.RecordHeaderError
	for _, err := range []error{rh, &url.Error{Op: "Get", URL: "x", Err: errors.New(`unsupported protocol scheme "gopher"`)}} {
		if DefaultShouldRetry(nil, err) {
			t.Errorf("DefaultShouldRetry(nil, %v) = true", err)
		}
	}
	// The same words in an error of another kind are not net/http's
	// refusal; the refusals are plain errors.
	other := &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset")}
	for _, err := range []error{other, errors.New("net/http: HTTP/1.x transport connection broken"), io.ErrUnexpectedEOF} {
		if !DefaultShouldRetry(nil, err) {
			t.Errorf("DefaultShouldRetry(nil, %v) = false", err)
		}
	}
}

// TestTransportNotRepeatable: a request that may not be sent again stops
// with ErrNotRepeatable, not with "error is not retryable".
func TestTransportNotRepeatable(t *testing.T) {
	tests := []struct {
		name      string
		method    string
		header    http.Header
		noGetBody bool
	}{
		{name: "POST", method: "POST"},
		{name: "PUT whose body cannot be rewound", method: "PUT", noGetBody: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, resetMidResponse, ok("hi"))
			var body io.Reader = strings.NewReader("data")
			if tt.noGetBody {
				body = io.NopCloser(body)
			}
			req, _ := http.NewRequest(tt.method, srv.URL, body)
			r := roundTrip(t, &Transport{Base: srv.Client().Transport, Retrier: retrier(fast)}, req)
			for _, err := range []error{r.err, r.doneErr} {
				if !errors.Is(err, ErrNotRepeatable) || errors.Is(err, backoff.ErrPermanent) ||
					!strings.Contains(err.Error(), "(backoffhttp: request may not be sent again)") {
					t.Errorf("%v; want ErrNotRepeatable, not ErrPermanent", err)
				}
			}
			if r.resp != nil || r.attempts != 1 || srv.attempts.Load() != 1 {
				t.Errorf("RoundTrip = %v after %d attempts; want an error after 1", r.resp, r.attempts)
			}
		})
	}
}

// TestTransportRefusedNotRepeatable: a request that net/http refuses
// before sending anything (an invalid method, which is not idempotent)
// was not sent and cannot be mended: it stops with ErrPermanent, not with
// ErrNotRepeatable, whose doc says it may have been sent. A ShouldRetry
// that retries refusals has a rewindable one retried, and one whose body
// cannot be rewound stops with ErrNotRepeatable.
func TestTransportRefusedNotRepeatable(t *testing.T) {
	srv := newServer(t, ok("hi"))
	tests := []struct {
		name        string
		body        func() io.Reader // nil: no body
		noGetBody   bool
		shouldRetry bool // ShouldRetry says yes to everything
		want        error
		attempts    int
	}{
		{name: "no body", want: backoff.ErrPermanent, attempts: 1},
		{name: "rewindable body", body: func() io.Reader { return strings.NewReader("data") }, want: backoff.ErrPermanent, attempts: 1},
		{name: "body without GetBody", body: func() io.Reader { return strings.NewReader("data") }, noGetBody: true, want: backoff.ErrPermanent, attempts: 1},
		{name: "rewindable body, ShouldRetry yes", body: func() io.Reader { return strings.NewReader("data") }, shouldRetry: true, want: backoff.ErrExhausted, attempts: 4},
		{name: "body without GetBody, ShouldRetry yes", body: func() io.Reader { return strings.NewReader("data") }, noGetBody: true, shouldRetry: true, want: ErrNotRepeatable, attempts: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body io.Reader
			if tt.body != nil {
				body = tt.body()
			}
			req, _ := http.NewRequest("GET", srv.URL, body)
			req.Method = "GE T"
			if tt.noGetBody {
				req.GetBody = nil
			}
			tr := &Transport{Base: srv.Client().Transport, Retrier: retrier(fast)}
			if tt.shouldRetry {
				tr.ShouldRetry = func(*http.Response, error) bool { return true }
			}
			r := roundTrip(t, tr, req)
			for _, err := range []error{r.err, r.doneErr} {
				if !errors.Is(err, tt.want) || tt.want != ErrNotRepeatable && errors.Is(err, ErrNotRepeatable) ||
					!strings.Contains(err.Error(), `net/http: invalid method "GE T"`) {
					t.Errorf("%v; want %v", err, tt.want)
				}
			}
			if r.resp != nil || r.attempts != tt.attempts {
				t.Errorf("RoundTrip = %v after %d attempts; want an error after %d", r.resp, r.attempts, tt.attempts)
			}
		})
	}
	if srv.attempts.Load() != 0 {
		t.Errorf("the server saw %d requests; want none", srv.attempts.Load())
	}
}

// TestDefaultShouldRetryRefusals: every refusal of net/http's Transport
// that DefaultShouldRetry names stops, as itself or wrapped, and only as a
// plain error.
func TestDefaultShouldRetryRefusals(t *testing.T) {
	for _, msg := range []string{
		`unsupported protocol scheme "ftp"`,
		`net/http: invalid header field name "a b"`,
		`net/http: invalid trailer field value for "T"`,
		`net/http: invalid method "A B"`,
		"http: nil Request.Header",
		"http: no Host in request URL",
	} {
		plain := errors.New(msg)
		for _, err := range []error{plain, &url.Error{Op: "Get", URL: "u", Err: plain}} {
			if DefaultShouldRetry(nil, err) {
				t.Errorf("DefaultShouldRetry(nil, %v) = true", err)
			}
		}
		if !DefaultShouldRetry(nil, backoff.WithRetryAfter(errors.New("EOF"), 0)) {
			t.Errorf("DefaultShouldRetry(nil, EOF) = false")
		}
	}
	if !DefaultShouldRetry(nil, errors.New("read: connection reset by peer")) {
		t.Error("DefaultShouldRetry of a plain reset = false")
	}
}

// TestTransportShouldRetryNotAskedAfterCancel: ShouldRetry is not asked
// about a failure once the request's context has ended.
func TestTransportShouldRetryNotAskedAfterCancel(t *testing.T) {
	srv := newServer(t, resetMidResponse)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base := roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := srv.Client().Transport.RoundTrip(req)
		cancel()
		return resp, err
	})
	var asked atomic.Int32
	tr := &Transport{Base: base, Retrier: retrier(fast), ShouldRetry: func(*http.Response, error) bool { asked.Add(1); return true }}
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	r := roundTrip(t, tr, req)
	if !errors.Is(r.err, context.Canceled) || r.attempts != 1 || asked.Load() != 0 {
		t.Errorf("RoundTrip = %v after %d attempts, ShouldRetry asked %d times; want context.Canceled after 1, not asked", r.err, r.attempts, asked.Load())
	}
}

// TestCertificateErrorsNotRetried: a failed check of the server's
// certificate is not retried however it arrives: a bare
// x509.UnknownAuthorityError, as a client's own VerifyPeerCertificate
// returns it from a real handshake, and a *tls.CertificateVerificationError
// that holds no x509 error.
func TestCertificateErrorsNotRetried(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes fail on purpose
	srv.StartTLS()
	defer srv.Close()
	ownCheck := &http.Transport{TLSClientConfig: &tls.Config{
		InsecureSkipVerify: true, // replaced by VerifyPeerCertificate, against the system's roots
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			cert, err := x509.ParseCertificate(raw[0])
			if err != nil {
				return err
			}
			_, err = cert.Verify(x509.VerifyOptions{Roots: x509.NewCertPool()})
			return err
		},
	}}
	req, _ := http.NewRequest("GET", srv.URL, nil)
	r := roundTrip(t, &Transport{Retrier: retrier(fast), Base: ownCheck}, req)
	var authority x509.UnknownAuthorityError
	var verify *tls.CertificateVerificationError
	if !errors.As(r.err, &authority) || errors.As(r.err, &verify) || !errors.Is(r.err, backoff.ErrPermanent) || r.attempts != 1 {
		t.Errorf("RoundTrip = %v after %d attempts; want a bare x509.UnknownAuthorityError, not retried", r.err, r.attempts)
	}
	for _, err := range []error{
		x509.UnknownAuthorityError{},
		&tls.CertificateVerificationError{Err: errors.New("the certificate was revoked")},
	} {
		if DefaultShouldRetry(nil, &net.OpError{Op: "remote error", Err: err}) {
			t.Errorf("%T retried", err)
		}
	}
}

// TestTransportRefusedAfterDial: net/http also refuses a request once its
// connection is open, before writing a byte of it: a control character in
// the request target (a RawQuery built by hand from user input), or an
// invalid Host sent to a proxy; over HTTP/2, an invalid Host or a control
// character in URL.Opaque, a Connection header other than close or
// keep-alive. A retry cannot mend any. A GET was sent 4
// times, waits included, and a POST stopped with ErrNotRepeatable ("may
// have been sent"); each now stops after its one attempt with
// ErrPermanent, and the servers see nothing. (Over HTTP/1, net/http
// sometimes reports the read of the connection it closed instead of the
// refusal; such a try is made again, up to 5 times.)
func TestTransportRefusedAfterDial(t *testing.T) {
	srv := newServer(t, ok("hi"))
	proxy, _ := url.Parse(srv.URL)
	var h2Attempts atomic.Int32
	h2 := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { h2Attempts.Add(1) }))
	h2.EnableHTTP2 = true
	h2.StartTLS()
	defer h2.Close()
	tests := []struct {
		name  string
		url   string
		base  http.RoundTripper
		edit  func(req *http.Request)
		error string
	}{
		// Through a middleware: over an *http.Transport itself, the
		// Transport refuses it before sending (TestTransportControlCharacter).
		{"control character in the query", srv.URL, wrapBodies{&http.Transport{}}, func(req *http.Request) { req.URL.RawQuery = "q=a\nb" },
			"net/http: can't write control character in Request.URL"},
		{"invalid Host to a proxy", srv.URL, &http.Transport{Proxy: http.ProxyURL(proxy)}, func(req *http.Request) { req.Host = "a b" },
			"http: invalid Host header"},
		{"HTTP/2, invalid Host", h2.URL, h2.Client().Transport, func(req *http.Request) { req.Host = "a b" },
			"http2: invalid Host header"},
		{"HTTP/2, control character in URL.Opaque", h2.URL, wrapBodies{h2.Client().Transport}, func(req *http.Request) { req.URL.Opaque = "//x/\x01" },
			"http2: invalid request :path"},
		{"HTTP/2, Connection header", h2.URL, h2.Client().Transport, func(req *http.Request) { req.Header.Set("Connection", "upgrade") },
			"http2: invalid Connection request header"},
	}
	for _, tt := range tests {
		for _, method := range []string{"GET", "POST"} {
			t.Run(tt.name+"/"+method, func(t *testing.T) {
				if c, ok := tt.base.(interface{ CloseIdleConnections() }); ok {
					defer c.CloseIdleConnections()
				}
				var r result
				for try := 1; ; try++ {
					req, _ := http.NewRequest(method, tt.url, strings.NewReader("data"))
					tt.edit(req)
					r = roundTrip(t, &Transport{Base: tt.base, Retrier: retrier(fast)}, req)
					// HTTP/1's Transport closes the connection when the
					// write fails, and now and then reports the read that
					// this ends instead of the refusal: the Transport can
					// only take that for a failure in flight.
					first := r.err
					if len(r.retries) > 0 {
						first = r.retries[0]
					}
					if try == 5 || first == nil || !strings.Contains(first.Error(), "use of closed network connection") {
						break
					}
					t.Logf("try %d: net/http reported %v; again", try, first)
				}
				if r.resp != nil || r.attempts != 1 || !errors.Is(r.err, backoff.ErrPermanent) || errors.Is(r.err, ErrNotRepeatable) ||
					!strings.Contains(r.err.Error(), tt.error) {
					t.Errorf("RoundTrip = %v, %v after %d attempts (retried: %v); want %q, ErrPermanent, after 1", r.resp, r.err, r.attempts, r.retries, tt.error)
				}
			})
		}
	}
	if n, n2 := srv.attempts.Load(), h2Attempts.Load(); n != 0 || n2 != 0 {
		t.Errorf("the servers saw %d and %d requests; want none", n, n2)
	}
}
