package backoffhttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
)

// errDependency is the failure of a dependency that is down.
var errDependency = errors.New("dependency down")

// giveUp runs a loop of 3 attempts over a dependency that is down, on ctx,
// and returns its give-up, a *backoff.Error after retrying.
func giveUp(ctx context.Context) error {
	return backoff.Do(ctx, func(context.Context) error { return errDependency }, threeAttempts)
}

// waitingLoop starts, on ctx, a loop whose first call fails and whose retry
// waits an hour, and returns once that loop is waiting to retry (or, past
// its first failure, after a margin for the loop to reach its wait).
func waitingLoop(ctx context.Context) {
	failed := make(chan struct{})
	hour := backoff.Must(backoff.NewExponential(backoff.Config{Base: time.Hour, Cap: time.Hour, MaxAttempts: 3}))
	go backoff.Do(ctx, func(context.Context) error {
		close(failed) // once: the retry waits until ctx ends
		return errDependency
	}, hour)
	<-failed
	time.Sleep(20 * time.Millisecond)
}

// TestHandlerMarksOnlyGiveUps: a failing response says DontRetryHeader:
// "true" exactly when h marked it with the give-up of a loop that retried,
// or an error that wraps one: a plain client reads the header, and a
// Transport of 3 attempts sends 1 request for those and 3 for the others.
func TestHandlerMarksOnlyGiveUps(t *testing.T) {
	down, _ := unavailable(t)
	client := NewClient(&Transport{Retrier: retrier(threeAttempts)})
	for _, tt := range []struct {
		name   string
		serve  func(w http.ResponseWriter, r *http.Request)
		marked bool
	}{
		{"the give-up, marked", func(w http.ResponseWriter, r *http.Request) {
			MarkFailure(w, giveUp(r.Context()))
			w.WriteHeader(http.StatusServiceUnavailable)
		}, true},
		{"the give-up wrapped with %w, marked", func(w http.ResponseWriter, r *http.Request) {
			MarkFailure(w, fmt.Errorf("inventory: %w", giveUp(r.Context())))
			w.WriteHeader(http.StatusBadGateway)
		}, true},
		{"a Transport's give-up response, passed on", func(w http.ResponseWriter, r *http.Request) {
			req, _ := http.NewRequestWithContext(r.Context(), http.MethodGet, down, nil)
			resp, err := client.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			MarkFailure(w, CheckResponse(resp))
			w.WriteHeader(resp.StatusCode)
		}, true},
		{"the give-up, not marked", func(w http.ResponseWriter, r *http.Request) {
			giveUp(r.Context())
			w.WriteHeader(http.StatusServiceUnavailable)
		}, false},
		{"an absorbed give-up, then a fresh failure", func(w http.ResponseWriter, r *http.Request) {
			giveUp(r.Context()) // an optional dependency: served without it
			MarkFailure(w, errors.New("fresh"))
			w.WriteHeader(http.StatusServiceUnavailable)
		}, false},
		{"a background loop waiting to retry", func(w http.ResponseWriter, r *http.Request) {
			waitingLoop(r.Context())
			w.WriteHeader(http.StatusServiceUnavailable)
		}, false},
		{"a background loop that gave up", func(w http.ResponseWriter, r *http.Request) {
			done := make(chan struct{})
			go func() { giveUp(r.Context()); close(done) }()
			<-done
			w.WriteHeader(http.StatusServiceUnavailable)
		}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var hits atomic.Int64
			srv := httptest.NewServer(Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				tt.serve(w, r)
			}), ServerConfig{Share: neverOver()}))
			defer srv.Close()
			resp, err := http.Get(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got := saysTrue(resp.Header[DontRetryHeader]); !failing(resp.StatusCode) || got != tt.marked {
				t.Errorf("%s with %s %q; want a failure, marked %v", resp.Status, DontRetryHeader, resp.Header[DontRetryHeader], tt.marked)
			}
			calls := int64(3)
			if tt.marked {
				calls = 1
			}
			hits.Store(0)
			if resp, err = client.Get(srv.URL); err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if hits.Load() != calls {
				t.Errorf("a Transport of 3 attempts: %s after %d requests, want %d", resp.Status, hits.Load(), calls)
			}
		})
	}
}

