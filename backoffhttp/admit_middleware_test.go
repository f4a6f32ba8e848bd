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

// TestHandlerAdmitBehindMiddlewareByRouteEmpty: Handler around a
// middleware in front of a ServeMux, Route nil, reads route "" at a
// retry's arrival, and "" is a route the Share counts: that of the
// requests no pattern matched (404, 405). A caller whose retries of
// unmatched paths make "" over has its retries of every route refused at
// arrival, h not run; another caller's are served.
func TestHandlerAdmitBehindMiddlewareByRouteEmpty(t *testing.T) {
	var ran atomic.Int64
	app := http.NewServeMux()
	app.HandleFunc("GET /work", func(w http.ResponseWriter, r *http.Request) { ran.Add(1) })
	middleware := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { app.ServeHTTP(w, r) })
	share := backoff.Must(retryshare.New(retryshare.Config{Now: func() time.Time { return time.Unix(0, 0) }}))
	srv := httptest.NewServer(Handler(middleware, ServerConfig{Share: share, Caller: func(r *http.Request) string { return r.Header.Get("Caller") }}))
	defer srv.Close()
	for range 30 { // 404, then 503 once "" is over
		sendAttempt(t, srv.URL+"/missing", "2", "Caller", "c")
	}
	for _, c := range []struct {
		caller string
		want   int
	}{{"c", http.StatusServiceUnavailable}, {"other", http.StatusOK}} {
		before := ran.Load()
		if code := sendAttempt(t, srv.URL+"/work", "2", "Caller", c.caller).StatusCode; code != c.want || (ran.Load() == before) != (c.want != http.StatusOK) {
			t.Errorf("caller %s's retry of GET /work: %d, h ran %v; want %d", c.caller, code, ran.Load() != before, c.want)
		}
	}
}
