package backoffhttp

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestSynctestRecipes proves README's recipe for testing HTTP code under
// testing/synctest, where an httptest server's sockets inside the bubble
// hang it: a Base RoundTripper that answers inside the bubble, or an
// httptest server outside it reached with keep-alives off. Either way the
// Transport's wait of Retry-After's 7 s takes exactly 7 s of fake time.
func TestSynctestRecipes(t *testing.T) {
	answers := func(n *atomic.Int32) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if n.Add(1) == 1 {
				w.Header().Set("Retry-After", "7")
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			io.WriteString(w, "hello")
		}
	}
	check := func(t *testing.T, base http.RoundTripper, url string, n *atomic.Int32) {
		t.Helper()
		start := time.Now()
		resp, err := NewClient(&Transport{Base: base}).Get(url)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if elapsed := time.Since(start); string(b) != "hello" || err != nil || n.Load() != 2 || elapsed != 7*time.Second {
			t.Errorf("%q, %v after %d requests in %v; want hello after 2 in 7s", b, err, n.Load(), elapsed)
		}
	}
	t.Run("a Base in the bubble", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var n atomic.Int32
			h := answers(&n)
			base := roundTripperFunc(func(req *http.Request) (*http.Response, error) {
				rec := httptest.NewRecorder()
				h(rec, req)
				return rec.Result(), nil
			})
			check(t, base, "http://example.test/", &n)
		})
	})
	t.Run("a server outside the bubble, keep-alives off", func(t *testing.T) {
		var n atomic.Int32
		srv := httptest.NewServer(answers(&n))
		defer srv.Close()
		synctest.Test(t, func(t *testing.T) {
			check(t, &http.Transport{DisableKeepAlives: true}, srv.URL, &n)
		})
	})
}
