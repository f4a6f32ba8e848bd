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
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
)

// The tests of this file pin edges of issue 32, section 4.

// TestTransportControlCharacterEnds: the URL check refuses exactly the
// control characters, 0x00 to 0x1f and 0x7f: 0x1f and 0x7f are refused
// before a connection is opened; a space (0x20) and a tilde (0x7e) are
// left to the base transport, as is a plain query string, which reaches
// the server.
func TestTransportControlCharacterEnds(t *testing.T) {
	var conns atomic.Int32
	var queries atomic.Value
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		queries.Store(r.URL.RawQuery)
	}))
	countConns(srv, &conns)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.Start()
	defer srv.Close()
	for _, tt := range []struct {
		query   string
		refused bool // a *backoff.ParamError, no connection
		reached bool // the handler saw the query
	}{
		{"q=a\x1fb", true, false},
		{"q=a\x7fb", true, false},
		{"q=a b", false, false}, // sent, a request line the server answers with 400
		{"q=a~b", false, true},
		{"q=1&r=two", false, true},
	} {
		conns.Store(0)
		queries.Store("")
		req, _ := http.NewRequest("GET", srv.URL, nil)
		req.URL.RawQuery = tt.query
		resp, err := (&Transport{Base: &http.Transport{}, Retrier: retrier(fast)}).RoundTrip(req)
		var pe *backoff.ParamError
		if refused := errors.As(err, &pe) && pe.Param == "req.URL"; refused != tt.refused || tt.refused != (conns.Load() == 0) {
			t.Errorf("%q: RoundTrip = %v, %v with %d connections; want refused: %v", tt.query, resp, err, conns.Load(), tt.refused)
		}
		if resp != nil {
			resp.Body.Close()
		}
		if got := queries.Load().(string); (got == tt.query) != tt.reached {
			t.Errorf("%q: the server saw the query %q; want it to: %v", tt.query, got, tt.reached)
		}
	}
}

// TestTransportTimeoutAttribution: with AttemptTimeout set, a failure that
// came before the timer fired (a refused connection) is reported as it
// came, not as a timeout, and one that came because it fired (a server
// that does not answer) as the timeout.
func TestTransportTimeoutAttribution(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close() // nothing listens there any more
	hanging := httptest.NewServer(http.HandlerFunc(hang))
	defer hanging.Close()
	two := backoff.Must(backoff.NewExponential(backoff.Config{Base: time.Millisecond, Cap: time.Millisecond, MaxAttempts: 2}))
	for _, tt := range []struct {
		name     string
		url      string
		timeout  time.Duration
		timedOut bool
	}{
		{"refused", closed.URL, time.Hour, false},
		{"no answer", hanging.URL, 50 * time.Millisecond, true},
	} {
		var retries []error
		req, _ := http.NewRequest("GET", tt.url, nil)
		tr := &Transport{Base: &http.Transport{}, AttemptTimeout: tt.timeout, Retrier: &backoff.Retrier{Policy: two,
			OnRetry: func(_ context.Context, _ int, err error, _ time.Duration) { retries = append(retries, err) }}}
		_, err := tr.RoundTrip(req)
		for _, err := range append(retries, err) {
			var op *net.OpError
			var te *timeoutError
			label := strings.Contains(err.Error(), "attempt timed out")
			if errors.As(err, &te) != tt.timedOut || label != tt.timedOut || errors.Is(err, context.DeadlineExceeded) != tt.timedOut {
				t.Errorf("%s: %v; want a timeout: %v", tt.name, err, tt.timedOut)
			}
			if !tt.timedOut && (!errors.As(err, &op) || op.Op != "dial") {
				t.Errorf("%s: %v; want the dial's error", tt.name, err)
			}
		}
		if len(retries) != 1 || !errors.Is(err, backoff.ErrExhausted) {
			t.Errorf("%s: %d retries, %v; want 1 and ErrExhausted", tt.name, len(retries), err)
		}
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
