package backoffhttp

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
)

// TestTransportPolicySeesTheFailure: a Policy, which gets each failure
// as the loop sees it, reads it as the failure itself: its message is the
// status's, and it unwraps to the *StatusError.
func TestTransportPolicySeesTheFailure(t *testing.T) {
	srv := newServer(t, status(503), ok("hi"))
	var seen []string
	policy := backoff.PolicyFunc(func(_ int, err error) (time.Duration, error) {
		var he *StatusError
		if !errors.As(err, &he) || he.StatusCode != 503 {
			t.Errorf("the policy got %v; want the 503's *StatusError", err)
		}
		seen = append(seen, err.Error())
		return time.Millisecond, nil
	})
	req, _ := http.NewRequest("GET", srv.URL, nil)
	r := roundTrip(t, &Transport{Base: srv.Client().Transport, Retrier: retrier(policy)}, req)
	if r.err != nil || r.body != "hi" || len(seen) != 1 || seen[0] != "HTTP 503 Service Unavailable" {
		t.Errorf("RoundTrip = %q, %v; the policy read %q; want hi, and HTTP 503 Service Unavailable", r.body, r.err, seen)
	}
}

// TestCheckResponseNilHeader: a Base that builds its responses without a Header
// (as a hand-made RoundTripper may) gets, on the response given up on, a
// Header of its own, which tells it from another response to the same
// request: CheckResponse returns the give-up for it and not for a copy with another Header.
func TestCheckResponseNilHeader(t *testing.T) {
	srv := newServer(t, status(503))
	headerless := roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := srv.Client().Transport.RoundTrip(req)
		if resp != nil {
			resp.Header = nil
		}
		return resp, err
	})
	req, _ := http.NewRequest("GET", srv.URL, nil)
	r := roundTrip(t, &Transport{Base: headerless, Retrier: retrier(fast)}, req)
	if r.err != nil || r.resp.StatusCode != 503 || r.resp.Header == nil {
		t.Fatalf("RoundTrip = %v, %v; want the 503, with a Header", r.resp, r.err)
	}
	if g := gaveUpOf(r.resp); g == nil || !errors.Is(g, backoff.ErrExhausted) {
		t.Errorf("CheckResponse = %v; want ErrExhausted", g)
	}
	other := *r.resp
	other.Header = nil
	if g := gaveUpOf(&other); g != nil {
		t.Errorf("CheckResponse of another response to the request, without a Header: %v; want no give-up", g)
	}
}