// TestHandlerMarksTheGiveUpsRequest: two requests on one server at once.
// One's loop is retrying while the other fails on its own with a loop of
// its own waiting to retry; then the first gives up and marks its failure
// with that. Only the first is marked.
func TestHandlerMarksTheGiveUpsRequest(t *testing.T) {
	retrying, failed := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/other" {
			<-retrying
			waitingLoop(r.Context())
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		n := 0
		err := backoff.Do(r.Context(), func(context.Context) error {
			if n++; n == 2 {
				close(retrying)
				<-failed
			}
			return errDependency
		}, threeAttempts)
		MarkFailure(w, err)
		w.WriteHeader(http.StatusServiceUnavailable)
	}), ServerConfig{Share: neverOver()}))
	defer srv.Close()
	get := func(path string) bool {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Error(err)
			return false
		}
		resp.Body.Close()
		return saysTrue(resp.Header[DontRetryHeader])
	}
	gaveUp := make(chan bool)
	go func() { gaveUp <- get("/give-up") }()
	other := get("/other")
	close(failed)
	if mine := <-gaveUp; !mine || other {
		t.Errorf("marked: %v for the request that gave up, %v for the other; want true and false", mine, other)
	}
}

// TestMarkFailureKinds: MarkFailure marks, through a real server, the
// failures that are or wrap the give-up of a Transport's loop that retried
// (or, as backoff.Retried says, was refused by its budget), and
// no failure of a loop that stopped after its first attempt for any other
// reason, nor a nil error, nor one set after the status was written.
func TestMarkFailureKinds(t *testing.T) {
	down, _ := unavailable(t)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + lis.Addr().String()
	lis.Close()
	status := func(code int, header ...string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			for i := 0; i < len(header); i += 2 {
				w.Header().Set(header[i], header[i+1])
			}
			w.WriteHeader(code)
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	cutter := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close() // the request was read: its outcome is unknown
		}
	}))
	t.Cleanup(cutter.Close)
	cut := cutter.URL
	notFound, hint := status(http.StatusNotFound), status(http.StatusServiceUnavailable, "Retry-After", "3600")
	spent := backoff.Must(backoff.NewBudget(backoff.BudgetConfig{Burst: 1, Reserve: 0.001, Ratio: 0.001}))
	spent.Withdraw()
	three := NewClient(&Transport{Retrier: retrier(threeAttempts)})
	budgeted := NewClient(&Transport{Retrier: &backoff.Retrier{Policy: threeAttempts, Budget: spent}})
	// do sends method to url with c on r's context and returns the error
	// MarkFailure is given: the Transport's, or CheckResponse's.
	do := func(c *http.Client, r *http.Request, method, url string) error {
		req, _ := http.NewRequestWithContext(r.Context(), method, url, strings.NewReader("x"))
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		return CheckResponse(resp)
	}
	for _, tt := range []struct {
		name   string
		fail   func(r *http.Request) error
		marked bool
	}{
		{"a Transport's error after retrying", func(r *http.Request) error { return do(three, r, http.MethodGet, refused) }, true},
		{"a Transport's give-up response after retrying", func(r *http.Request) error { return do(three, r, http.MethodGet, down) }, true},
		{"that give-up joined with another error", func(r *http.Request) error {
			return errors.Join(errors.New("cache down"), do(three, r, http.MethodGet, down))
		}, true},
		{"a Transport refused by its budget at the first retry", func(r *http.Request) error { return do(budgeted, r, http.MethodGet, down) }, true},
		{"a status not retried", func(r *http.Request) error { return do(three, r, http.MethodGet, notFound) }, false},
		{"a POST's status, not repeatable", func(r *http.Request) error { return do(three, r, http.MethodPost, down) }, false},
		{"a POST's refused connections, retried (nothing was sent)", func(r *http.Request) error { return do(three, r, http.MethodPost, refused) }, true},
		{"a POST's connection cut, not repeatable", func(r *http.Request) error { return do(three, r, http.MethodPost, cut) }, false},
		{"a Retry-After too long at the first attempt", func(r *http.Request) error { return do(three, r, http.MethodGet, hint) }, false},
		{"nil", func(*http.Request) error { return nil }, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, late := range []bool{false, true} {
				srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					err := tt.fail(r)
					if late {
						w.WriteHeader(http.StatusBadGateway)
					}
					MarkFailure(w, err)
					w.WriteHeader(http.StatusBadGateway)
				}))
				srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the late case's second WriteHeader
				srv.Start()
				resp, err := http.Get(srv.URL)
				srv.Close()
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if got := saysTrue(resp.Header[DontRetryHeader]); got != (tt.marked && !late) {
					t.Errorf("MarkFailure after the status: %v; %s %q, want marked %v", late, DontRetryHeader, resp.Header[DontRetryHeader], tt.marked && !late)
				}
			}
		})
	}
}

