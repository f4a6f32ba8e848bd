package backoffhttp

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/retryshare"
)

// overShare returns a Share that is over its threshold, on a clock that
// never moves: every failing answer through its Handler says don't retry.
func overShare(t *testing.T) *retryshare.Share {
	share, err := retryshare.New(retryshare.Config{Threshold: 1e-9, Burst: 1, Now: func() time.Time { return time.Unix(0, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	// One failing answer let be retried spends the allowance of 1, which
	// gains a billionth per request: the route "" (no ServeMux) is over by
	// its answers while they are all failing (every one significant).
	share.Record("", "", false)
	if share.Refuse("", "") {
		t.Fatal("the first failing answer refused")
	}
	return share
}

// TestHandlerHeader: the header is added to a final failing status that
// RetryableStatus reports while the share refuses its answers, and by h
// with MarkFailure for the give-up of its loop; never below 400, nor once
// the body has begun.
func TestHandlerHeader(t *testing.T) {
	fails := func(code int) func(w http.ResponseWriter, r *http.Request) {
		return func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(code) }
	}
	for _, tt := range []struct {
		name  string
		serve func(w http.ResponseWriter, r *http.Request)
		over  bool // the share is over its threshold
		want  bool
	}{
		{"503, over", fails(http.StatusServiceUnavailable), true, true},
		{"429, over", fails(http.StatusTooManyRequests), true, true},
		{"404, over: not a status a Transport retries", fails(http.StatusNotFound), true, false},
		{"400, over: not a status a Transport retries", fails(http.StatusBadRequest), true, false},
		{"500, over", fails(http.StatusInternalServerError), true, true},
		{"503, not over", fails(http.StatusServiceUnavailable), false, false},
		{"399, over", fails(399), true, false},
		{"200, over", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("fallback")) }, true, false},
		{"503 marked by h with its give-up, not over", func(w http.ResponseWriter, r *http.Request) {
			MarkFailure(w, giveUp(r.Context()))
			w.WriteHeader(http.StatusServiceUnavailable)
		}, false, true},
		{"a loop that retried and succeeded, not over", func(w http.ResponseWriter, r *http.Request) {
			n := 0
			MarkFailure(w, backoff.Do(r.Context(), func(context.Context) error {
				if n++; n < 2 {
					return errors.New("down")
				}
				return nil
			}, threeAttempts))
			w.WriteHeader(http.StatusServiceUnavailable)
		}, false, false},
		{"h's own false, not over", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set(DontRetryHeader, "false")
			w.WriteHeader(http.StatusServiceUnavailable)
		}, false, false},
		{"an informational status first, over", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusEarlyHints)
			w.WriteHeader(http.StatusBadGateway)
		}, true, true},
		{"a flush before the status, over", func(w http.ResponseWriter, r *http.Request) {
			w.(http.Flusher).Flush()
			w.WriteHeader(http.StatusServiceUnavailable) // too late: 200 is sent
		}, true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			share := backoff.Must(retryshare.New(retryshare.Config{}))
			if tt.over {
				share = overShare(t)
			}
			srv := httptest.NewServer(Handler(http.HandlerFunc(tt.serve), ServerConfig{Share: share}))
			defer srv.Close()
			resp, err := http.Get(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got := saysTrue(resp.Header[DontRetryHeader]); got != tt.want {
				t.Errorf("%s: header %q, want \"true\" %v", resp.Status, resp.Header[DontRetryHeader], tt.want)
			}
		})
	}
}

