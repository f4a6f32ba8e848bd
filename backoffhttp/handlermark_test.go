package backoffhttp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
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
