package backoffhttp

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
)

// The tests of this file reproduce the faults of issue 16, section 3, each
// against a real server: an http.Server over net.Pipe in a synctest bubble
// where the test waits, an httptest server where it needs real sockets.

// countedBody is a response body that counts its Close calls.
type countedBody struct {
	io.ReadCloser
	closes atomic.Int32
}

func (b *countedBody) Close() error {
	b.closes.Add(1)
	return b.ReadCloser.Close()
}

// counter wraps a real transport and counts the Close calls of every
// response body it hands out, but http.NoBody, which it leaves as it is.
type counter struct {
	base   http.RoundTripper
	mu     sync.Mutex
	bodies []*countedBody
}

func (c *counter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(req)
	if resp != nil && resp.Body != http.NoBody {
		b := &countedBody{ReadCloser: resp.Body}
		c.mu.Lock()
		c.bodies = append(c.bodies, b)
		c.mu.Unlock()
		resp.Body = b
	}
	return resp, err
}

// check reports an error unless there were n bodies, each closed exactly
// once. A discarded body is drained on a goroutine of its own, which
// closes it within drainTimeout: check waits that long for the closes (in
// fake time, in a bubble).
func (c *counter) check(t *testing.T, n int) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for deadline := time.Now().Add(drainTimeout + time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if !slices.ContainsFunc(c.bodies, func(b *countedBody) bool { return b.closes.Load() == 0 }) {
			break
		}
	}
	if len(c.bodies) != n {
		t.Errorf("%d response bodies; want %d", len(c.bodies), n)
	}
	for i, b := range c.bodies {
		if got := b.closes.Load(); got != 1 {
			t.Errorf("body %d closed %d times; want exactly once", i+1, got)
		}
	}
}

// playFaults is a handler that plays faults[i] for attempt i (the last one
// for every later attempt) and counts the attempts in n.
func playFaults(n *atomic.Int32, faults ...fault) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1))
		io.Copy(io.Discard, r.Body)
		faults[min(i, len(faults))-1](w, r)
	}
}

// stall answers code with a Content-Length of 10 and sends no byte of the
// body, until the client goes away.
func stall(code int) fault {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "10")
		w.WriteHeader(code)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}
}

// hang never answers, until the client goes away.
func hang(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }

