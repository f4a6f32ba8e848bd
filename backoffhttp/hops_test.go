package backoffhttp

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/internal/golden"
)

// chain starts a bottom server that always answers 503 and, above it, one
// server per entry of handled, each of whose handlers calls the next server
// down through a Transport of 3 attempts and relays its status; handled[i]
// says whether server i (0 is the top) takes part: marks its give-ups
// (MarkFailure) and is wrapped in Handler. It returns the
// top server's URL and the counter of requests that reached the bottom.
func chain(t *testing.T, handled []bool, retryInner bool) (string, *atomic.Int64) {
	t.Helper()
	next, bottomHits := unavailable(t)
	for i := len(handled) - 1; i >= 0; i-- {
		h := relay(t, &Transport{Retrier: &backoff.Retrier{Policy: threeAttempts, RetryInner: retryInner}}, http.MethodGet, next, handled[i])
		if handled[i] {
			h = Handler(h, ServerConfig{})
		}
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		next = srv.URL
	}
	return next, bottomHits
}

// threeAttempts retries at once, three calls in all.
var threeAttempts = backoff.Must(backoff.NewExponential(backoff.Config{Base: time.Nanosecond, Cap: time.Nanosecond, MaxAttempts: 3}))

// unavailable starts a server that always answers 503 and returns its URL
// and the count of requests it received.
func unavailable(t *testing.T) (string, *atomic.Int64) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &hits
}

// relay is a handler that sends a request of method to next through tr,
// with the incoming request's context, and answers with its status, with
// mark marked when it is a give-up.
func relay(t *testing.T, tr *Transport, method, next string, mark bool) http.Handler {
	client := NewClient(tr)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, err := http.NewRequestWithContext(r.Context(), method, next, nil)
		if err != nil {
			t.Error(err)
			return
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			err = CheckResponse(resp)
		}
		if mark {
			MarkFailure(w, err)
		}
		if resp == nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		w.WriteHeader(resp.StatusCode)
	})
}

// TestHopsRetryAtOneLayer: three services in a chain, each retrying its call
// to the next 3 times, over a bottom that always fails. Without MarkFailure
// the retries multiply (3³ = 27 requests at the bottom per request at the
// top); with it the lowest retrying service retries and the rest stand
// back. A service that does not take part breaks the chain of "retried"
// answers where it stands: the services below it and above it each retry
// once more, so the bound becomes 3 per run of services that take part,
// multiplied. Clients that retry anyway (RetryInner) multiply their
// retries but for the lowest service's refusals at arrival: with its 3
// calls on one connection (one caller key), the first call's make 2
// retries of 3, over, and the next two calls' retries are refused as they
// arrive, 9 + 3 + 3 = 15 requests at the bottom; a retry that closes an
// undrained body takes a new connection, a caller with no retries yet, so
// more get through (21 here), never the 27 of no refusals.
func TestHopsRetryAtOneLayer(t *testing.T) {
	for _, tt := range []struct {
		name       string
		handled    []bool
		retryInner bool
		want, most int64 // most: 0 for exactly want
	}{
		{"no service takes part", []bool{false, false, false}, false, 27, 0},
		{"every service takes part", []bool{true, true, true}, false, 3, 0},
		{"the top service does not", []bool{false, true, true}, false, 3, 0},
		{"the middle service does not", []bool{true, false, true}, false, 9, 0},
		{"the bottom service does not", []bool{true, true, false}, false, 9, 0},
		{"clients that retry anyway", []bool{true, true, true}, true, 15, 26},
	} {
		t.Run(tt.name, func(t *testing.T) {
			top, bottomHits := chain(t, tt.handled, tt.retryInner)
			resp, err := http.Get(top)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusServiceUnavailable {
				t.Errorf("top answered %s, want 503", resp.Status)
			}
			if got := bottomHits.Load(); got < tt.want || got > max(tt.most, tt.want) {
				t.Errorf("%d requests reached the bottom for one at the top, want %d to %d", got, tt.want, max(tt.most, tt.want))
			}
		})
	}
}

// TestReadmeHops: README quotes the chain's figures as this test measures
// them (-v prints them; -update rewrites README's block).
func TestReadmeHops(t *testing.T) {
	count := func(handled ...bool) int64 {
		top, bottomHits := chain(t, handled, false)
		resp, err := http.Get(top)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return bottomHits.Load()
	}
	every, none, middle := count(true, true, true), count(false, false, false), count(true, false, true)
	t.Logf("requests at the bottom per request at the top: %d with Handler everywhere, %d without, %d with the middle service left out", every, none, middle)
	golden.CheckBlock(t, "../README.md", "hops", fmt.Appendf(nil, `Three services in a chain, each retrying its call to the next 3 times over a failing bottom, put
**%d** requests at the bottom per request at the top instead of %d; with the middle one left out, %d
(`+"`go test -v -run TestReadmeHops ./backoffhttp`"+` prints them).
`, every, none, middle))
}

// TestHopsThroughAPost: a hop that relays through a request that may not be
// repeated (a POST) still passes "retried below" up, so the retrying caller
// above it stands back: 3 requests at the dependency, not 9.
func TestHopsThroughAPost(t *testing.T) {
	dep, hits := unavailable(t)
	bottom := httptest.NewServer(Handler(relay(t, &Transport{Retrier: retrier(threeAttempts)}, http.MethodGet, dep, true), ServerConfig{}))
	defer bottom.Close()
	middle := httptest.NewServer(Handler(relay(t, &Transport{Retrier: retrier(threeAttempts)}, http.MethodPost, bottom.URL, true), ServerConfig{}))
	defer middle.Close()
	resp, err := NewClient(&Transport{Retrier: retrier(threeAttempts)}).Get(middle.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, marked := resp.Header[DontRetryHeader]; hits.Load() != 3 || !marked {
		t.Errorf("%d requests at the dependency, header %v; want 3 and the header", hits.Load(), marked)
	}
}

// TestHopsWithoutTheRequestsContext: services whose calls do not carry the
// request's context (client.Get(url)) still retry at one layer: what marks
// a failure is the error it answers, not the context its loops ran with (3
// requests at the bottom); without MarkFailure every layer retries (27).
func TestHopsWithoutTheRequestsContext(t *testing.T) {
	for _, tt := range []struct {
		mark bool
		want int64
	}{{true, 3}, {false, 27}} {
		next, bottomHits := unavailable(t)
		for range 3 {
			client := NewClient(&Transport{Retrier: retrier(threeAttempts)})
			url := next
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				resp, err := client.Get(url) // not r.Context()
				if err != nil {
					w.WriteHeader(http.StatusBadGateway)
					return
				}
				resp.Body.Close()
				if tt.mark {
					MarkFailure(w, CheckResponse(resp))
				}
				w.WriteHeader(resp.StatusCode)
			}))
			t.Cleanup(srv.Close)
			next = srv.URL
		}
		resp, err := http.Get(next)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := bottomHits.Load(); got != tt.want {
			t.Errorf("marked %v: %d requests at the bottom, want %d", tt.mark, got, tt.want)
		}
	}
}
