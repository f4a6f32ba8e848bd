package backoffhttp

import (
	"errors"
	"math"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/internal/race"
	"github.com/backoffgo/backoff/throttle"
)

// attemptsUpTo is a policy of n attempts with no wait between them.
func attemptsUpTo(n int) backoff.Policy {
	return backoff.PolicyFunc(func(attempt int, err error) (time.Duration, error) {
		if attempt >= n {
			return 0, backoff.ErrExhausted
		}
		return 0, nil
	})
}

// newTestThrottle returns a Throttle of cfg with a seeded Rng.
func newTestThrottle(cfg throttle.Config) *throttle.Throttle {
	return must(throttle.New(cfg, backoff.NewSeededRng(7)))
}

// checkRefusal fails unless r is a refusal of the Throttle after sent
// attempts whose last failure was last (nil for none): as RoundTrip and
// as OnDone see it.
func checkRefusal(t *testing.T, r result, sent int, last error) {
	t.Helper()
	var stop *backoff.Error
	if r.resp != nil || !errors.As(r.err, &stop) || !errors.Is(r.err, throttle.ErrThrottled) || r.doneErr != r.err {
		t.Fatalf("RoundTrip = %v, %v (OnDone's err %v); want nil and a *backoff.Error matching throttle.ErrThrottled, OnDone's too", r.resp, r.err, r.doneErr)
	}
	if stop.Reason != throttle.ErrThrottled || stop.Attempts != sent || r.attempts != sent {
		t.Fatalf("stop %+v, OnDone's attempts %d; want Reason ErrThrottled and %d attempts", stop, r.attempts, sent)
	}
	var se *StatusError
	if last == nil && stop.Err != nil || last != nil && (!errors.As(stop.Err, &se) || se.Error() != last.Error()) {
		t.Fatalf("stop's Err = %v, want %v", stop.Err, last)
	}
}

// TestThrottleRefusesByTheRule: rounds of a request that succeeds and one
// that gets a 503 and is retried at once: each retry is refused with
// probability max(0, (R − 2A)/(R + 1)), R and A the requests and accepts
// that the test counts before it. Over 3,000 rounds the refusals are
// within 4 standard deviations of the sum of those probabilities.
func TestThrottleRefusesByTheRule(t *testing.T) {
	srv := newServer(t, status(http.StatusServiceUnavailable))
	good := newServer(t, ok("fine"))
	th := newTestThrottle(throttle.Config{})
	tr := &Transport{Retrier: retrier(attemptsUpTo(2)), Throttle: th}
	// good answers on a host of its own: route its requests to srv's host
	// so that both count in one window.
	base := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(base.CloseIdleConnections)
	goodURL := must(url.Parse(good.URL))
	tr.Base = roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		if r.URL.Path == "/good" {
			r = r.Clone(r.Context())
			r.URL.Host = goodURL.Host
		}
		return base.RoundTrip(r)
	})
	const rounds = 3000
	var requests, accepts float64
	var want, variance float64
	refused := 0
	for range rounds {
		if r := roundTrip(t, tr, must(http.NewRequest("GET", srv.URL+"/good", nil))); r.err != nil || r.body != "fine" {
			t.Fatalf("good request: %v %q", r.err, r.body)
		}
		requests, accepts = requests+1, accepts+1
		r := roundTrip(t, tr, must(http.NewRequest("GET", srv.URL+"/bad", nil)))
		requests++ // the first try: not gated, refused by the server
		p := max(0, (requests-2*accepts)/(requests+1))
		want, variance = want+p, variance+p*(1-p)
		requests++ // the retry, sent or not
		if r.err != nil {
			checkRefusal(t, r, 1, &StatusError{StatusCode: 503, Status: "503 Service Unavailable"})
			refused++
		} else if r.resp.StatusCode != 503 {
			t.Fatalf("bad request: status %d", r.resp.StatusCode)
		}
	}
	if d := math.Abs(float64(refused) - want); d > 4*math.Sqrt(variance) || want < rounds/10 {
		t.Fatalf("%d retries refused; want %.0f ± %.0f (4 sd), at least %d", refused, want, 4*math.Sqrt(variance), rounds/10)
	}
	t.Logf("%d of %d retries refused; the rule expects %.1f ± %.1f", refused, rounds, want, math.Sqrt(variance))
}