// TestTransportClosesOnce counts the Close calls of every response body,
// on the paths where the caller cancels during the wait or during the
// drain (where each body was closed twice) and on the others.
func TestTransportClosesOnce(t *testing.T) {
	tests := []struct {
		name     string
		faults   []fault
		cancelAt time.Duration // when the caller cancels; 0: never
		onRetry  bool          // the caller cancels in OnRetry
		bodies   int
		wantErr  error // nil: want a response
	}{
		{name: "cancel during the wait", faults: []fault{status(503)}, onRetry: true, bodies: 1, wantErr: context.Canceled},
		{name: "cancel during the drain and the wait", faults: []fault{stall(503)}, cancelAt: 100 * time.Millisecond, bodies: 1, wantErr: context.Canceled},
		{name: "retried twice, then 200", faults: []fault{status(503), status(500), ok("hi")}, bodies: 3},
		{name: "given up: the last 503 returned", faults: []fault{status(503)}, bodies: 3},
		{name: "not retried", faults: []fault{status(404)}, bodies: 1},
	}
	for _, tt := range tests {
		for _, timeout := range []time.Duration{0, time.Hour} {
			t.Run(tt.name+"/AttemptTimeout="+timeout.String(), func(t *testing.T) {
				var n atomic.Int32
				inBubble(t, playFaults(&n, tt.faults...), func(t *testing.T, base *http.Transport) {
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					if tt.cancelAt > 0 {
						time.AfterFunc(tt.cancelAt, cancel)
					}
					c := &counter{base: base}
					tr := &Transport{Base: c, Retrier: retrier(minute), AttemptTimeout: timeout}
					if tt.onRetry {
						tr.Retrier.OnRetry = func(context.Context, int, error, time.Duration) { cancel() }
					}
					req, _ := http.NewRequestWithContext(ctx, "GET", "http://pipe/", nil)
					resp, err := tr.RoundTrip(req)
					if tt.wantErr != nil {
						if resp != nil || !errors.Is(err, tt.wantErr) {
							t.Errorf("RoundTrip = %v, %v; want %v", resp, err, tt.wantErr)
						}
					} else if err != nil {
						t.Errorf("RoundTrip: %v", err)
					} else {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
					c.check(t, tt.bodies)
				})
			})
		}
	}
}

// TestTransportStalledBody: a retryable status whose body never comes
// does not hold the RoundTrip up, whatever AttemptTimeout is: each drain
// runs beside the wait and ends after drainTimeout, the waits are the
// policy's alone (each drain added drainTimeout to them), and the last 503
// is returned as a plain client would return it.
func TestTransportStalledBody(t *testing.T) {
	for _, timeout := range []time.Duration{0, time.Hour} {
		t.Run("AttemptTimeout="+timeout.String(), func(t *testing.T) {
			var n atomic.Int32
			inBubble(t, playFaults(&n, stall(503)), func(t *testing.T, base *http.Transport) {
				// A deadline far away, so that the old hang ends and fails.
				ctx, cancel := context.WithTimeout(context.Background(), 24*time.Hour)
				defer cancel()
				c := &counter{base: base}
				var doneErr error
				tr := &Transport{Base: c, AttemptTimeout: timeout, Retrier: &backoff.Retrier{Policy: minute,
					OnDone: func(_ context.Context, _ int, err error) { doneErr = err }}}
				req, _ := http.NewRequestWithContext(ctx, "GET", "http://pipe/", nil)
				start := time.Now()
				resp, err := tr.RoundTrip(req)
				elapsed := time.Since(start)
				if err != nil || resp == nil || resp.StatusCode != 503 || !errors.Is(doneErr, backoff.ErrExhausted) {
					t.Fatalf("RoundTrip = %v, %v (OnDone: %v) after %v; want the last 503", resp, err, doneErr, elapsed)
				}
				resp.Body.Close()
				if want := 2 * time.Minute; elapsed != want || n.Load() != 3 {
					t.Errorf("%d attempts in %v; want 3 in %v", n.Load(), elapsed, want)
				}
				c.check(t, 3)
			})
		})
	}
}

// TestTransportStalledBodyReal is TestTransportStalledBody on real sockets,
// over HTTP/1.1 and HTTP/2: the RoundTrip does not wait for the drain, and
// closing a body from the drain's timer ends the read that waits on it.
func TestTransportStalledBodyReal(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		name := "HTTP/1.1"
		if h2 {
			name = "HTTP/2"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var n atomic.Int32
			srv := startServer(t, h2, playFaults(&n, stall(503)))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c := &counter{base: srv.Client().Transport}
			two := backoff.Must(backoff.NewExponential(backoff.Config{Base: time.Millisecond, Cap: time.Millisecond, MaxAttempts: 2}))
			req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
			start := time.Now()
			resp, err := (&Transport{Base: c, Retrier: retrier(two)}).RoundTrip(req)
			if err != nil || resp.StatusCode != 503 || resp.ProtoMajor != map[bool]int{false: 1, true: 2}[h2] {
				t.Fatalf("RoundTrip = %v, %v after %v; want the last 503", resp, err, time.Since(start))
			}
			resp.Body.Close()
			if elapsed := time.Since(start); elapsed >= drainTimeout {
				t.Errorf("RoundTrip took %v; want less than the drain's %v", elapsed, drainTimeout)
			}
			c.check(t, 2)
		})
	}
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

// TestTransportUnmendableErrors: errors that no retry can mend end the
// RoundTrip at the first attempt: net/http's refusals of a request it
// cannot send, and TLS spoken to a server that does not speak it.
func TestTransportUnmendableErrors(t *testing.T) {
	srv := newServer(t, ok("hi"))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	host := strings.TrimPrefix(srv.URL, "http://")
	tests := []struct {
		name   string
		method string
		url    string
		header http.Header
		want   string
	}{
		{"unsupported scheme", "GET", "ftp://" + host + "/", nil, `unsupported protocol scheme "ftp"`},
		{"invalid header field value", "GET", srv.URL, http.Header{"X-Bad": {"a\nb"}}, `net/http: invalid header field value for "X-Bad"`},
		{"invalid header field name", "GET", srv.URL, http.Header{"Bad Name": {"x"}}, `net/http: invalid header field name "Bad Name"`},
		{"invalid method", "BAD METHOD", srv.URL, http.Header{"Idempotency-Key": {"k"}}, `net/http: invalid method "BAD METHOD"`},
		{"https to a plain HTTP server", "GET", "https://" + host + "/", nil, "first record does not look like a TLS handshake"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest("GET", tt.url, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Method = tt.method
			for k, v := range tt.header {
				req.Header[k] = v
			}
			r := roundTrip(t, &Transport{Base: &http.Transport{}, Retrier: retrier(fast)}, req)
			if r.resp != nil || !errors.Is(r.err, backoff.ErrPermanent) || r.attempts != 1 || !strings.Contains(r.err.Error(), tt.want) {
				t.Errorf("RoundTrip = %v, %v after %d attempts; want %q at the first, not retried", r.resp, r.err, r.attempts, tt.want)
			}
			if e, ok := r.err.(*backoff.Error); !ok || DefaultShouldRetry(nil, e.Err) {
				t.Errorf("DefaultShouldRetry(nil, %v) = true", r.err)
			}
		})
	}
	if srv.attempts.Load() != 0 {
		t.Errorf("the server's handler saw %d requests; want none", srv.attempts.Load())
	}
	var rh tls.RecordHeaderError
	for _, err := range []error{rh, &url.Error{Op: "Get", URL: "x", Err: errors.New(`unsupported protocol scheme "gopher"`)}} {
		if DefaultShouldRetry(nil, err) {
			t.Errorf("DefaultShouldRetry(nil, %v) = true", err)
		}
	}
	// The same words in an error of another kind are not net/http's
	// refusal; the refusals are plain errors.
	other := &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset")}
	for _, err := range []error{other, errors.New("net/http: HTTP/1.x transport connection broken"), io.ErrUnexpectedEOF} {
		if !DefaultShouldRetry(nil, err) {
			t.Errorf("DefaultShouldRetry(nil, %v) = false", err)
		}
	}
}

