package backoffhttp

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/backoffgo/backoff"
)

// TestTransportRefusedAfterDial: net/http also refuses a request once its
// connection is open, before writing a byte of it: a control character in
// the request target (a RawQuery built by hand from user input), or an
// invalid Host sent to a proxy. A retry cannot mend either. Over HTTP/1.1
// a GET was sent 4 times, waits included, and a POST stopped with
// ErrNotRepeatable ("may have been sent"); each now stops after its one
// attempt with ErrPermanent, and the server sees nothing.
func TestTransportRefusedAfterDial(t *testing.T) {
	srv := newServer(t, ok("hi"))
	proxy, _ := url.Parse(srv.URL)
	tests := []struct {
		name  string
		base  *http.Transport
		edit  func(req *http.Request)
		error string
	}{
		{"control character in the query", &http.Transport{}, func(req *http.Request) { req.URL.RawQuery = "q=a\nb" },
			"net/http: can't write control character in Request.URL"},
		{"invalid Host to a proxy", &http.Transport{Proxy: http.ProxyURL(proxy)}, func(req *http.Request) { req.Host = "a b" },
			"http: invalid Host header"},
	}
	for _, tt := range tests {
		for _, method := range []string{"GET", "POST"} {
			t.Run(tt.name+"/"+method, func(t *testing.T) {
				defer tt.base.CloseIdleConnections()
				req, _ := http.NewRequest(method, srv.URL, strings.NewReader("data"))
				tt.edit(req)
				r := roundTrip(t, &Transport{Base: tt.base, Policy: fast}, req)
				if r.resp != nil || r.attempts != 1 || !errors.Is(r.err, backoff.ErrPermanent) || errors.Is(r.err, ErrNotRepeatable) ||
					!strings.Contains(r.err.Error(), tt.error) {
					t.Errorf("RoundTrip = %v, %v after %d attempts; want %q, ErrPermanent, after 1", r.resp, r.err, r.attempts, tt.error)
				}
			})
		}
	}
	if n := srv.attempts.Load(); n != 0 {
		t.Errorf("the server saw %d requests; want none", n)
	}
}
