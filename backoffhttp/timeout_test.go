package backoffhttp

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
)

// TestTransportAttemptTimeout: slow attempts are cut short and retried,
// and the returned body outlives the per-attempt timeout. It runs in a
// bubble, where the times are exact and a loaded machine cannot make a
// fast attempt slow.
func TestTransportAttemptTimeout(t *testing.T) {
	const timeout = time.Second
	t.Run("slow then fast", func(t *testing.T) {
		var n atomic.Int32
		inBubble(t, playFaults(&n, slow(time.Minute), slow(time.Minute), ok("hi")), func(t *testing.T, base *http.Transport) {
			req, _ := http.NewRequest("GET", "http://pipe/", nil)
			start := time.Now()
			r := roundTrip(t, &Transport{Base: base, Retrier: retrier(minute), AttemptTimeout: timeout}, req)
			if elapsed := time.Since(start); r.err != nil || r.body != "hi" || r.attempts != 3 || elapsed != 2*timeout+2*time.Minute {
				t.Fatalf("RoundTrip = %q, %v after %d attempts in %v; want hi after 3 in 2m2s", r.body, r.err, r.attempts, elapsed)
			}
			for _, err := range r.retries {
				if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "AttemptTimeout") {
					t.Errorf("retried %v; want a per-attempt timeout", err)
				}
			}
		})
	})
	t.Run("always slow", func(t *testing.T) {
		var n atomic.Int32
		inBubble(t, playFaults(&n, slow(time.Minute)), func(t *testing.T, base *http.Transport) {
			req, _ := http.NewRequest("GET", "http://pipe/", nil)
			r := roundTrip(t, &Transport{Base: base, Retrier: retrier(minute), AttemptTimeout: timeout}, req)
			if !errors.Is(r.err, context.DeadlineExceeded) || !errors.Is(r.err, backoff.ErrExhausted) || r.attempts != 3 {
				t.Errorf("RoundTrip: %v after %d attempts; want timeouts, then ErrExhausted after 3", r.err, r.attempts)
			}
			var timeout interface{ Timeout() bool }
			if !errors.As(r.err, &timeout) || !timeout.Timeout() {
				t.Errorf("%v does not report a timeout", r.err)
			}
			want := "backoff: stopped after 3 attempts (attempts exhausted): backoffhttp: attempt timed out after 1s (Transport.AttemptTimeout)"
			if r.err == nil || r.err.Error() != want {
				t.Errorf("message %q; want %q", r.err, want)
			}
		})
	})
	t.Run("body read after the timeout", func(t *testing.T) {
		var n atomic.Int32
		inBubble(t, playFaults(&n, status(503), func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(200)
			w.(http.Flusher).Flush()
			time.Sleep(2 * timeout) // headers in time, body later
			io.WriteString(w, "late")
		}), func(t *testing.T, base *http.Transport) {
			req, _ := http.NewRequest("GET", "http://pipe/", nil)
			r := roundTrip(t, &Transport{Base: base, Retrier: retrier(minute), AttemptTimeout: timeout}, req)
			if r.err != nil || r.body != "late" {
				t.Errorf("RoundTrip = %q, %v; want the late body", r.body, r.err)
			}
		})
	})
	t.Run("given-up status readable after the timeout", func(t *testing.T) {
		var n atomic.Int32
		inBubble(t, playFaults(&n, status(503)), func(t *testing.T, base *http.Transport) {
			req, _ := http.NewRequest("GET", "http://pipe/", nil)
			tr := &Transport{Base: base, Retrier: retrier(minute), AttemptTimeout: timeout}
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(2 * timeout)
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || string(b) != "status Service Unavailable" {
				t.Errorf("body %q, %v", b, err)
			}
		})
	})
}

// TestTransportAttemptTimeoutHTTP2: over HTTP/2 too, the body of the
// response RoundTrip returns outlives AttemptTimeout. Real sockets, so a
// loaded machine may make an attempt time out: the policy retries until
// one gets its headers in time.
func TestTransportAttemptTimeoutHTTP2(t *testing.T) {
	t.Parallel()
	const timeout = 200 * time.Millisecond
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		select {
		case <-time.After(2 * timeout): // headers in time, body later
			io.WriteString(w, "late")
		case <-r.Context().Done():
		}
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	unlimited := backoff.Must(backoff.NewExponential(backoff.Config{Base: time.Millisecond, Cap: time.Millisecond, MaxAttempts: backoff.Unlimited}))
	c := &counter{base: srv.Client().Transport}
	resp, err := (&Transport{Base: c, Retrier: retrier(unlimited), AttemptTimeout: timeout}).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(b) != "late" || resp.ProtoMajor != 2 {
		t.Errorf("HTTP/%d body %q, %v; want the late body over HTTP/2", resp.ProtoMajor, b, err)
	}
	c.mu.Lock()
	n := len(c.bodies)
	c.mu.Unlock()
	c.check(t, n)
}

