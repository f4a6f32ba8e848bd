package backoffhttp

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
)

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
