package otelexample_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/backoffhttp"
	"github.com/backoffgo/backoff/examples/otelexample"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
)

// A GET whose server answers 503 twice, retried by a backoffhttp.Transport
// under otelhttp: one span for the call, one client span per attempt with
// its resend count, and the call counted by outcome.
func Example_http() {
	srv := flakyHTTPServer(2)
	defer srv.Close()

	tm := newTelemetry()
	t := &backoffhttp.Transport{
		Policy: backoff.Must(backoff.NewFullJitter(backoff.Config{Base: time.Millisecond, Cap: 10 * time.Millisecond, MaxAttempts: 3}, backoff.RuntimeRng{})),
		// One span per attempt, its resend count set beneath it.
		Base: otelhttp.NewTransport(otelexample.ResendCountTransport{}, otelhttp.WithTracerProvider(tm.tp)),
	}
	if err := otelexample.InstrumentTransport(t, tm.mp.Meter("example")); err != nil {
		panic(err)
	}
	client := &http.Client{Transport: otelexample.CallSpanTransport{Tracer: tm.tp.Tracer("example"), Base: t}}

	resp, err := client.Get(srv.URL)
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Printf("call: %s %s\n", resp.Status, body)

	tm.print(4)
	// Output:
	// call: 200 OK ok
	// call GET Unset
	//   HTTP GET Error
	//   HTTP GET Error resend_count=1
	//   HTTP GET Unset resend_count=2
	// backoff.calls{backoff.outcome=success_after_retry} 1
}

// flakyHTTPServer starts a server on loopback TCP whose first n requests
// are answered 503; it answers "ok" to the others.
func flakyHTTPServer(n int64) *httptest.Server {
	var calls atomic.Int64
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1) <= n {
			http.Error(w, "injected", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok")
	}))
}