// TestMarkFailureThenSuccess: a handler that marks a failure with
// MarkFailure and then, having absorbed it (a fallback, a cache), answers
// 200, implicitly or not, or 304, sends no DontRetryHeader on that answer
// under Handler: a success never says "don't retry". (Without Handler
// nothing sees the status that follows; MarkFailure's doc says so.)
func TestMarkFailureThenSuccess(t *testing.T) {
	giveUp := gaveUpBelow(t)
	for _, tt := range []struct {
		name   string
		answer func(w http.ResponseWriter)
		want   int
	}{
		{"implicit 200", func(w http.ResponseWriter) { io.WriteString(w, "from the fallback") }, 200},
		{"200", func(w http.ResponseWriter) { w.WriteHeader(http.StatusOK) }, 200},
		{"304", func(w http.ResponseWriter) { w.WriteHeader(http.StatusNotModified) }, 304},
		{"Flush", func(w http.ResponseWriter) { w.(http.Flusher).Flush() }, 200},
		{"ReadFrom", func(w http.ResponseWriter) { w.(io.ReaderFrom).ReadFrom(strings.NewReader("x")) }, 200},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				MarkFailure(w, giveUp(r))
				if w.Header().Get(DontRetryHeader) != "true" {
					t.Errorf("MarkFailure of a give-up set %s %q; want true", DontRetryHeader, w.Header()[DontRetryHeader])
				}
				tt.answer(w)
			}), ServerConfig{}))
			defer srv.Close()
			resp, err := http.Get(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want || resp.Header[DontRetryHeader] != nil {
				t.Errorf("%s with %s %q; want a %d without it", resp.Status, DontRetryHeader, resp.Header[DontRetryHeader], tt.want)
			}
		})
	}
}

// TestMarkFailureWriters: MarkFailure marks the failing status written
// after it through http.TimeoutHandler's writer (h answering in time, under
// Handler), once when called twice, and not once a Flush has sent the
// status (200) through http.ResponseController.
func TestMarkFailureWriters(t *testing.T) {
	giveUp := gaveUpBelow(t)
	fail := func(before func(http.ResponseWriter), times int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			before(w)
			err := giveUp(r)
			for range times {
				MarkFailure(w, err)
			}
			w.WriteHeader(http.StatusBadGateway)
		}
	}
	nothing := func(http.ResponseWriter) {}
	for _, tt := range []struct {
		name   string
		h      http.Handler
		status int
		header []string
	}{
		{"under Handler(http.TimeoutHandler)", Handler(http.TimeoutHandler(fail(nothing, 1), time.Minute, "late"), ServerConfig{}), 502, []string{"true"}},
		{"called twice", fail(nothing, 2), 502, []string{"true"}},
		{"after a Flush", fail(func(w http.ResponseWriter) { http.NewResponseController(w).Flush() }, 1), 200, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewUnstartedServer(tt.h)
			srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the superfluous WriteHeader after a Flush
			srv.Start()
			defer srv.Close()
			resp, err := http.Get(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.status || !slices.Equal(resp.Header[DontRetryHeader], tt.header) {
				t.Errorf("%s with %s %q; want %d with %q", resp.Status, DontRetryHeader, resp.Header[DontRetryHeader], tt.status, tt.header)
			}
		})
	}
}

// gaveUpBelow returns a function that makes a Transport's request, on r's
// context, to a server that answers 503 every time, and returns
// CheckResponse of the response it gives up on after 3 attempts.
func gaveUpBelow(t *testing.T) func(r *http.Request) error {
	down, _ := unavailable(t)
	return func(r *http.Request) error {
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodGet, down, nil)
		resp, err := NewClient(&Transport{Retrier: retrier(threeAttempts)}).Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		return CheckResponse(resp)
	}
}