// TestHandlerOutsideTimeoutHandler: h's loop has retried twice and its third
// call hangs past http.TimeoutHandler's limit, while the share is over.
// With Handler outside, the 503 that TimeoutHandler sends carries the
// header every time, and a caller of 3 attempts stands back (3 calls on
// the dependency); with Handler inside, the 503 never passes through
// Handler, so it never carries the header and the caller retries (9
// calls). With a share never over, no 503 is marked: h's loop was still
// retrying, it had not given up. Repeated, as the marking once was a race.
func TestHandlerOutsideTimeoutHandler(t *testing.T) {
	for _, tt := range []struct {
		name   string
		wrap   func(http.Handler, *retryshare.Share) http.Handler
		marked bool
		calls  int
	}{
		{"Handler outside", func(h http.Handler, s *retryshare.Share) http.Handler {
			return Handler(http.TimeoutHandler(h, 50*time.Millisecond, ""), ServerConfig{Share: s})
		}, true, 3},
		{"Handler inside", func(h http.Handler, s *retryshare.Share) http.Handler {
			return http.TimeoutHandler(Handler(h, ServerConfig{Share: s}), 50*time.Millisecond, "")
		}, false, 9},
		{"a share never over", func(h http.Handler, _ *retryshare.Share) http.Handler {
			return Handler(http.TimeoutHandler(h, 50*time.Millisecond, ""), ServerConfig{Share: neverOver()})
		}, false, 9},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for run := range 20 {
				var calls atomic.Int64
				h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					n := 0
					err := backoff.Do(r.Context(), func(ctx context.Context) error {
						calls.Add(1)
						if n++; n < 3 {
							return errors.New("down")
						}
						<-ctx.Done() // the third call hangs
						return ctx.Err()
					}, threeAttempts)
					if err != nil {
						w.WriteHeader(http.StatusBadGateway)
					}
				})
				inBubble(t, tt.wrap(h, overShare(t)).ServeHTTP, func(t *testing.T, base *http.Transport) {
					req, _ := http.NewRequest("GET", "http://pipe/", nil)
					r := roundTrip(t, &Transport{Base: base, Retrier: retrier(threeAttempts)}, req)
					if r.err != nil {
						t.Fatal(r.err)
					}
					if got := saysTrue(r.resp.Header[DontRetryHeader]); r.resp.StatusCode != http.StatusServiceUnavailable || got != tt.marked || calls.Load() != int64(tt.calls) {
						t.Errorf("run %d: %s, header %v, %d calls on the dependency; want 503, header %v, %d calls", run, r.resp.Status, got, calls.Load(), tt.marked, tt.calls)
					}
				})
			}
		})
	}
}

// TestHandlerDecidesOnce: the first final status decides; a status written
// after it (which net/http ignores) leaves the header map alone, so that
// middleware reading it afterwards sees what was sent.
func TestHandlerDecidesOnce(t *testing.T) {
	for _, first := range []int{http.StatusOK, http.StatusNoContent, http.StatusServiceUnavailable} {
		rec := httptest.NewRecorder()
		Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(first)
			w.WriteHeader(http.StatusBadGateway)
		}), ServerConfig{Share: overShare(t)}).
			ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		want := failing(first)
		if got := saysTrue(rec.Header()[DontRetryHeader]); got != want || rec.Code != first {
			t.Errorf("%d then 502: sent %d, header map says don't retry %v; want %d, %v", first, rec.Code, got, first, want)
		}
	}
}

