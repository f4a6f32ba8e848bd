package backoffhttp

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
)

// TestTransportStandsBack: a response that says its server retried is
// returned at once, its reason ErrRetriedBelow; RetryInner retries it.
func TestTransportStandsBack(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set(DontRetryHeader, "true")
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	policy := backoff.Must(backoff.NewExponential(backoff.Config{Base: time.Nanosecond, Cap: time.Nanosecond, MaxAttempts: 3}))
	for _, tt := range []struct {
		retryInner bool
		hits       int64
		reason     error
	}{{false, 1, backoff.ErrRetriedBelow}, {true, 3, backoff.ErrExhausted}} {
		hits.Store(0)
		var stop error
		client := NewClient(&Transport{Retrier: &backoff.Retrier{Policy: policy, RetryInner: tt.retryInner, OnDone: func(_ context.Context, _ int, err error) { stop = err }}})
		resp, err := client.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		var e *backoff.Error
		if resp.StatusCode != http.StatusServiceUnavailable || hits.Load() != tt.hits || !errors.As(stop, &e) || e.Reason != tt.reason {
			t.Errorf("RetryInner %v: %s after %d requests, stopped with %v; want 503 after %d, reason %v", tt.retryInner, resp.Status, hits.Load(), stop, tt.hits, tt.reason)
		}
	}
}

// TestCheckResponseDontRetry: CheckResponse's error unwraps to
// ErrRetriedBelow exactly when the response carries the header.
func TestCheckResponseDontRetry(t *testing.T) {
	for _, header := range []bool{false, true} {
		resp := &http.Response{StatusCode: 503, Status: "503 Service Unavailable", Header: http.Header{}}
		if header {
			resp.Header.Set(DontRetryHeader, "true")
		}
		err := CheckResponse(resp)
		var e *StatusError
		if !errors.As(err, &e) || e.DontRetry != header || errors.Is(err, backoff.ErrRetriedBelow) != header || !backoff.Retryable(err) {
			t.Errorf("header %v: CheckResponse = %#v", header, err)
		}
	}
	if (*StatusError)(nil).Unwrap() != nil {
		t.Error("a nil *StatusError unwraps to something")
	}
}

// TestDontRetryRead: only DontRetryHeader with the single value "true", in
// any ASCII case, on a status of 400 or more, says "don't retry"; the
// same rule for every status. A Transport returns such an answer at once
// (ErrRetriedBelow), and retries any other as its status says; the *StatusError
// of CheckResponse unwraps to ErrRetriedBelow exactly then.
func TestDontRetryRead(t *testing.T) {
	headers := []struct {
		name   string
		header http.Header
		signal bool
	}{
		{"true", http.Header{DontRetryHeader: {"true"}}, true},
		{"TRUE", http.Header{DontRetryHeader: {"TRUE"}}, true},
		{"True", http.Header{DontRetryHeader: {"True"}}, true},
		{"false", http.Header{DontRetryHeader: {"false"}}, false},
		{"empty", http.Header{DontRetryHeader: {""}}, false},
		{"1", http.Header{DontRetryHeader: {"1"}}, false},
		{"yes", http.Header{DontRetryHeader: {"yes"}}, false},
		{"trux", http.Header{DontRetryHeader: {"trux"}}, false},
		{"truer", http.Header{DontRetryHeader: {"truer"}}, false},
		{"true twice", http.Header{DontRetryHeader: {"true", "true"}}, false},
		{"true, false", http.Header{DontRetryHeader: {"true", "false"}}, false},
		{"absent", http.Header{}, false},
		{"X-Envoy-Overloaded: true", http.Header{"X-Envoy-Overloaded": {"true"}}, false},
		{"X-Envoy-Overloaded: false", http.Header{"X-Envoy-Overloaded": {"false"}}, false},
	}
	for _, status := range []int{408, 425, 429, 500, 502, 503, 504} {
		for _, h := range headers {
			name := strconv.Itoa(status) + " " + h.name
			resp := &http.Response{StatusCode: status, Header: h.header}
			var e *StatusError
			if err := CheckResponse(resp); !errors.As(err, &e) || e.DontRetry != h.signal || errors.Is(err, backoff.ErrRetriedBelow) != h.signal {
				t.Errorf("%s: CheckResponse = %#v, want DontRetry %v", name, err, h.signal)
			}
			hits, stop := standBack(t, status, h.header)
			want, reason := int64(3), error(backoff.ErrExhausted)
			if h.signal {
				want, reason = 1, backoff.ErrRetriedBelow
			}
			if hits != want || !errors.Is(stop, reason) {
				t.Errorf("%s: %d requests, stopped with %v; want %d, %v", name, hits, stop, want, reason)
			}
		}
	}
	// Below 400 the header says nothing: no error, nothing to retry.
	for _, status := range []int{200, 204, 304, 399} {
		if err := CheckResponse(&http.Response{StatusCode: status, Header: http.Header{DontRetryHeader: {"true"}}}); err != nil {
			t.Errorf("%d with the header: CheckResponse = %v", status, err)
		}
	}
	// A status that is not retried (404) is the same: CheckResponse says
	// DontRetry with the header, and the Transport returns it once.
	var e *StatusError
	if err := CheckResponse(&http.Response{StatusCode: 404, Header: http.Header{DontRetryHeader: {"true"}}}); !errors.As(err, &e) || !e.DontRetry || e.Retryable() {
		t.Errorf("404 with the header: CheckResponse = %#v", err)
	}
}

