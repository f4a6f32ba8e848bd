package backoffhttp

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// The tests of this file check from outside that a Transport gives back
// what each attempt holds (issue 32, section 3): the attempt's context (and
// with it the AttemptTimeout timer), the response body, the connection.

// attempts is a counter that records the context of each attempt it
// sends; after attempt afterAttempt's response it calls then (when not
// nil).
type attempts struct {
	counter
	afterAttempt int
	then         func()

	ctxs []context.Context // guarded by counter.mu
}

func (a *attempts) RoundTrip(req *http.Request) (*http.Response, error) {
	a.mu.Lock()
	a.ctxs = append(a.ctxs, req.Context())
	n := len(a.ctxs)
	a.mu.Unlock()
	resp, err := a.counter.RoundTrip(req)
	if n == a.afterAttempt && a.then != nil {
		a.then()
	}
	return resp, err
}

// TestTransportGivesBack: with AttemptTimeout set, every attempt's context
// is done once its failure is known, once its response has been discarded
// (drained and closed, or an http.NoBody), and once the caller closes the
// body of the response returned, and not before; every body is closed
// exactly once, the response held when the context ends after a give-up
// included; the connection of every response that ended goes back to the
// pool: a request made afterwards over the same transport opens no
// connection. (No goroutine is left: synctest.Test fails when one outlives
// the bubble's server and transport.)
func TestTransportGivesBack(t *testing.T) {
	empty := func(code int) fault { return func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(code) } }
	tests := []struct {
		name     string
		faults   []fault
		cancelAt int  // the caller cancels when this attempt's response is in; 0: never
		returned bool // RoundTrip returns a response
		bodies   int  // bodies other than http.NoBody
		dials    int  // connections opened, the request made afterwards included; 0: either 1 or 2
	}{
		{name: "200", faults: []fault{ok("hi")}, returned: true, bodies: 1, dials: 1},
		{name: "503 discarded, then 200", faults: []fault{status(503), ok("hi")}, returned: true, bodies: 2, dials: 1},
		{name: "empty 503 (http.NoBody) discarded, then 200", faults: []fault{empty(503), ok("hi")}, returned: true, bodies: 1, dials: 1},
		{name: "connection reset, then 200", faults: []fault{resetMidResponse, ok("hi")}, returned: true, bodies: 1, dials: 2},
		{name: "gave up: the last 503 returned", faults: []fault{status(503)}, returned: true, bodies: 3, dials: 1},
		{name: "gave up: the last empty 503 returned", faults: []fault{empty(503)}, returned: true, bodies: 0, dials: 1},
		// net/http closes a connection whose request's context ends
		// while its body is read, unless it has just read it to its end.
		{name: "the context ends as the 503 arrives", faults: []fault{status(503)}, cancelAt: 1, bodies: 1},
		{name: "the context ends as the last 503 arrives", faults: []fault{status(503)}, cancelAt: 3, bodies: 3},
	}
	for _, tt := range tests {
		for _, timeout := range []time.Duration{0, time.Hour} {
			t.Run(tt.name+"/AttemptTimeout="+timeout.String(), func(t *testing.T) {
				var n atomic.Int32
				inBubble(t, playFaults(&n, tt.faults...), func(t *testing.T, base *http.Transport) {
					dials := countDials(base)
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					a := &attempts{counter: counter{base: base}, afterAttempt: tt.cancelAt, then: cancel}
					tr := &Transport{Base: a, Retrier: retrier(minute), AttemptTimeout: timeout}
					req, _ := http.NewRequestWithContext(ctx, "GET", "http://pipe/", nil)
					resp, err := tr.RoundTrip(req)
					if tt.returned != (resp != nil) || tt.returned != (err == nil) {
						t.Fatalf("RoundTrip = %v, %v; want a response: %v", resp, err, tt.returned)
					}
					if tt.cancelAt > 0 && !errors.Is(err, context.Canceled) {
						t.Errorf("RoundTrip: %v; want context.Canceled", err)
					}
					synctest.Wait()
					last := len(a.ctxs) - 1
					if resp != nil {
						if timeout > 0 && a.ctxs[last].Err() != nil {
							t.Errorf("the returned response's attempt context is done before its body is closed: %v", context.Cause(a.ctxs[last]))
						}
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
					a.check(t, tt.bodies) // waits for the drains
					synctest.Wait()
					if timeout > 0 {
						for i, ctx := range a.ctxs {
							if ctx.Err() == nil {
								t.Errorf("attempt %d of %d: its context is not done", i+1, len(a.ctxs))
							}
						}
					}
					// A request made afterwards finds the connection idle.
					after, err := base.RoundTrip(must(http.NewRequest("GET", "http://pipe/", nil)))
					if err != nil {
						t.Fatal(err)
					}
					io.Copy(io.Discard, after.Body)
					after.Body.Close()
					if got := dials.Load(); got != int32(tt.dials) && (tt.dials != 0 || got > 2) {
						t.Errorf("%d connections opened; want %d", got, tt.dials)
					}
				})
			})
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// countDials makes base count the connections it dials, and returns the
// count.
func countDials(base *http.Transport) *atomic.Int32 {
	dials := new(atomic.Int32)
	dial := base.DialContext
	base.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return dial(ctx, network, addr)
	}
	return dials
}
