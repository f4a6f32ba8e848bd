// Command recipes runs each of the README's recipes (recipes.go) in this
// process, against a local HTTP server and an in-memory database of its
// own, and prints what each did:
//
//	go run ./examples/recipes
//
// Every request to api.example.com goes to the local server instead.
package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"sync/atomic"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/backoffhttp"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "recipes:", err)
		os.Exit(1)
	}
}

// run runs every recipe, printing to w.
func run(w io.Writer) error {
	ctx := context.Background()
	// Logs without their time, so that a run prints the same every time.
	slog.SetDefault(slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	})))
	fast := backoff.Must(backoff.NewExponential(backoff.Config{Base: 10 * time.Millisecond, Cap: 10 * time.Millisecond, MaxAttempts: 5}))

	// A call that fails twice, then succeeds.
	flaky := func() func(context.Context) error {
		calls := 0
		return func(context.Context) error {
			if calls++; calls < 3 {
				return errors.New("connection refused")
			}
			return nil
		}
	}

	err := backoff.Do(ctx, flaky(), ConstantDelay())
	fmt.Fprintf(w, "ConstantDelay: a call that fails twice succeeds at the third, 1s later: %v\n", err)

	err = MaxElapsed(ctx, fast, flaky())
	fmt.Fprintf(w, "MaxElapsed: the same call, retried for at most 30s: %v\n", err)

	for _, state := range []string{"40001", "23505"} {
		calls := 0
		err := ClassifyDriverErrors(ctx, fast, func(context.Context) error {
			calls++
			return sqlError(state)
		})
		fmt.Fprintf(w, "ClassifyDriverErrors: SQLSTATE %s: calls %d, not retryable %v\n", state, calls, errors.Is(err, backoff.ErrPermanent))
	}

	fmt.Fprintln(w, "LogRetries:")
	err = LogRetries(fast).Do(ctx, flaky())
	fmt.Fprintf(w, "LogRetries: %v\n", err)

	srv, undo := apiServer()
	defer srv.Close()
	defer undo()

	fmt.Fprintln(w, "WhyHTTPGaveUp, a server that answers 503 every time:")
	resp, err := WhyHTTPGaveUp().Get("http://api.example.com/down")
	if err != nil {
		return err
	}
	resp.Body.Close()
	fmt.Fprintf(w, "WhyHTTPGaveUp: the client returned %s and no error\n", resp.Status)

	key := []byte("secret")
	signed.Store(0)
	verifyKey = key
	resp, err = SignEachAttempt(key).Get("http://api.example.com/signed")
	if err != nil {
		return err
	}
	resp.Body.Close()
	fmt.Fprintf(w, "SignEachAttempt: %s after %d attempts, each signed and verified\n", resp.Status, signed.Load())

	slowFirst.Store(0)
	start := time.Now()
	resp, err = HedgeSlowReads().Get("http://api.example.com/slow-first")
	if err != nil {
		return err
	}
	resp.Body.Close()
	fmt.Fprintf(w, "HedgeSlowReads: %s within a second, from the hedge, though the first copy would take 10s: %v\n",
		resp.Status, time.Since(start) < time.Second)

	mux := http.NewServeMux()
	Items(mux)
	for _, upstream := range []string{"flaky", "down"} {
		upstreamItems.Store(upstream)
		flakyItems.Store(0)
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/items", nil))
		fmt.Fprintf(w, "Items, over a dependency %s: %d %q, %s: %q\n", upstream, rec.Code, rec.Body.String(),
			backoffhttp.DontRetryHeader, rec.Header().Get(backoffhttp.DontRetryHeader))
	}

	db := openDemoDB(map[int64]int64{1: 100, 2: 100})
	defer db.Close()
	if err := Transfer(ctx, db, 1, 2, 30); err != nil {
		return err
	}
	fmt.Fprintf(w, "Transfer: 30 from account 1 to 2, run %d times (the first failed with SQLSTATE 40001): balances %v\n", demo.begun, demo.balances)
	return nil
}

// sqlError is a database driver's error with a SQLSTATE.
type sqlError string

func (e sqlError) Error() string    { return "SQLSTATE " + string(e) }
func (e sqlError) SQLState() string { return string(e) }

// The local server's state.
var (
	signed        atomic.Int32 // signed attempts verified
	verifyKey     []byte       // the key of /signed
	upstreamItems atomic.Value // "flaky" or "down": /items
	flakyItems    atomic.Int32 // requests of a flaky /items
	slowFirst     atomic.Int32 // requests of /slow-first
)

// apiServer starts the local server that stands for api.example.com, and
// points http.DefaultTransport at it; undo restores it.
func apiServer() (srv *httptest.Server, undo func()) {
	mux := http.NewServeMux()
	mux.HandleFunc("/down", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	})
	mux.HandleFunc("/signed", func(w http.ResponseWriter, r *http.Request) {
		mac := hmac.New(sha256.New, verifyKey)
		mac.Write([]byte(r.Method + " " + r.URL.RequestURI() + " " + r.Header.Get("X-Date")))
		if !hmac.Equal([]byte(hex.EncodeToString(mac.Sum(nil))), []byte(r.Header.Get("X-Signature"))) {
			http.Error(w, "bad signature", http.StatusForbidden)
			return
		}
		if signed.Add(1) == 1 {
			http.Error(w, "busy", http.StatusServiceUnavailable) // the first attempt: retried, signed afresh
			return
		}
		io.WriteString(w, "ok")
	})
	mux.HandleFunc("/slow-first", func(w http.ResponseWriter, r *http.Request) {
		if slowFirst.Add(1) == 1 { // the first copy: 10s, unless cancelled
			select {
			case <-r.Context().Done():
				return
			case <-time.After(10 * time.Second):
			}
		}
		io.WriteString(w, "fast")
	})
	mux.HandleFunc("/items", func(w http.ResponseWriter, r *http.Request) {
		if upstreamItems.Load() == "down" || flakyItems.Add(1) < 3 {
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "3 items")
	})
	srv = httptest.NewServer(mux)
	target, _ := url.Parse(srv.URL)
	base := http.DefaultTransport
	http.DefaultTransport = roundTripper(func(req *http.Request) (*http.Response, error) {
		req = req.Clone(req.Context())
		req.URL.Scheme, req.URL.Host = target.Scheme, target.Host
		return srv.Client().Transport.RoundTrip(req)
	})
	return srv, func() { http.DefaultTransport = base }
}

// roundTripper adapts a function to http.RoundTripper.
type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