// standBack sends one GET through a Transport of 3 attempts to a server
// that answers status with header, and returns the requests it received
// and the reason the Transport stopped.
func standBack(t *testing.T, status int, header http.Header) (int64, error) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		for k, v := range header {
			w.Header()[k] = v
		}
		w.WriteHeader(status)
	}))
	defer srv.Close()
	var stop error
	resp, err := NewClient(&Transport{Retrier: &backoff.Retrier{Policy: threeAttempts, OnDone: func(_ context.Context, _ int, err error) { stop = err }}}).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return hits.Load(), stop
}

// TestRelayKeepsFalse: a Handler-wrapped service that relays its upstream's
// answer with its headers, through a call that is not retried (a POST),
// passes "false" on as it is: its caller retries, 3 calls at the upstream.
// (Its Share is never over: otherwise the caller's retries would make the
// relay's own answer "true", a decision of its own.)
func TestRelayKeepsFalse(t *testing.T) {
	var hits atomic.Int64
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set(DontRetryHeader, "false")
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer upstream.Close()
	client := NewClient(&Transport{Retrier: retrier(threeAttempts)})
	relay := httptest.NewServer(Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodPost, upstream.URL, nil)
		resp, err := client.Do(req)
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
	}), ServerConfig{Share: neverOver()})) // never over: the relay's own retries decide, and it has none
	defer relay.Close()
	resp, err := NewClient(&Transport{Retrier: retrier(threeAttempts)}).Get(relay.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header[DontRetryHeader]; !slices.Equal(got, []string{"false"}) || hits.Load() != 3 {
		t.Errorf("relayed header %q after %d calls at the upstream; want [false] after 3", got, hits.Load())
	}
}

// TestAttemptCount: a Transport sends no attempt count on a first attempt
// and the attempt's number on each retry, replacing the request's own;
// the caller's request is left as it was.
func TestAttemptCount(t *testing.T) {
	var mu sync.Mutex
	var seen [][]string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header[AttemptCountHeader])
		mu.Unlock()
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	for _, tt := range []struct {
		name string
		own  []string
		want [][]string
	}{
		{"none of its own", nil, [][]string{nil, {"2"}, {"3"}}},
		{"a count of its own", []string{"7"}, [][]string{{"7"}, {"2"}, {"3"}}},
	} {
		seen = nil
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		if tt.own != nil {
			req.Header[AttemptCountHeader] = tt.own
		}
		before := req.Header.Clone()
		resp, err := (&Transport{Retrier: retrier(threeAttempts)}).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if !slices.EqualFunc(seen, tt.want, slices.Equal) {
			t.Errorf("%s: the server saw counts %q, want %q", tt.name, seen, tt.want)
		}
		if !equalHeader(req.Header, before) {
			t.Errorf("%s: the caller's header became %v, was %v", tt.name, req.Header, before)
		}
	}
}