// TestTransportNotRepeatable: a request that may not be sent again stops
// with ErrNotRepeatable, not with "error is not retryable".
func TestTransportNotRepeatable(t *testing.T) {
	tests := []struct {
		name      string
		method    string
		header    http.Header
		noGetBody bool
	}{
		{name: "POST", method: "POST"},
		{name: "PUT whose body cannot be rewound", method: "PUT", noGetBody: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, resetMidResponse, ok("hi"))
			var body io.Reader = strings.NewReader("data")
			if tt.noGetBody {
				body = io.NopCloser(body)
			}
			req, _ := http.NewRequest(tt.method, srv.URL, body)
			r := roundTrip(t, &Transport{Base: srv.Client().Transport, Retrier: retrier(fast)}, req)
			for _, err := range []error{r.err, r.doneErr} {
				if !errors.Is(err, ErrNotRepeatable) || errors.Is(err, backoff.ErrPermanent) ||
					!strings.Contains(err.Error(), "(backoffhttp: request may not be sent again)") {
					t.Errorf("%v; want ErrNotRepeatable, not ErrPermanent", err)
				}
			}
			if r.resp != nil || r.attempts != 1 || srv.attempts.Load() != 1 {
				t.Errorf("RoundTrip = %v after %d attempts; want an error after 1", r.resp, r.attempts)
			}
		})
	}
}

// TestTransportRefusedNotRepeatable: a request that net/http refuses
// before sending anything (an invalid method, which is not idempotent)
// was not sent and cannot be mended: it stops with ErrPermanent, not with
// ErrNotRepeatable, whose doc says it may have been sent. A ShouldRetry
// that retries refusals has a rewindable one retried, and one whose body
// cannot be rewound stops with ErrNotRepeatable.
func TestTransportRefusedNotRepeatable(t *testing.T) {
	srv := newServer(t, ok("hi"))
	tests := []struct {
		name        string
		body        func() io.Reader // nil: no body
		noGetBody   bool
		shouldRetry bool // ShouldRetry says yes to everything
		want        error
		attempts    int
	}{
		{name: "no body", want: backoff.ErrPermanent, attempts: 1},
		{name: "rewindable body", body: func() io.Reader { return strings.NewReader("data") }, want: backoff.ErrPermanent, attempts: 1},
		{name: "body without GetBody", body: func() io.Reader { return strings.NewReader("data") }, noGetBody: true, want: backoff.ErrPermanent, attempts: 1},
		{name: "rewindable body, ShouldRetry yes", body: func() io.Reader { return strings.NewReader("data") }, shouldRetry: true, want: backoff.ErrExhausted, attempts: 4},
		{name: "body without GetBody, ShouldRetry yes", body: func() io.Reader { return strings.NewReader("data") }, noGetBody: true, shouldRetry: true, want: ErrNotRepeatable, attempts: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body io.Reader
			if tt.body != nil {
				body = tt.body()
			}
			req, _ := http.NewRequest("GET", srv.URL, body)
			req.Method = "GE T"
			if tt.noGetBody {
				req.GetBody = nil
			}
			tr := &Transport{Base: srv.Client().Transport, Retrier: retrier(fast)}
			if tt.shouldRetry {
				tr.ShouldRetry = func(*http.Response, error) bool { return true }
			}
			r := roundTrip(t, tr, req)
			for _, err := range []error{r.err, r.doneErr} {
				if !errors.Is(err, tt.want) || tt.want != ErrNotRepeatable && errors.Is(err, ErrNotRepeatable) ||
					!strings.Contains(err.Error(), `net/http: invalid method "GE T"`) {
					t.Errorf("%v; want %v", err, tt.want)
				}
			}
			if r.resp != nil || r.attempts != tt.attempts {
				t.Errorf("RoundTrip = %v after %d attempts; want an error after %d", r.resp, r.attempts, tt.attempts)
			}
		})
	}
	if srv.attempts.Load() != 0 {
		t.Errorf("the server saw %d requests; want none", srv.attempts.Load())
	}
}

