package backoffotel_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/backoffhttp"
	"github.com/backoffgo/backoff/backoffotel"
)

// A GET whose server answers 503 twice, retried by a backoffhttp.Transport
// that NewTransport instruments: one span for the request, one client span
// per attempt with its resend count, and the request's retries and waits.
func ExampleNewTransport() {
	srv := flakyHTTPServer(2)
	defer srv.Close()
	tm := newTelemetry() // an SDK TracerProvider and MeterProvider, read in memory

	rt, err := backoffotel.NewTransport(&backoffhttp.Transport{
		Retrier: &backoff.Retrier{Policy: backoff.Must(backoff.NewExponential(backoff.Config{Base: 5 * time.Millisecond, Cap: 20 * time.Millisecond, MaxAttempts: 3}))},
	}, backoffotel.Config{TracerProvider: tm.tp, MeterProvider: tm.mp})
	if err != nil {
		panic(err)
	}
	client := &http.Client{Transport: rt}

	resp, err := client.Get(srv.URL)
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Printf("call: %s %s\n", resp.Status, body)

	tm.print(4, backoffotel.HTTPRetriesMetric, backoffotel.HTTPRetryDelayMetric)
	// Output:
	// call: 200 OK ok
	// call GET Unset
	//   HTTP GET Error
	//   HTTP GET Error resend_count=1
	//   HTTP GET Unset resend_count=2
	// backoff.http.client.request.retries count=1 sum=2
	// backoff.http.client.request.retry_delay count=1 sum=0.015
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