// TestHandlerCounts: with a share, the failing answers say "don't retry"
// once more than its threshold of the window's requests were retries (by
// their attempt count; a malformed count is a first attempt), with enough
// of them in the caller's slot, and no longer once they have left the
// window; successes never do; with a share whose Threshold is 1, no answer
// does. The share has one caller slot (connections may differ), counts 1
// retry as enough (MinRetries 1; the slot's must be significantly more
// than Threshold too), and an allowance of a million failing answers, so
// that only the retries decide.
func TestHandlerCounts(t *testing.T) {
	now := time.Unix(0, 0)
	share, err := retryshare.New(retryshare.Config{Threshold: 0.1, Window: 10 * time.Second, MinRetries: 1, Callers: 1, Burst: 1_000_000, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	status, served, code := http.StatusServiceUnavailable, 0, 0
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served++
		if Attempt(r) == 1 {
			return // 200
		}
		w.WriteHeader(status)
	})
	counted := httptest.NewServer(Handler(h, ServerConfig{Share: share}))
	defer counted.Close()
	uncounted := httptest.NewServer(Handler(h, ServerConfig{Share: neverOver()}))
	defer uncounted.Close()
	send := func(url string, count ...string) bool {
		t.Helper()
		req, _ := http.NewRequest("GET", url, nil)
		if count != nil {
			req.Header[AttemptCountHeader] = count
		}
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		code = resp.StatusCode
		return saysTrue(resp.Header[DontRetryHeader])
	}
	for i := range 18 {
		if send(counted.URL) || send(counted.URL, "1") || send(counted.URL, "x") {
			t.Fatalf("first attempts (%d of each kind): an answer says don't retry", i+1)
		}
	}
	// 54 first attempts: the route is over from the seventh retry (7 of
	// 61), the caller's slot from the eleventh (10 of 64 are not
	// significant, P 0.16; 11 of 65 are, by the normal approximation).
	for i := range 10 {
		if send(counted.URL, "2") {
			t.Fatalf("retry %d of %d requests: don't retry already", i+1, 55+i)
		}
	}
	if !send(counted.URL, "3") {
		t.Error("11 retries of 65 requests: the answer does not say don't retry")
	}
	// Over the threshold, a retry is refused as it arrives, whatever h
	// would answer; a first try is served, and its 200 is not marked.
	status = http.StatusOK
	before := served
	if !send(counted.URL, "2") || code != http.StatusServiceUnavailable || served != before {
		t.Errorf("over the threshold, a retry h would answer 200: status %d, h ran %d times; want 503 saying don't retry, h not run", code, served-before)
	}
	if send(counted.URL) || code != http.StatusOK {
		t.Errorf("over the threshold, a first try: status %d, or it says don't retry; want 200", code)
	}
	status = http.StatusServiceUnavailable
	for range 20 {
		if send(uncounted.URL, "2") {
			t.Fatal("with a share never over, retries made an answer say don't retry")
		}
	}
	// The retries have left the window: a retry after a first try (1 of 2,
	// not significant; 1 of 1 would be, P = Threshold) is let be retried.
	now = now.Add(10 * time.Second)
	if send(counted.URL) || send(counted.URL, "2") {
		t.Error("the retries have left the window: an answer still says don't retry")
	}
}

// neverOver returns a Share whose Threshold is 1: it counts, and is never
// over, so that a Handler over it marks nothing.
func neverOver() *retryshare.Share {
	return backoff.Must(retryshare.New(retryshare.Config{Threshold: 1}))
}

// TestHandlerDefaultShare: a Handler whose ServerConfig has no Share counts
// in one of its own, of retryshare's defaults (an allowance of 4, gaining
// 0.1 per request): its fifth failing answer of five first tries is
// marked, and another Handler's first is not. (Retries would be over from
// the second: 2 retries of 2 requests.)
func TestHandlerDefaultShare(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
	a, b := Handler(h, ServerConfig{}), Handler(h, ServerConfig{})
	marked := func(h http.Handler) bool {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		return saysTrue(rec.Result().Header[DontRetryHeader])
	}
	if got := []bool{marked(a), marked(a), marked(a), marked(a), marked(a), marked(b)}; !slices.Equal(got, []bool{false, false, false, false, true, false}) {
		t.Errorf("five first tries through one Handler, then one through another: marked %v; want [false false false false true false]", got)
	}
}

// TestHandlerRoutes: Handler reads the route when the status is written,
// so that a ServeMux below it has set r.Pattern: each pattern counts in a
// window of its own. A Route function replaces it: returning one route for
// all, the second pattern's first failing answer is refused already.
func TestHandlerRoutes(t *testing.T) {
	for _, tt := range []struct {
		name  string
		route func(*http.Request) string
		want  []string // the patterns Route saw
		b     bool     // /b/1's first failing answer says don't retry
	}{
		{"r.Pattern", nil, nil, false},
		{"one route", func(r *http.Request) string { return "all" }, []string{"GET /a", "GET /a", "GET /a", "GET /b/{id}"}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var seen []string
			cfg := ServerConfig{Share: backoff.Must(retryshare.New(retryshare.Config{Burst: 1, Now: func() time.Time { return time.Unix(0, 0) }}))}
			if tt.route != nil {
				cfg.Route = func(r *http.Request) string {
					seen = append(seen, r.Pattern)
					return tt.route(r)
				}
			}
			mux := http.NewServeMux()
			fail := func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }
			mux.HandleFunc("GET /a", fail)
			mux.HandleFunc("GET /b/{id}", fail)
			h := Handler(mux, cfg)
			marked := func(path string) bool {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
				return saysTrue(rec.Result().Header[DontRetryHeader])
			}
			// The first failing answer spends the allowance of 1; the next
			// two, significant, are refused.
			if got := []bool{marked("/a"), marked("/a"), marked("/a")}; !slices.Equal(got, []bool{false, true, true}) {
				t.Errorf("three failing answers of /a: marked %v, want [false true true]", got)
			}
			if got := marked("/b/1"); got != tt.b {
				t.Errorf("the first failing answer of /b/1: marked %v, want %v", got, tt.b)
			}
			if !slices.Equal(seen, tt.want) {
				t.Errorf("Route saw the patterns %q, want %q", seen, tt.want)
			}
		})
	}
}

