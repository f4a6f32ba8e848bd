package backoffhttp

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/retryshare"
)

// over fills share's window of route, for callers, with 30 retries each:
// the route and the callers' slots are over by their retries.
func over(share *retryshare.Share, route string, callers ...string) {
	for _, c := range callers {
		for range 30 {
			share.Record(route, c, true)
		}
	}
}

// sendAttempt sends a GET of url, with AttemptCountHeader: attempt unless
// it is "" and header's pairs, and returns its response, body closed.
func sendAttempt(t *testing.T, url, attempt string, header ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if attempt != "" {
		req.Header.Set(AttemptCountHeader, attempt)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// TestHandlerAdmitLoopback: while a caller's retries are over on a route,
// Handler refuses the caller's retries of it as they arrive: 503 with
// DontRetryHeader "true" and no Retry-After, h not run, and a Transport
// does not retry that answer. A first try is served, and so are the
// caller's retries of another route. The route at arrival is the pattern
// h.Handler(r) gives when h is an *http.ServeMux, r.Pattern under a
// ServeMux, Route's when given; in front of a middleware in front of a
// ServeMux, with Route nil, it is "" and no retry is refused (the limit
// Handler's doc states). The retry refused counts as a request and a
// retry.
func TestHandlerAdmitLoopback(t *testing.T) {
	var ran atomic.Int64
	app := http.NewServeMux()
	app.HandleFunc("GET /work", func(w http.ResponseWriter, r *http.Request) { ran.Add(1) })
	app.HandleFunc("GET /other", func(w http.ResponseWriter, r *http.Request) { ran.Add(1) })
	middleware := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { app.ServeHTTP(w, r) })
	caller := func(r *http.Request) string { return "c" }
	for _, tt := range []struct {
		name   string
		server func(cfg ServerConfig) http.Handler
		route  func(*http.Request) string
		refuse bool
	}{
		{"Handler around the mux", func(cfg ServerConfig) http.Handler { return Handler(app, cfg) }, nil, true},
		{"the mux around Handler", func(cfg ServerConfig) http.Handler {
			outer := http.NewServeMux()
			outer.Handle("GET /work", Handler(app, cfg))
			outer.Handle("GET /other", Handler(app, cfg))
			return outer
		}, nil, true},
		{"a middleware, Route nil", func(cfg ServerConfig) http.Handler { return Handler(middleware, cfg) }, nil, false},
		{"a middleware, Route the mux's", func(cfg ServerConfig) http.Handler { return Handler(middleware, cfg) },
			func(r *http.Request) string { _, p := app.Handler(r); return p }, true},
	} {
		share := backoff.Must(retryshare.New(retryshare.Config{Callers: 1, Now: func() time.Time { return time.Unix(0, 0) }}))
		over(share, "GET /work", "c")
		srv := httptest.NewServer(tt.server(ServerConfig{Share: share, Route: tt.route, Caller: caller}))
		send := func(path, attempt string) *http.Response { return sendAttempt(t, srv.URL+path, attempt) }
		before := ran.Load()
		resp := send("/work", "2")
		refused := resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get(DontRetryHeader) == "true" &&
			resp.Header.Get("Retry-After") == "" && ran.Load() == before
		if refused != tt.refuse || !tt.refuse && resp.StatusCode != http.StatusOK {
			t.Errorf("%s: a retry of a route over: %d, %s %q, Retry-After %q, h ran %d times; want refused %v",
				tt.name, resp.StatusCode, DontRetryHeader, resp.Header.Get(DontRetryHeader), resp.Header.Get("Retry-After"), ran.Load()-before, tt.refuse)
		}
		for _, c := range []struct{ path, attempt string }{{"/work", ""}, {"/work", "1"}, {"/other", "2"}} {
			if resp := send(c.path, c.attempt); resp.StatusCode != http.StatusOK {
				t.Errorf("%s: %s, attempt %q: %d, want 200", tt.name, c.path, c.attempt, resp.StatusCode)
			}
		}
		srv.Close()
	}

	// A Transport's request, a retry, is not retried after the refusal.
	share := backoff.Must(retryshare.New(retryshare.Config{Callers: 1, Now: func() time.Time { return time.Unix(0, 0) }}))
	over(share, "GET /work", "c")
	var arrived atomic.Int64
	h := Handler(app, ServerConfig{Share: share, Caller: caller})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { arrived.Add(1); h.ServeHTTP(w, r) }))
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL+"/work", nil)
	req.Header.Set(AttemptCountHeader, "2") // as a proxy's retry arrives
	resp, err := (&Transport{Retrier: retrier(threeQuick)}).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || arrived.Load() != 1 {
		t.Errorf("a Transport's retry refused: %d after %d attempts, want 503 after 1", resp.StatusCode, arrived.Load())
	}
}

// TestHandlerAdmitLiar: a liar whose every request says it is a retry
// makes the route over; its retries are refused at arrival, and an honest
// caller's retries, in slots of its own, are served.
func TestHandlerAdmitLiar(t *testing.T) {
	share := backoff.Must(retryshare.New(retryshare.Config{Now: func() time.Time { return time.Unix(0, 0) }}))
	var ran atomic.Int64
	srv := httptest.NewServer(Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { ran.Add(1) }),
		ServerConfig{Share: share, Caller: func(r *http.Request) string { return r.Header.Get("Caller") }}))
	defer srv.Close()
	send := func(caller string, attempt string) int {
		return sendAttempt(t, srv.URL, attempt, "Caller", caller).StatusCode
	}
	// "liar" and "honest" hash to 4 distinct slots of 64: the honest
	// caller's slots count none of the liar's requests.
	for range 100 {
		send("honest", "")
		send("honest", "")
		send("liar", "2")
	}
	before := ran.Load()
	if code := send("liar", "2"); code != http.StatusServiceUnavailable || ran.Load() != before {
		t.Errorf("the liar's retry: %d, h ran: %v; want 503, not run", code, ran.Load() != before)
	}
	if code := send("honest", "2"); code != http.StatusOK {
		t.Errorf("the honest caller's retry: %d, want 200", code)
	}
}
