package backoffhttp

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// TestHandlerRecordsAtSwitchingProtocols: Handler's doc says the Share
// records the request "when h's response has its final status (written,
// or the end of h)", and ServerConfig.Route is "called when its status is
// written". net/http sends 101 Switching Protocols as a final status (not
// an informational one: WriteHeader(101) ends the headers), yet decide
// skips every code below 200, so a request upgraded to a WebSocket is
// recorded only when h returns, hours later for a long connection.
func TestHandlerRecordsAtSwitchingProtocols(t *testing.T) {
	var routed atomic.Bool
	var atStatus atomic.Bool
	done := make(chan struct{})
	h := Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "Upgrade")
		w.Header().Set("Upgrade", "example")
		w.WriteHeader(http.StatusSwitchingProtocols)
		atStatus.Store(routed.Load())
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	}), ServerConfig{Share: neverOver(), Route: func(r *http.Request) string { routed.Store(true); return "/ws" }})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(done)
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL, nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "example")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
	<-done
	if !routed.Load() {
		t.Fatal("the request was never recorded")
	}
	if !atStatus.Load() {
		t.Error("101 Switching Protocols written: the request is not recorded (Route not called) until h returns")
	}
}