// checkTimeout checks that err reads as a timeout, and not as a
// cancellation, however a caller asks.
func checkTimeout(t *testing.T, what string, err error) {
	t.Helper()
	var timeout interface{ Timeout() bool }
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		!errors.As(err, &timeout) || !timeout.Timeout() || !os.IsTimeout(err) {
		t.Errorf("%s: %v: want a timeout, matching context.DeadlineExceeded and not context.Canceled", what, err)
	}
	if strings.Contains(err.Error(), "canceled") {
		t.Errorf("%s: %q speaks of a cancellation", what, err)
	}
}

// TestTransportAttemptTimeoutIsATimeout: an attempt cut short by
// AttemptTimeout fails with a timeout, through http.Client's *url.Error
// too (url.Error.Timeout asks the *backoff.Error), never with
// context.Canceled, which callers read as "the user gave up".
func TestTransportAttemptTimeoutIsATimeout(t *testing.T) {
	check := func(t *testing.T, err error, retries []error) {
		t.Helper()
		var ue *url.Error
		var ne net.Error
		if !errors.As(err, &ue) || !ue.Timeout() || !errors.As(err, &ne) || !ne.Timeout() {
			t.Errorf("%v: want a *url.Error whose Timeout is true", err)
		}
		checkTimeout(t, "the client's error", err)
		if !errors.Is(err, backoff.ErrExhausted) {
			t.Errorf("%v: want ErrExhausted", err)
		}
		for i, err := range retries {
			checkTimeout(t, "retry "+string(rune('1'+i)), err)
		}
	}
	t.Run("HTTP/1.1", func(t *testing.T) {
		var n atomic.Int32
		inBubble(t, playFaults(&n, hang), func(t *testing.T, base *http.Transport) {
			var retries []error
			tr := &Transport{Base: base, AttemptTimeout: time.Second, Retrier: &backoff.Retrier{Policy: minute,
				OnRetry: func(_ context.Context, _ int, err error, _ time.Duration) { retries = append(retries, err) }}}
			start := time.Now()
			_, err := NewClient(tr).Get("http://pipe/")
			if elapsed := time.Since(start); elapsed != 2*time.Minute+3*time.Second || n.Load() != 3 || len(retries) != 2 {
				t.Errorf("%d attempts, %d retries in %v; want 3, 2 in 2m3s", n.Load(), len(retries), elapsed)
			}
			check(t, err, retries)
			want := "backoff: stopped after 3 attempts (attempts exhausted): backoffhttp: attempt timed out after 1s (Transport.AttemptTimeout)"
			if !strings.HasSuffix(err.Error(), want) {
				t.Errorf("message %q; want it to end with %q", err, want)
			}
		})
	})
	t.Run("HTTP/2", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewUnstartedServer(http.HandlerFunc(hang))
		srv.EnableHTTP2 = true
		srv.StartTLS()
		defer srv.Close()
		var retries []error
		two := backoff.Must(backoff.NewExponential(backoff.Config{Base: time.Millisecond, Cap: time.Millisecond, MaxAttempts: 2}))
		tr := &Transport{Base: srv.Client().Transport, AttemptTimeout: 50 * time.Millisecond, Retrier: &backoff.Retrier{Policy: two,
			OnRetry: func(_ context.Context, _ int, err error, _ time.Duration) { retries = append(retries, err) }}}
		_, err := NewClient(tr).Get(srv.URL)
		check(t, err, retries)
	})
}

// lateBy returns base, whose responses come back d after they arrived.
func lateBy(base http.RoundTripper, d time.Duration) roundTripperFunc {
	return func(req *http.Request) (*http.Response, error) {
		resp, err := base.RoundTrip(req)
		time.Sleep(d)
		return resp, err
	}
}

// TestTransportResponseWinsOverTimer: a response that the base transport
// returns, with a nil error, just after AttemptTimeout fired is delivered:
// the server has handled the request, a POST included.
func TestTransportResponseWinsOverTimer(t *testing.T) {
	for _, method := range []string{"GET", "POST"} {
		t.Run(method, func(t *testing.T) {
			var n atomic.Int32
			created := func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusCreated)
				io.WriteString(w, "created")
			}
			inBubble(t, playFaults(&n, created), func(t *testing.T, base *http.Transport) {
				c := &counter{base: lateBy(base, 2*time.Second)}
				tr := &Transport{Base: c, Retrier: retrier(minute), AttemptTimeout: time.Second}
				req, _ := http.NewRequest(method, "http://pipe/", strings.NewReader("order"))
				resp, err := tr.RoundTrip(req)
				if err != nil || resp.StatusCode != http.StatusCreated || n.Load() != 1 {
					t.Fatalf("RoundTrip = %v, %v after %d attempts; want the 201 of the first", resp, err, n.Load())
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				// The attempt's context has ended: the body may be cut short, by a timeout.
				if err == nil && string(b) != "created" || err != nil && (!errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
					t.Errorf("body %q, %v; want it whole, or a timeout", b, err)
				}
				c.check(t, 1)
			})
		})
	}
}

