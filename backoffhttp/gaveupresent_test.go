package backoffhttp

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/backoffgo/backoff"
)

// TestCheckResponseNotForAResend: a response got by sending resp.Request
// again, of a response the Transport gave up on, is another response:
// CheckResponse of it is no give-up, nor does it say retried below,
// whether it went through the Transport or a plain http.Transport. Both
// used to report the first response's reason (a 200 "stopped after 4
// attempts", a fresh 503 retried below), as the resent request is
// resp.Request itself.
func TestCheckResponseNotForAResend(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) {
		case 1, 2, 3, 4, 6:
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			io.WriteString(w, "ok")
		}
	}))
	defer srv.Close()
	tr := &Transport{Retrier: retrier(fast)}
	defer tr.CloseIdleConnections()
	resp, err := NewClient(tr).Get(srv.URL)
	if err != nil || resp.StatusCode != 503 || gaveUpOf(resp) == nil {
		t.Fatalf("Get = %v, %v, CheckResponse %v; want a 503 given up on", resp, err, CheckResponse(resp))
	}
	resp.Body.Close()
	plain := &http.Client{Transport: &http.Transport{}}
	defer plain.CloseIdleConnections()
	for i, c := range []*http.Client{NewClient(tr), plain, plain} {
		again, err := c.Do(resp.Request)
		if err != nil {
			t.Fatal(err)
		}
		again.Body.Close()
		if err := CheckResponse(again); gaveUpOf(again) != nil || backoff.Retried(err) {
			t.Errorf("send %d: CheckResponse of a %d sent again = %v; want no give-up, not retried below", i+2, again.StatusCode, err)
		}
	}
}
