package backoffhttp

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
)

// TestTransportControlCharacter: a control character in the request target
// (a RawQuery or Opaque built by hand) is refused at once, with a
// *backoff.ParamError naming req.URL, when the base is an *http.Transport.
// Over HTTP/2 net/http opened connection after connection, over a thousand
// in the 2 s until the deadline, where the caller got the deadline's error.
func TestTransportControlCharacter(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	countConns(srv, &conns)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	for _, edit := range []func(*http.Request){
		func(req *http.Request) { req.URL.RawQuery = "q=a\nb" },
		func(req *http.Request) { req.URL.RawQuery = "q=\x7f" },
		func(req *http.Request) { req.URL.Opaque = "//x/\x01" },
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
		edit(req)
		start := time.Now()
		resp, err := (&Transport{Base: srv.Client().Transport}).RoundTrip(req)
		elapsed := time.Since(start)
		cancel()
		var pe *backoff.ParamError
		if resp != nil || !errors.As(err, &pe) || pe.Param != "req.URL" {
			t.Errorf("%q: RoundTrip = %v, %v after %v; want a ParamError naming req.URL", req.URL.String(), resp, err, elapsed)
		}
	}
	if n := conns.Load(); n != 0 {
		t.Errorf("%d connections opened; want none", n)
	}
}