// TestAttemptCountNilHeader: a request built by hand without a Header, to
// a Base that accepts one (net/http's refuses it), is retried with a header
// of its own, and left without one.
func TestAttemptCountNilHeader(t *testing.T) {
	var seen []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get(AttemptCountHeader))
		mu.Unlock()
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	req.Header = nil
	resp, err := (&Transport{Retrier: retrier(threeAttempts), Base: headerless{}}).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if !slices.Equal(seen, []string{"", "2", "3"}) || req.Header != nil {
		t.Errorf("counts %q, the request's header %v; want [ 2 3] and nil", seen, req.Header)
	}
}

// headerless is a Base that sends a request without a Header with an
// empty one.
type headerless struct{}

func (headerless) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header == nil {
		req = req.Clone(req.Context())
		req.Header = http.Header{}
	}
	return http.DefaultTransport.RoundTrip(req)
}

func equalHeader(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

// TestAttempt: a request's attempt is the one count it carries, a decimal
// number of 2 or more; anything else is a first attempt, 1.
func TestAttempt(t *testing.T) {
	for _, tt := range []struct {
		values []string
		want   int
	}{
		{nil, 1}, {[]string{""}, 1}, {[]string{"1"}, 1}, {[]string{"0"}, 1}, {[]string{"00"}, 1},
		{[]string{"2"}, 2}, {[]string{"3"}, 3}, {[]string{"10"}, 10}, {[]string{"19"}, 19}, {[]string{"02"}, 2},
		{[]string{strconv.Itoa(math.MaxInt)}, math.MaxInt},
		{[]string{"-2"}, 1}, {[]string{"+2"}, 1}, {[]string{" 2"}, 1}, {[]string{"2 "}, 1}, {[]string{"2x"}, 1},
		{[]string{"x"}, 1}, {[]string{"2.0"}, 1}, {[]string{"0x10"}, 1}, {[]string{"2_0"}, 1},
		{[]string{"99999999999999999999"}, 1}, {[]string{"2", "3"}, 1}, {[]string{"2", ""}, 1},
	} {
		req := &http.Request{Header: http.Header{}}
		if tt.values != nil {
			req.Header[AttemptCountHeader] = tt.values
		}
		if got := Attempt(req); got != tt.want {
			t.Errorf("Attempt with %q = %d, want %d", tt.values, got, tt.want)
		}
	}
	if got := Attempt(nil); got != 1 {
		t.Errorf("Attempt(nil) = %d, want 1", got)
	}
	if got := Attempt(&http.Request{}); got != 1 {
		t.Errorf("Attempt of a request without a Header = %d, want 1", got)
	}
}

// TestAttemptUnderTransport: a Transport's Base reads each attempt's
// number with Attempt, and so does the server it calls.
func TestAttemptUnderTransport(t *testing.T) {
	var mu sync.Mutex
	var atServer, atBase []int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		atServer = append(atServer, Attempt(r))
		mu.Unlock()
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	base := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		mu.Lock()
		atBase = append(atBase, Attempt(r))
		mu.Unlock()
		return http.DefaultTransport.RoundTrip(r)
	})
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	resp, err := (&Transport{Retrier: retrier(threeAttempts), Base: base}).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	if want := []int{1, 2, 3}; !slices.Equal(atBase, want) || !slices.Equal(atServer, want) {
		t.Errorf("attempts at the base %v, at the server %v; want %v at both", atBase, atServer, want)
	}
}
