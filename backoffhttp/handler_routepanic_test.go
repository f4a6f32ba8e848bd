package backoffhttp

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/retryshare"
)

// TestHandlerRecordsWhenRoutePanics: a request whose Route panics is
// recorded all the same, under route "" and caller "", and the panic goes
// on to h's caller. At Threshold 0.5 and MinRetries 2 a caller slot is over
// from 4 retries on: the retry whose Route panicked, 2 more, and a failing
// fourth is refused only if the first was recorded.
func TestHandlerRecordsWhenRoutePanics(t *testing.T) {
	share := backoff.Must(retryshare.New(retryshare.Config{Threshold: 0.5, MinRetries: 2, Now: func() time.Time { return time.Unix(0, 0) }}))
	serve := func(route func(*http.Request) string, code int) (marked bool, recovered any) {
		req := httptest.NewRequest("GET", "/", nil)
		req.Header.Set(AttemptCountHeader, "2")
		rec := httptest.NewRecorder()
		func() {
			defer func() { recovered = recover() }()
			Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(code) }),
				ServerConfig{Share: share, Route: route, Caller: func(*http.Request) string { return "" }}).ServeHTTP(rec, req)
		}()
		return saysTrue(rec.Result().Header[DontRetryHeader]), recovered
	}
	if _, p := serve(func(*http.Request) string { panic("route") }, http.StatusOK); p != "route" {
		t.Fatalf("recovered %v; want the Route's panic", p)
	}
	empty := func(*http.Request) string { return "" }
	serve(empty, http.StatusOK)
	serve(empty, http.StatusOK)
	if marked, _ := serve(empty, http.StatusServiceUnavailable); !marked {
		t.Error("the fourth retry is not refused: the one whose Route panicked was not recorded")
	}
}