// TestHandlerCallers: a caller whose requests say they are retries makes
// the route over by its retries, and only its own failing answers say not
// to retry: by default callers are told apart by r.RemoteAddr, or by what
// Caller returns.
func TestHandlerCallers(t *testing.T) {
	for _, tt := range []struct {
		name   string
		caller func(*http.Request) string
		honest bool // the honest caller's failing answer says don't retry
	}{
		{"r.RemoteAddr, the same for both", nil, true},
		{"by a header", func(r *http.Request) string { return r.Header.Get("Client") }, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fail := false
			h := Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if fail {
					w.WriteHeader(http.StatusServiceUnavailable)
				}
			}), ServerConfig{Share: backoff.Must(retryshare.New(retryshare.Config{Now: func() time.Time { return time.Unix(0, 0) }})), Caller: tt.caller})
			send := func(client string, retry bool) bool {
				req := httptest.NewRequest("GET", "/", nil) // RemoteAddr 192.0.2.1:1234
				req.Header.Set("Client", client)
				if retry {
					req.Header.Set(AttemptCountHeader, "2")
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				return saysTrue(rec.Result().Header[DontRetryHeader])
			}
			for range 20 { // the liar's slots over: 20 retries of 20 requests, significant
				send("honest", false)
				send("liar", true)
			}
			fail = true
			if !send("liar", true) {
				t.Error("the liar's failing answer does not say don't retry")
			}
			if got := send("honest", false); got != tt.honest {
				t.Errorf("the honest caller's failing answer says don't retry: %v, want %v", got, tt.honest)
			}
		})
	}
}

// TestHandlerRecordsPanics: a request whose h panicked before writing a
// status is recorded all the same: here a retry, which with the next one
// makes 2 retries of 2 requests, enough at Threshold 0.5 and MinRetries 1.
func TestHandlerRecordsPanics(t *testing.T) {
	share := backoff.Must(retryshare.New(retryshare.Config{Threshold: 0.5, MinRetries: 1, Now: func() time.Time { return time.Unix(0, 0) }}))
	serve := func(h http.HandlerFunc) bool {
		req := httptest.NewRequest("GET", "/", nil)
		req.Header.Set(AttemptCountHeader, "2")
		rec := httptest.NewRecorder()
		func() {
			defer func() { recover() }()
			Handler(h, ServerConfig{Share: share}).ServeHTTP(rec, req)
		}()
		return saysTrue(rec.Result().Header[DontRetryHeader])
	}
	serve(func(w http.ResponseWriter, r *http.Request) { panic(http.ErrAbortHandler) })
	if !serve(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }) {
		t.Error("the retry after a panicking one is not refused: the panicking one was not recorded")
	}
}

// TestHandlerImplicitOK: h that marks its failure and then writes nothing
// sends a 200, which does not say don't retry.
func TestHandlerImplicitOK(t *testing.T) {
	srv := httptest.NewServer(Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		MarkFailure(w, giveUp(r.Context()))
	}), ServerConfig{}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header[DontRetryHeader] != nil {
		t.Errorf("%s, header %q; want 200 without it", resp.Status, resp.Header[DontRetryHeader])
	}
}