// TestThrottleOutcomes: which answers count as rejections. A first try is
// gated (FirstTries), no retry: a Throttle refuses none of 40 requests
// while the server accepts them (200, 404, a plain 500), and some once it
// does not (429, 503, a 500 that says "don't retry", no answer, an
// attempt out of time).
func TestThrottleOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fault    fault
		rejected bool
	}{
		{"200", ok("fine"), false},
		{"404", status(http.StatusNotFound), false},
		{"500", status(http.StatusInternalServerError), false},
		{"429", status(http.StatusTooManyRequests), true},
		{"503", status(http.StatusServiceUnavailable), true},
		{"500, don't retry", status(http.StatusInternalServerError, DontRetryHeader, "true"), true},
		{"no answer", closeBeforeAnswer, true},
		{"attempt timeout", hang, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, tc.fault)
			tr := &Transport{Retrier: retrier(attemptsUpTo(1)), Throttle: newTestThrottle(throttle.Config{FirstTries: true}), AttemptTimeout: 20 * time.Millisecond}
			const calls = 40
			refused := 0
			for range calls {
				r := roundTrip(t, tr, must(http.NewRequest("GET", srv.URL, nil)))
				if errors.Is(r.err, throttle.ErrThrottled) {
					checkRefusal(t, r, 0, nil)
					refused++
				}
			}
			if sent := int(srv.attempts.Load()); sent+refused != calls {
				t.Fatalf("%d sent and %d refused, want %d in all", sent, refused, calls)
			}
			if (refused > 0) != tc.rejected {
				t.Fatalf("%d of %d refused; want some: %v", refused, calls, tc.rejected)
			}
		})
	}
}

// TestThrottleFirstTries: a backend that rejects everything: without
// FirstTries every first try reaches it, and only retries are refused.
func TestThrottleFirstTries(t *testing.T) {
	for _, firstTries := range []bool{false, true} {
		srv := newServer(t, status(http.StatusServiceUnavailable))
		tr := &Transport{Retrier: retrier(attemptsUpTo(2)), Throttle: newTestThrottle(throttle.Config{FirstTries: firstTries})}
		const calls = 100
		firsts, retries := 0, 0
		for range calls {
			r := roundTrip(t, tr, must(http.NewRequest("GET", srv.URL, nil)))
			var stop *backoff.Error
			switch {
			case !errors.As(r.err, &stop):
				firsts, retries = firsts+1, retries+1
			case stop.Attempts == 1:
				firsts++
			}
		}
		if firsts+retries != int(srv.attempts.Load()) || (firsts == calls) == firstTries || retries == calls {
			t.Fatalf("FirstTries %v: %d first tries and %d retries sent (server saw %d) of %d calls; want all first tries sent exactly without FirstTries, some retries refused",
				firstTries, firsts, retries, srv.attempts.Load(), calls)
		}
	}
}

// TestThrottlePerTarget: a host that rejects everything does not throttle
// another host: each has a window of its own.
func TestThrottlePerTarget(t *testing.T) {
	bad := newServer(t, status(http.StatusServiceUnavailable))
	good := newServer(t, status(http.StatusInternalServerError)) // a plain failure: accepted
	tr := &Transport{Retrier: retrier(attemptsUpTo(3)), Throttle: newTestThrottle(throttle.Config{FirstTries: true})}
	refusedBad := 0
	for range 50 {
		if r := roundTrip(t, tr, must(http.NewRequest("GET", bad.URL, nil))); errors.Is(r.err, throttle.ErrThrottled) {
			refusedBad++
		}
		if r := roundTrip(t, tr, must(http.NewRequest("GET", good.URL, nil))); r.err != nil || r.resp.StatusCode != 500 {
			t.Fatalf("the other host: %v, %v; want its 500 after 3 attempts", r.resp, r.err)
		}
	}
	if refusedBad == 0 || good.attempts.Load() != 150 {
		t.Fatalf("%d calls to the rejecting host refused; the other host got %d attempts; want some, and 150", refusedBad, good.attempts.Load())
	}
}