// TestTransportLongRetryAfter: a Retry-After longer than MaxRetryAfter
// gives up by default and returns the response (RFC 9110, section 10.2.3:
// the client ought to wait that long); ClampRetryAfter waits MaxRetryAfter
// instead.
func TestTransportLongRetryAfter(t *testing.T) {
	tests := []struct {
		name     string
		tr       *Transport
		want     error
		attempts int32
		elapsed  time.Duration
	}{
		{"default: give up", &Transport{}, backoff.ErrHintTooLong, 1, 0},
		{"over MaxRetryAfter: give up", &Transport{Retrier: retrier(minute), MaxRetryAfter: 10 * time.Minute}, backoff.ErrHintTooLong, 1, 0},
		{"within MaxRetryAfter: wait", &Transport{Retrier: retrier(minute), MaxRetryAfter: 2 * time.Hour}, backoff.ErrExhausted, 3, 2 * time.Hour},
		{"ClampRetryAfter: wait the cap", &Transport{Retrier: retrier(minute), ClampRetryAfter: true}, backoff.ErrExhausted, 3, 2 * DefaultMaxRetryAfter},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n atomic.Int32
			inBubble(t, playFaults(&n, status(503, "Retry-After", "3600")), func(t *testing.T, base *http.Transport) {
				tr := tt.tr
				tr.Base = base
				req, _ := http.NewRequest("GET", "http://pipe/", nil)
				start := time.Now()
				r := roundTrip(t, tr, req)
				if r.err != nil || r.resp.StatusCode != 503 || r.body != "status Service Unavailable" || !errors.Is(r.doneErr, tt.want) {
					t.Errorf("RoundTrip = %v, %v (OnDone: %v); want the 503 and %v", r.resp, r.err, r.doneErr, tt.want)
				}
				if elapsed := time.Since(start); n.Load() != tt.attempts || elapsed != tt.elapsed {
					t.Errorf("%d attempts in %v; want %d in %v", n.Load(), elapsed, tt.attempts, tt.elapsed)
				}
			})
		})
	}
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

// TestDefaultShouldRetryRefusals: every refusal of net/http's Transport
// that DefaultShouldRetry names stops, as itself or wrapped, and only as a
// plain error.
func TestDefaultShouldRetryRefusals(t *testing.T) {
	for _, msg := range []string{
		`unsupported protocol scheme "ftp"`,
		`net/http: invalid header field name "a b"`,
		`net/http: invalid trailer field value for "T"`,
		`net/http: invalid method "A B"`,
		"http: nil Request.Header",
		"http: no Host in request URL",
	} {
		plain := errors.New(msg)
		for _, err := range []error{plain, &url.Error{Op: "Get", URL: "u", Err: plain}} {
			if DefaultShouldRetry(nil, err) {
				t.Errorf("DefaultShouldRetry(nil, %v) = true", err)
			}
		}
		if !DefaultShouldRetry(nil, backoff.WithRetryAfter(errors.New("EOF"), 0)) {
			t.Errorf("DefaultShouldRetry(nil, EOF) = false")
		}
	}
	if !DefaultShouldRetry(nil, errors.New("read: connection reset by peer")) {
		t.Error("DefaultShouldRetry of a plain reset = false")
	}
}

// TestTransportShouldRetryNotAskedAfterCancel: ShouldRetry is not asked
// about a failure once the request's context has ended.
func TestTransportShouldRetryNotAskedAfterCancel(t *testing.T) {
	srv := newServer(t, resetMidResponse)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base := roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := srv.Client().Transport.RoundTrip(req)
		cancel()
		return resp, err
	})
	var asked atomic.Int32
	tr := &Transport{Base: base, Retrier: retrier(fast), ShouldRetry: func(*http.Response, error) bool { asked.Add(1); return true }}
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	r := roundTrip(t, tr, req)
	if !errors.Is(r.err, context.Canceled) || r.attempts != 1 || asked.Load() != 0 {
		t.Errorf("RoundTrip = %v after %d attempts, ShouldRetry asked %d times; want context.Canceled after 1, not asked", r.err, r.attempts, asked.Load())
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

// startServer starts h on a local server, over HTTP/2 (with TLS) when h2
// is set and HTTP/1.1 otherwise, closed when the test ends.
func startServer(t *testing.T, h2 bool, h http.Handler) *httptest.Server {
	srv := httptest.NewUnstartedServer(h)
	if h2 {
		srv.EnableHTTP2 = true
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv
}
