package backoffhttp

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/retryshare"
)

// TestHandlerForgedRetriesRefusedAtArrivalLeaveHonestAnswersAlone: in an
// outage, a caller that sends 10 times an honest caller's requests lets
// the honest caller's failing answers invite about Threshold of its
// requests to be retried whether it says its requests are retries or not:
// its forged retries, refused at arrival, neither dilute the route's
// failing answers nor fill its allowance.
func TestHandlerForgedRetriesRefusedAtArrivalLeaveHonestAnswersAlone(t *testing.T) {
	const rounds, liarPerRound = 500, 10
	invited := func(forge bool) (honest int) {
		share := backoff.Must(retryshare.New(retryshare.Config{Now: func() time.Time { return time.Unix(0, 0) }}))
		h := Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }),
			ServerConfig{Share: share, Caller: func(r *http.Request) string { return r.Header.Get("Caller") }})
		send := func(caller, attempt string) bool {
			req := httptest.NewRequest("GET", "/", nil)
			req.Header.Set("Caller", caller)
			if attempt != "" {
				req.Header.Set(AttemptCountHeader, attempt)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			return !saysTrue(rec.Header()[DontRetryHeader])
		}
		attempt := ""
		if forge {
			attempt = "2"
		}
		for range rounds {
			honest += btoi(send("honest", ""))
			for range liarPerRound {
				send("liar", attempt)
			}
		}
		return honest
	}
	plain, forged := invited(false), invited(true)
	t.Logf("honest failing answers that invite a retry, of %d: %d beside a liar sending first tries, %d beside it forging retries", rounds, plain, forged)
	if forged > 2*plain+10 {
		t.Errorf("forged retries let %d of the honest caller's %d failing answers invite a retry, %d without forging", forged, rounds, plain)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
