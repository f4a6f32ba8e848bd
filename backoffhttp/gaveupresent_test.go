package backoffhttp

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// TestGaveUpNotForAResend: a response got by sending resp.Request again,
// of a response the Transport gave up on, is another response: GaveUp is
// nil for it, and CheckResponse does not mark it retried below, whether it
// went through the Transport or a plain http.Transport. Both used to
// report the first response's reason (a 200 "stopped after 4 attempts",
// a fresh 503 retried below), as the resent request is resp.Request itself.
func TestGaveUpNotForAResend(t *testing.T) {
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
	if err != nil || resp.StatusCode != 503 || GaveUp(resp) == nil {
		t.Fatalf("Get = %v, %v, GaveUp %v; want a 503 given up on", resp, err, GaveUp(resp))
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
		if g := GaveUp(again); g != nil {
			t.Errorf("send %d: GaveUp of a %d sent again = %v; want nil", i+2, again.StatusCode, g)
		}
		if e, _ := CheckResponse(again).(*Error); e != nil && e.RetriedBelow {
			t.Errorf("send %d: CheckResponse of a %d sent again = %+v; want it not retried below", i+2, again.StatusCode, e)
		}
	}
}