// TestThrottleHedged: a hedged copy is gated as a retry; its refusal
// stops the copies, and RoundTrip gives up with the first copy's 503.
func TestThrottleHedged(t *testing.T) {
	srv := newServer(t, status(http.StatusServiceUnavailable))
	th := newTestThrottle(throttle.Config{})
	host := must(url.Parse(srv.URL)).Host
	for range 10000 { // the host rejected 10,000 requests: p ≈ 1 − 1e-4
		th.Allow(host, false)
	}
	tr := &Transport{Retrier: retrier(fast), Throttle: th, Hedging: &Hedging{Delay: time.Hour, MaxAttempts: 3}}
	r := roundTrip(t, tr, must(http.NewRequest("GET", srv.URL, nil)))
	checkRefusal(t, r, 1, &StatusError{StatusCode: 503, Status: "503 Service Unavailable"})
	if srv.attempts.Load() != 1 {
		t.Fatalf("the server saw %d copies, want 1", srv.attempts.Load())
	}
}

// TestThrottleAllocs: a Throttle adds no allocation to a RoundTrip that
// succeeds at once, its first try gated, over a base that allocates
// nothing.
func TestThrottleAllocs(t *testing.T) {
	if race.Enabled {
		t.Skip("allocation counts differ under the race detector")
	}
	fixed := &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Header: http.Header{}}
	tr := &Transport{Base: roundTripperFunc(func(*http.Request) (*http.Response, error) { return fixed, nil }),
		Throttle: newTestThrottle(throttle.Config{FirstTries: true})}
	req := must(http.NewRequest("GET", "http://backend.example/", nil))
	if n := testing.AllocsPerRun(500, func() {
		if _, err := tr.RoundTrip(req); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("%v allocations per RoundTrip with a Throttle, want 0", n)
	}
}

// TestThrottleRefusedFirstTryClosesBody: a first try refused is never
// handed to Base: RoundTrip closes the request's body itself.
func TestThrottleRefusedFirstTryClosesBody(t *testing.T) {
	th := newTestThrottle(throttle.Config{FirstTries: true})
	for range 10000 { // the host rejected 10,000 requests: p ≈ 1 − 1e-4
		th.Allow("backend.example", false)
	}
	tr := &Transport{Base: roundTripperFunc(func(*http.Request) (*http.Response, error) {
		t.Fatal("a refused attempt reached Base")
		return nil, nil
	}), Throttle: th}
	body := &closeRecorder{Reader: strings.NewReader("payload")}
	req := must(http.NewRequest("POST", "http://backend.example/", body))
	r := roundTrip(t, tr, req)
	checkRefusal(t, r, 0, nil)
	if !body.closed {
		t.Fatal("the refused request's body was not closed")
	}
}

// TestThrottleHedgeRefusedFirstWins: a copy refused once the delay ran
// out leaves the copy sent before it running: it may still win.
func TestThrottleHedgeRefusedFirstWins(t *testing.T) {
	srv := newServer(t, slow(50*time.Millisecond))
	th := newTestThrottle(throttle.Config{})
	host := must(url.Parse(srv.URL)).Host
	for range 10000 {
		th.Allow(host, false)
	}
	tr := &Transport{Retrier: retrier(fast), Throttle: th, Hedging: &Hedging{Delay: time.Millisecond, MaxAttempts: 3}}
	r := roundTrip(t, tr, must(http.NewRequest("GET", srv.URL, nil)))
	if r.err != nil || r.body != "slow" || r.doneErr != nil || r.attempts != 1 {
		t.Fatalf("RoundTrip = %q, %v (OnDone: %d attempts, %v); want the first copy's answer, one attempt", r.body, r.err, r.attempts, r.doneErr)
	}
}
