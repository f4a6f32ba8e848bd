package backoffhttp

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/backoffgo/backoff"
)

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