// TestTransportResponseAfterCancel: a base transport that returns a 200,
// with a nil error, once the attempt's context has ended (by the timer, by
// the caller, or both) has its response delivered.
func TestTransportResponseAfterCancel(t *testing.T) {
	tests := []struct {
		name     string
		timeout  time.Duration
		cancelAt time.Duration
	}{
		{"AttemptTimeout", time.Second, 0},
		{"the caller", time.Hour, time.Second},
		{"AttemptTimeout, then the caller", time.Second, 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n atomic.Int32
			inBubble(t, playFaults(&n, ok("hi")), func(t *testing.T, base *http.Transport) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if tt.cancelAt > 0 {
					time.AfterFunc(tt.cancelAt, cancel)
				}
				c := &counter{base: roundTripperFunc(func(req *http.Request) (*http.Response, error) {
					resp, err := base.RoundTrip(req)
					<-req.Context().Done()
					time.Sleep(3 * time.Second) // the caller cancels meanwhile, if it does
					return resp, err
				})}
				tr := &Transport{Base: c, Retrier: retrier(minute), AttemptTimeout: tt.timeout}
				req, _ := http.NewRequestWithContext(ctx, "GET", "http://pipe/", nil)
				resp, err := tr.RoundTrip(req)
				if err != nil || resp == nil || resp.StatusCode != 200 || n.Load() != 1 {
					t.Fatalf("RoundTrip = %v, %v after %d attempts; want the 200 of the first", resp, err, n.Load())
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				c.check(t, 1)
			})
		})
	}
}

// TestTransportTimeoutKeepsOtherErrors: when the time runs out, an error
// of the base transport that is not the end of the attempt's context (here
// a wrapper that flattens errors to text) is kept in the timeout's chain
// and message.
func TestTransportTimeoutKeepsOtherErrors(t *testing.T) {
	var n atomic.Int32
	inBubble(t, playFaults(&n, hang), func(t *testing.T, base *http.Transport) {
		flat := errors.New("upstream failed")
		flatten := roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := base.RoundTrip(req)
			if err != nil {
				return nil, flat
			}
			return resp, nil
		})
		req, _ := http.NewRequest("GET", "http://pipe/", nil)
		r := roundTrip(t, &Transport{Base: flatten, Retrier: retrier(minute), AttemptTimeout: time.Second}, req)
		want := "backoffhttp: attempt timed out after 1s (Transport.AttemptTimeout): upstream failed"
		if len(r.retries) != 2 || r.retries[0].Error() != want || !errors.Is(r.retries[0], flat) || !errors.Is(r.err, context.DeadlineExceeded) {
			t.Errorf("retried %v, returned %v; want %q, matching its own error and a timeout", r.retries, r.err, want)
		}
	})
}

// TestTransportTimeoutAttribution: with AttemptTimeout set, a failure that
// came before the timer fired (a refused connection) is reported as it
// came, not as a timeout, and one that came because it fired (a server
// that does not answer) as the timeout.
func TestTransportTimeoutAttribution(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close() // nothing listens there any more
	hanging := httptest.NewServer(http.HandlerFunc(hang))
	defer hanging.Close()
	two := backoff.Must(backoff.NewExponential(backoff.Config{Base: time.Millisecond, Cap: time.Millisecond, MaxAttempts: 2}))
	for _, tt := range []struct {
		name     string
		url      string
		timeout  time.Duration
		timedOut bool
	}{
		{"refused", closed.URL, time.Hour, false},
		{"no answer", hanging.URL, 50 * time.Millisecond, true},
	} {
		var retries []error
		req, _ := http.NewRequest("GET", tt.url, nil)
		tr := &Transport{Base: &http.Transport{}, AttemptTimeout: tt.timeout, Retrier: &backoff.Retrier{Policy: two,
			OnRetry: func(_ context.Context, _ int, err error, _ time.Duration) { retries = append(retries, err) }}}
		_, err := tr.RoundTrip(req)
		for _, err := range append(retries, err) {
			var op *net.OpError
			var te *timeoutError
			label := strings.Contains(err.Error(), "attempt timed out")
			if errors.As(err, &te) != tt.timedOut || label != tt.timedOut || errors.Is(err, context.DeadlineExceeded) != tt.timedOut {
				t.Errorf("%s: %v; want a timeout: %v", tt.name, err, tt.timedOut)
			}
			if !tt.timedOut && (!errors.As(err, &op) || op.Op != "dial") {
				t.Errorf("%s: %v; want the dial's error", tt.name, err)
			}
		}
		if len(retries) != 1 || !errors.Is(err, backoff.ErrExhausted) {
			t.Errorf("%s: %d retries, %v; want 1 and ErrExhausted", tt.name, len(retries), err)
		}
	}
}
