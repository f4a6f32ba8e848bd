package backoffhttp

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/backoffgo/backoff"
)

// The waits are checked in a testing/synctest bubble, where time is fake
// and exact: the server is a real http.Server and the client a real
// http.Transport, connected by net.Pipe instead of sockets (real network
// I/O does not work in a bubble).

// pipeListener is a net.Listener whose connections come from its dial.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// inBubble runs handler on an http.Server reached through a fresh
// http.Transport over net.Pipe, and calls f with the bubble's t and that
// transport; it shuts both down before the bubble ends.
func inBubble(t *testing.T, handler http.HandlerFunc, f func(t *testing.T, base *http.Transport)) {
	synctest.Test(t, func(t *testing.T) {
		l := newPipeListener()
		srv := &http.Server{Handler: handler}
		go srv.Serve(l)
		base := &http.Transport{DialContext: l.dial}
		defer func() {
			srv.Close()
			base.CloseIdleConnections()
		}()
		f(t, base)
	})
}

// minute is the policy of these tests: a fixed minute's wait, so that a
// wait of any other length comes from Retry-After; at most 3 attempts.
var minute = backoff.PolicyFunc(func(attempt int, err error) (time.Duration, error) {
	if attempt >= 3 {
		return 0, backoff.ErrExhausted
	}
	return time.Minute, nil
})

// TestTransportWaits checks the waits between attempts to the nanosecond:
// Retry-After in seconds and as a date, clamped with ClampRetryAfter,
// measured from the response's Date, and ignored when invalid or zero.
func TestTransportWaits(t *testing.T) {
	tests := []struct {
		name          string
		retryAfter    func(now time.Time) string
		serverBehind  time.Duration // the server's clock runs this much late, in its Date header
		maxRetryAfter time.Duration
		want          time.Duration
		clamp         bool // ClampRetryAfter
	}{
		{"seconds", func(time.Time) string { return "7" }, 0, 0, 7 * time.Second, false},
		{"seconds at the default cap", func(time.Time) string { return "30" }, 0, 0, DefaultMaxRetryAfter, false},
		{"seconds over the default cap, clamped", func(time.Time) string { return "3600" }, 0, 0, DefaultMaxRetryAfter, true},
		{"seconds over MaxRetryAfter, clamped", func(time.Time) string { return "10" }, 0, 3 * time.Second, 3 * time.Second, true},
		{"a date", func(now time.Time) string { return now.Add(12 * time.Second).Format(http.TimeFormat) }, 0, 0, 12 * time.Second, false},
		{"a date a day ahead, clamped", func(now time.Time) string { return now.Add(24 * time.Hour).Format(http.TimeFormat) }, 0, 0, DefaultMaxRetryAfter, true},
		{"a date from a server an hour late", func(now time.Time) string { return now.Add(5 * time.Second).Format(http.TimeFormat) },
			time.Hour, 0, 5 * time.Second, false},
		{"zero: the policy's wait", func(time.Time) string { return "0" }, 0, 0, time.Minute, false},
		{"invalid: the policy's wait", func(time.Time) string { return "soon" }, 0, 0, time.Minute, false},
		{"none: the policy's wait", nil, 0, 0, time.Minute, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen []time.Time
			handler := func(w http.ResponseWriter, r *http.Request) {
				seen = append(seen, time.Now())
				if len(seen) == 2 {
					io.WriteString(w, "ok")
					return
				}
				serverNow := time.Now().Add(-tt.serverBehind)
				w.Header().Set("Date", serverNow.UTC().Format(http.TimeFormat))
				if tt.retryAfter != nil {
					w.Header().Set("Retry-After", tt.retryAfter(serverNow.UTC()))
				}
				w.WriteHeader(http.StatusServiceUnavailable)
			}
			inBubble(t, handler, func(t *testing.T, base *http.Transport) {
				req, _ := http.NewRequest("GET", "http://pipe/", nil)
				r := roundTrip(t, &Transport{Base: base, Retrier: retrier(minute), MaxRetryAfter: tt.maxRetryAfter, ClampRetryAfter: tt.clamp}, req)
				if r.err != nil || r.body != "ok" || len(seen) != 2 {
					t.Fatalf("RoundTrip = %q, %v after %d attempts", r.body, r.err, len(seen))
				}
				if got := seen[1].Sub(seen[0]); got != tt.want {
					t.Errorf("waited %v; want %v", got, tt.want)
				}
			})
		})
	}
}

