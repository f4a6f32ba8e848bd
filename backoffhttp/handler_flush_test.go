package backoffhttp

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// unwrapOnly is a middleware's writer in the style Go recommends since
// 1.20: it offers no optional interface, only Unwrap, through which
// http.ResponseController reaches the writer below.
type unwrapOnly struct{ http.ResponseWriter }

func (u unwrapOnly) Unwrap() http.ResponseWriter { return u.ResponseWriter }

// TestHandlerResponseControllerFlushUnderUnwrapOnlyMiddleware: Handler's
// doc says its writer "unwraps to that one for http.ResponseController",
// and that "a success (below 400) never carries "true"". Under a
// middleware whose writer offers Flush only through Unwrap (so Handler's
// writer offers no Flusher), h's http.NewResponseController(w).Flush()
// reaches net/http's writer through Handler's Unwrap and sends an implicit
// 200 without Handler deciding: the header that h's MarkFailure set (a
// failure h then absorbed with a streamed fallback) goes out on the 200.
func TestHandlerResponseControllerFlushUnderUnwrapOnlyMiddleware(t *testing.T) {
	h := Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		MarkFailure(w, giveUp(r.Context())) // the dependency gave up...
		// ...and h serves a streamed fallback instead.
		if err := http.NewResponseController(w).Flush(); err != nil {
			t.Errorf("Flush: %v", err)
		}
		w.Write([]byte("fallback"))
	}), ServerConfig{Share: neverOver()})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(unwrapOnly{w}, r)
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, want 200", resp.StatusCode)
	}
	if v := resp.Header[DontRetryHeader]; v != nil {
		t.Errorf("a 200 flushed through http.ResponseController carries %s: %q; want none", DontRetryHeader, v)
	}
}