// TestTransportWaitEnds checks when a wait ends early: at once when the
// next attempt could not start before the deadline, at the moment the
// request's context is cancelled.
func TestTransportWaitEnds(t *testing.T) {
	unavailable := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "20")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, "busy")
	}
	t.Run("deadline", func(t *testing.T) {
		inBubble(t, unavailable, func(t *testing.T, base *http.Transport) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", "http://pipe/", nil)
			start := time.Now()
			r := roundTrip(t, &Transport{Base: base, Retrier: retrier(minute)}, req)
			if time.Since(start) != 0 || r.err != nil || r.resp.StatusCode != 503 || r.body != "busy" || !errors.Is(r.doneErr, backoff.ErrDeadline) {
				t.Errorf("after %v: %v, %q, %v (OnDone: %v); want the 503 at once, ErrDeadline", time.Since(start), r.resp, r.body, r.err, r.doneErr)
			}
		})
	})
	t.Run("cancel", func(t *testing.T) {
		inBubble(t, unavailable, func(t *testing.T, base *http.Transport) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(3*time.Second, cancel)
			req, _ := http.NewRequestWithContext(ctx, "GET", "http://pipe/", nil)
			start := time.Now()
			r := roundTrip(t, &Transport{Base: base, Retrier: retrier(minute)}, req)
			if time.Since(start) != 3*time.Second || r.resp != nil || !errors.Is(r.err, context.Canceled) {
				t.Errorf("after %v: %v, %v; want context.Canceled after 3s", time.Since(start), r.resp, r.err)
			}
		})
	})
}

// TestTransportMaxElapsed: the Retrier's MaxElapsed bounds the time from
// the start of the first attempt to the start of the last retry, the
// attempts' own time included: with waits of a minute and MaxElapsed
// 2m30s, a 503 every time is returned after 3 attempts, at 2m, and
// attempts that each run out of an AttemptTimeout of 20 s stop after 2, at
// 1m40s; both stop with ErrDeadline.
func TestTransportMaxElapsed(t *testing.T) {
	always := backoff.PolicyFunc(func(int, error) (time.Duration, error) { return time.Minute, nil })
	for _, tt := range []struct {
		name     string
		fault    fault
		timeout  time.Duration
		status   int // 0: an error
		attempts int
		elapsed  time.Duration
	}{
		{"503", status(503), 0, 503, 3, 2 * time.Minute},
		{"attempts timing out", slow(time.Hour), 20 * time.Second, 0, 2, time.Minute + 40*time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var n atomic.Int32
			inBubble(t, playFaults(&n, tt.fault), func(t *testing.T, base *http.Transport) {
				req, _ := http.NewRequest("GET", "http://pipe/", nil)
				tr := &Transport{Base: base, AttemptTimeout: tt.timeout,
					Retrier: &backoff.Retrier{Policy: always, MaxElapsed: 2*time.Minute + 30*time.Second}}
				start := time.Now()
				r := roundTrip(t, tr, req)
				elapsed := time.Since(start)
				if (r.resp != nil && r.resp.StatusCode == tt.status) != (tt.status != 0) || (r.err == nil) != (tt.status != 0) {
					t.Errorf("RoundTrip = %v, %v; want status %d (0: an error)", r.resp, r.err, tt.status)
				}
				if !errors.Is(r.doneErr, backoff.ErrDeadline) || r.attempts != tt.attempts || int(n.Load()) != tt.attempts || elapsed != tt.elapsed {
					t.Errorf("OnDone %v after %d attempts (%d served) in %v; want ErrDeadline after %d in %v", r.doneErr, r.attempts, n.Load(), elapsed, tt.attempts, tt.elapsed)
				}
			})
		})
	}
}
