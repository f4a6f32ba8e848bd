package backoffhttp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backoffgo/backoff/internal/race"

	"github.com/backoffgo/backoff"
)

// fault is what the test server does for one attempt.
type fault func(w http.ResponseWriter, r *http.Request)

func status(code int, header ...string) fault {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(code)
		io.WriteString(w, "status "+http.StatusText(code))
	}
}

func ok(body string) fault {
	return func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body) }
}

// hijack takes the connection over, writes raw and closes it.
func hijack(raw string) fault {
	return func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			panic(err)
		}
		io.WriteString(conn, raw)
		conn.Close()
	}
}

var (
	// resetMidResponse cuts the connection in the middle of the headers.
	resetMidResponse = hijack("HTTP/1.1 200 OK\r\nContent-Le")
	// closeBeforeAnswer closes the connection without a byte of answer.
	closeBeforeAnswer = hijack("")
)

// slow answers 200 after d, or gives up when the client does.
func slow(d time.Duration) fault {
	return func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(d):
			io.WriteString(w, "slow")
		case <-r.Context().Done():
		}
	}
}

// big answers code with a body of n bytes.
func big(code, n int) fault {
	return func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(code)
		w.Write(bytes.Repeat([]byte{'x'}, n))
	}
}

// sized answers code with a body of n bytes and its Content-Length.
func sized(code, n int) fault {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(n))
		big(code, n)(w, r)
	}
}

// server is an httptest server that plays faults[i] for its attempt i (the
// last one for every later attempt) and records what it saw.
type server struct {
	*httptest.Server
	attempts atomic.Int32
	mu       sync.Mutex
	bodies   []string
}

func newServer(t *testing.T, faults ...fault) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(s.attempts.Add(1))
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.bodies = append(s.bodies, string(body))
		s.mu.Unlock()
		faults[min(n, len(faults))-1](w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// fast is a policy for tests: up to 4 attempts, waits of at most 1ms.
var fast = backoff.Must(backoff.NewFullJitter(backoff.Config{Base: time.Millisecond, Cap: time.Millisecond, MaxAttempts: 4}, backoff.RuntimeRng{}))

// retrier returns a new Retrier of p, with no hooks.
func retrier(p backoff.Policy) *backoff.Retrier { return &backoff.Retrier{Policy: p} }

// result is what one RoundTrip gave, with the hooks' view of it.
type result struct {
	resp     *http.Response
	body     string
	err      error
	attempts int   // as OnDone saw them
	doneErr  error // as OnDone saw it
	retries  []error
}

type resultKey struct{}

// roundTrip sends req through tr and reads the response; the hooks it
// gives tr's Retrier, unless it has some, fill in the result.
func roundTrip(t *testing.T, tr *Transport, req *http.Request) result {
	t.Helper()
	var r result
	if tr.Retrier == nil {
		tr.Retrier = DefaultRetrier()
	}
	if tr.Retrier.OnDone == nil { // the hooks find the result in the request's context
		tr.Retrier.OnDone = func(ctx context.Context, attempts int, err error) {
			r := ctx.Value(resultKey{}).(*result)
			r.attempts, r.doneErr = attempts, err
		}
		tr.Retrier.OnRetry = func(ctx context.Context, attempt int, err error, delay time.Duration) {
			r := ctx.Value(resultKey{}).(*result)
			r.retries = append(r.retries, err)
		}
	}
	r.resp, r.err = tr.RoundTrip(req.WithContext(context.WithValue(req.Context(), resultKey{}, &r)))
	if r.resp != nil {
		b, err := io.ReadAll(r.resp.Body)
		if err != nil {
			t.Errorf("reading the returned body: %v", err)
		}
		r.resp.Body.Close()
		r.body = string(b)
	}
	return r
}

func TestTransportFaults(t *testing.T) {
	farDate := time.Now().Add(24 * time.Hour).UTC().Format(http.TimeFormat)
	serverNow := time.Now().Add(-time.Hour).UTC() // the server's clock is an hour behind
	tests := []struct {
		name       string
		faults     []fault
		method     string
		header     http.Header
		body       string
		noGetBody  bool
		wantStatus int    // 0: want an error
		wantBody   string // the returned body
		wantErr    error  // matched with errors.Is
		wantSeen   int    // attempts the server saw
	}{
		{name: "success at once", faults: []fault{ok("hi")}, wantStatus: 200, wantBody: "hi", wantSeen: 1},
		{name: "503 storm without Retry-After: last response returned unread", faults: []fault{status(503)},
			wantStatus: 503, wantBody: "status Service Unavailable", wantErr: backoff.ErrExhausted, wantSeen: 4},
		{name: "503 with Retry-After seconds, then 200", faults: []fault{status(503, "Retry-After", "1"), ok("hi")},
			wantStatus: 200, wantBody: "hi", wantSeen: 2},
		{name: "503 storm with Retry-After dates far ahead", faults: []fault{status(503, "Retry-After", farDate)},
			wantStatus: 503, wantBody: "status Service Unavailable", wantErr: backoff.ErrExhausted, wantSeen: 4},
		{name: "503 with a date measured from the server's Date, then 200", faults: []fault{
			status(503, "Date", serverNow.Format(http.TimeFormat), "Retry-After", serverNow.Add(time.Second).Format(http.TimeFormat)),
			ok("hi")}, wantStatus: 200, wantBody: "hi", wantSeen: 2},
		{name: "429 then 200", faults: []fault{status(429, "Retry-After", "0"), ok("hi")}, wantStatus: 200, wantBody: "hi", wantSeen: 2},
		{name: "408, 425, 500, then 200", faults: []fault{status(408), status(425), status(500), ok("hi")},
			wantStatus: 200, wantBody: "hi", wantSeen: 4},
		{name: "404 not retried", faults: []fault{status(404), ok("hi")}, wantStatus: 404, wantBody: "status Not Found", wantSeen: 1},
		{name: "501 not retried", faults: []fault{status(501), ok("hi")}, wantStatus: 501, wantBody: "status Not Implemented", wantSeen: 1},
		{name: "connection reset mid-response, then 200", faults: []fault{resetMidResponse, resetMidResponse, ok("hi")},
			wantStatus: 200, wantBody: "hi", wantSeen: 3},
		{name: "connection reset every time", faults: []fault{resetMidResponse},
			wantErr: backoff.ErrExhausted, wantSeen: 4},
		{name: "server closes before answering, then 200", faults: []fault{closeBeforeAnswer, ok("hi")},
			wantStatus: 200, wantBody: "hi", wantSeen: 2},
		{name: "POST without Idempotency-Key: 503 sent once", method: "POST", body: "data",
			faults: []fault{status(503), ok("hi")}, wantStatus: 503, wantBody: "status Service Unavailable", wantSeen: 1},
		{name: "POST without Idempotency-Key: reset sent once", method: "POST", body: "data",
			faults: []fault{resetMidResponse, ok("hi")}, wantErr: ErrNotRepeatable, wantSeen: 1},
		{name: "POST with Idempotency-Key retried", method: "POST", body: "data", header: http.Header{"Idempotency-Key": {"k1"}},
			faults: []fault{status(503), resetMidResponse, ok("hi")}, wantStatus: 200, wantBody: "hi", wantSeen: 3},
		{name: "PUT with its body rewound for each attempt", method: "PUT", body: "payload",
			faults: []fault{status(503), status(500), ok("hi")}, wantStatus: 200, wantBody: "hi", wantSeen: 3},
		{name: "PUT with a body and no GetBody sent once", method: "PUT", body: "payload", noGetBody: true,
			faults: []fault{status(503), ok("hi")}, wantStatus: 503, wantBody: "status Service Unavailable", wantSeen: 1},
		{name: "PUT with http.NoBody retried", method: "PUT", body: "",
			faults: []fault{status(503), ok("hi")}, wantStatus: 200, wantBody: "hi", wantSeen: 2},
		{name: "large body on a failed attempt", faults: []fault{big(503, 4*maxDrain), big(502, maxDrain/2), ok("hi")},
			wantStatus: 200, wantBody: "hi", wantSeen: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, tt.faults...)
			tr := &Transport{Base: srv.Client().Transport, Retrier: retrier(fast), MaxRetryAfter: 2 * time.Millisecond, ClampRetryAfter: true}
			var body io.Reader
			if tt.method != "" {
				body = strings.NewReader(tt.body)
				if tt.noGetBody {
					body = io.NopCloser(body)
				}
			}
			req, err := http.NewRequest(tt.method, srv.URL, body)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tt.header {
				req.Header[k] = v
			}
			r := roundTrip(t, tr, req)
			if tt.wantStatus == 0 {
				if r.err == nil || r.resp != nil {
					t.Fatalf("RoundTrip = %v, %v; want an error", r.resp, r.err)
				}
				if !errors.Is(r.err, tt.wantErr) || !errors.Is(r.doneErr, tt.wantErr) {
					t.Errorf("error %v (OnDone's %v); want one matching %v", r.err, r.doneErr, tt.wantErr)
				}
			} else {
				if r.err != nil || r.resp.StatusCode != tt.wantStatus || r.body != tt.wantBody {
					t.Fatalf("RoundTrip = %v, %q, %v; want %d, %q", r.resp, r.body, r.err, tt.wantStatus, tt.wantBody)
				}
				if tt.wantErr == nil && r.doneErr != nil {
					t.Errorf("OnDone got %v; want nil", r.doneErr)
				}
				if tt.wantErr != nil && !errors.Is(r.doneErr, tt.wantErr) {
					t.Errorf("OnDone got %v; want one matching %v", r.doneErr, tt.wantErr)
				}
			}
			if got := int(srv.attempts.Load()); got != tt.wantSeen || r.attempts != tt.wantSeen {
				t.Errorf("the server saw %d attempts, OnDone %d; want %d", got, r.attempts, tt.wantSeen)
			}
			if len(r.retries) != tt.wantSeen-1 {
				t.Errorf("OnRetry called %d times; want %d", len(r.retries), tt.wantSeen-1)
			}
			srv.mu.Lock()
			defer srv.mu.Unlock()
			for i, b := range srv.bodies {
				if tt.method != "" && b != tt.body {
					t.Errorf("attempt %d sent body %q; want %q", i+1, b, tt.body)
				}
			}
		})
	}
}

// TestTransportHooksSeeTheFailure checks what the Retrier's hooks receive:
// the request's context (for per-host counts, say), and in OnRetry an
// *StatusError for a status with its Retry-After, the transport's own error
// otherwise.
func TestTransportHooksSeeTheFailure(t *testing.T) {
	srv := newServer(t, status(503, "Retry-After", "3"), resetMidResponse, ok("hi"))
	type hostKey struct{}
	host := strings.TrimPrefix(srv.URL, "http://")
	var hosts []any
	var errs []error
	var delays []time.Duration
	tr := &Transport{Base: srv.Client().Transport, MaxRetryAfter: 2 * time.Millisecond, ClampRetryAfter: true,
		Retrier: &backoff.Retrier{Policy: fast,
			OnRetry: func(ctx context.Context, attempt int, err error, delay time.Duration) {
				hosts = append(hosts, ctx.Value(hostKey{}))
				errs = append(errs, err)
				delays = append(delays, delay)
			},
			OnDone: func(ctx context.Context, _ int, _ error) { hosts = append(hosts, ctx.Value(hostKey{})) },
		}}
	req, _ := http.NewRequestWithContext(context.WithValue(context.Background(), hostKey{}, host), "GET", srv.URL, nil)
	resp, err := NewClient(tr).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(errs) != 2 {
		t.Fatalf("OnRetry saw %v", errs)
	}
	var he *StatusError
	if !errors.As(errs[0], &he) || he.StatusCode != 503 || he.RetryAfter() != 3*time.Second || delays[0] != 2*time.Millisecond {
		t.Errorf("first retry: %#v after %v; want a 503 hinting 3s, clamped to 2ms", errs[0], delays[0])
	}
	if errors.As(errs[1], &he) || !strings.Contains(errs[1].Error(), "malformed MIME header") {
		t.Errorf("second retry: %v; want the transport's error on the cut headers", errs[1])
	}
	if !slices.Equal(hosts, []any{host, host, host}) {
		t.Errorf("the hooks' contexts said %v; want %s thrice (the request's context)", hosts, host)
	}
}

// TestTransportConnectionReuse checks with httptrace that a discarded
// response's connection serves the next attempt, and that a body longer
// than maxDrain (64 KiB and one byte) is not read to its end: its
// connection is closed instead. The drain runs beside the wait, so the
// waits are long enough for a body on loopback to be drained first.
func TestTransportConnectionReuse(t *testing.T) {
	tests := []struct {
		name       string
		faults     []fault
		wantReused []bool
	}{
		{"small bodies drained", []fault{status(503), status(500), big(502, 64<<10), ok("hi")}, []bool{false, true, true, true}},
		{"a body of 64 KiB and one byte with its length drained", []fault{sized(503, maxDrain), ok("hi")}, []bool{false, true}},
		{"a body of 64 KiB and two bytes with its length closed", []fault{sized(503, maxDrain+1), ok("hi")}, []bool{false, false}},
		{"a body over maxDrain closed", []fault{big(503, 4*maxDrain), ok("hi")}, []bool{false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, tt.faults...)
			var reused []bool
			trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) { reused = append(reused, info.Reused) }}
			req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", srv.URL, nil)
			settle := backoff.Must(backoff.NewExponential(backoff.Config{Base: 50 * time.Millisecond, Cap: 50 * time.Millisecond, MaxAttempts: 4}))
			tr := &Transport{Base: srv.Client().Transport, Retrier: retrier(settle)}
			r := roundTrip(t, tr, req)
			if r.err != nil || r.body != "hi" {
				t.Fatalf("RoundTrip: %q, %v", r.body, r.err)
			}
			if !slices.Equal(reused, tt.wantReused) {
				t.Errorf("connections reused: %v; want %v", reused, tt.wantReused)
			}
		})
	}
}

// TestTransportNotSent checks that a request that may not be repeated is
// still retried when the connection could not be opened.
func TestTransportNotSent(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there any more
	for _, method := range []string{"GET", "POST"} {
		req, _ := http.NewRequest(method, url, strings.NewReader("data"))
		r := roundTrip(t, &Transport{Retrier: retrier(fast)}, req)
		var op *net.OpError
		if r.resp != nil || !errors.Is(r.err, backoff.ErrExhausted) || !errors.As(r.err, &op) || op.Op != "dial" {
			t.Errorf("%s: RoundTrip = %v, %v; want a dial error and ErrExhausted", method, r.resp, r.err)
		}
		if r.attempts != 4 || len(r.retries) != 3 {
			t.Errorf("%s: %d attempts, %d retries; want 4 and 3", method, r.attempts, len(r.retries))
		}
	}
}

// TestTransportCustomClassification replaces both classifications: POST is
// declared repeatable, 404 retried and 503 returned at once.
func TestTransportCustomClassification(t *testing.T) {
	srv := newServer(t, status(404), status(404), status(503), ok("hi"))
	tr := &Transport{Base: srv.Client().Transport, Retrier: retrier(fast),
		Idempotent: func(req *http.Request) bool { return true },
		ShouldRetry: func(resp *http.Response, err error) bool {
			return err != nil || resp.StatusCode == http.StatusNotFound
		}}
	req, _ := http.NewRequest("POST", srv.URL, strings.NewReader("data"))
	r := roundTrip(t, tr, req)
	if r.err != nil || r.resp.StatusCode != 503 || r.attempts != 3 || r.doneErr != nil {
		t.Errorf("RoundTrip = %v, %v after %d attempts (OnDone: %v); want 503 after 3", r.resp, r.err, r.attempts, r.doneErr)
	}
}

// TestTransportCertificateError: a TLS server the client does not trust is
// not retried.
func TestTransportCertificateError(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshake fails on purpose
	srv.StartTLS()
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL, nil)
	r := roundTrip(t, &Transport{Retrier: retrier(fast), Base: &http.Transport{}}, req)
	if r.err == nil || !errors.Is(r.err, backoff.ErrPermanent) || r.attempts != 1 {
		t.Errorf("RoundTrip = %v after %d attempts; want a certificate error, not retried", r.err, r.attempts)
	}
}

func TestTransportGetBodyFails(t *testing.T) {
	srv := newServer(t, status(503))
	req, _ := http.NewRequest("PUT", srv.URL, strings.NewReader("data"))
	boom := errors.New("boom")
	req.GetBody = func() (io.ReadCloser, error) { return nil, boom }
	r := roundTrip(t, &Transport{Base: srv.Client().Transport, Retrier: retrier(fast)}, req)
	if r.resp != nil || !errors.Is(r.err, boom) || !errors.Is(r.err, backoff.ErrPermanent) || !strings.Contains(r.err.Error(), "GetBody") {
		t.Errorf("RoundTrip = %v, %v; want the GetBody failure", r.resp, r.err)
	}
	if srv.attempts.Load() != 1 || r.attempts != 2 {
		t.Errorf("server saw %d attempts, OnDone %d; want 1 and 2", srv.attempts.Load(), r.attempts)
	}
}

// TestTransportCancelWait: cancelling the request's context ends a long
// wait at once, and the response waiting to be retried is closed.
func TestTransportCancelWait(t *testing.T) {
	for _, tt := range []struct {
		fault  fault
		bodies int
	}{{status(503, "Retry-After", "3600"), 1}, {resetMidResponse, 0}} {
		srv := newServer(t, tt.fault)
		hour := backoff.PolicyFunc(func(int, error) (time.Duration, error) { return time.Hour, nil })
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
		base := &counter{base: srv.Client().Transport}
		tr := &Transport{Base: base, MaxRetryAfter: time.Hour, Retrier: &backoff.Retrier{Policy: hour,
			OnRetry: func(context.Context, int, error, time.Duration) { cancel() }}}
		start := time.Now()
		resp, err := tr.RoundTrip(req)
		if elapsed := time.Since(start); elapsed > 5*time.Second {
			t.Errorf("RoundTrip returned %v after the cancellation", elapsed)
		}
		if resp != nil || !errors.Is(err, context.Canceled) {
			t.Errorf("RoundTrip = %v, %v; want context.Canceled", resp, err)
		}
		if srv.attempts.Load() != 1 {
			t.Errorf("server saw %d attempts; want 1", srv.attempts.Load())
		}
		base.check(t, tt.bodies) // the response waiting to be retried, if any, is closed
	}
	// A cancellation during an attempt ends it at once, without a retry.
	srv0 := newServer(t, slow(time.Minute))
	ctx0, cancel0 := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel0)
	req0, _ := http.NewRequestWithContext(ctx0, "GET", srv0.URL, nil)
	start := time.Now()
	r0 := roundTrip(t, &Transport{Base: srv0.Client().Transport, Retrier: retrier(fast)}, req0)
	if elapsed := time.Since(start); elapsed > 5*time.Second || r0.resp != nil || !errors.Is(r0.err, context.Canceled) || r0.attempts != 1 {
		t.Errorf("after %v: %v, %v after %d attempts; want context.Canceled after 1", elapsed, r0.resp, r0.err, r0.attempts)
	}
	// A context done before the first attempt: nothing is sent.
	srv := newServer(t, ok("hi"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	body := &closeRecorder{Reader: strings.NewReader("x")}
	req, _ := http.NewRequestWithContext(ctx, "PUT", srv.URL, body)
	r := roundTrip(t, &Transport{Base: srv.Client().Transport}, req)
	if !errors.Is(r.err, context.Canceled) || r.attempts != 0 || srv.attempts.Load() != 0 || !body.closed {
		t.Errorf("RoundTrip = %v after %d attempts, body closed %v; want context.Canceled, none, closed", r.err, r.attempts, body.closed)
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

type closeRecorder struct {
	io.Reader
	closed bool
}

func (c *closeRecorder) Close() error { c.closed = true; return nil }

// TestTransportDeadline: a retry that would start after the context's
// deadline is not waited for.
func TestTransportDeadline(t *testing.T) {
	for _, tt := range []struct {
		fault      fault
		wantStatus int
	}{{status(503, "Retry-After", "120"), 503}, {resetMidResponse, 0}} {
		srv := newServer(t, tt.fault)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
		slowPolicy := backoff.PolicyFunc(func(int, error) (time.Duration, error) { return 2 * time.Minute, nil })
		start := time.Now()
		r := roundTrip(t, &Transport{Base: srv.Client().Transport, Retrier: retrier(slowPolicy), MaxRetryAfter: time.Hour}, req)
		cancel()
		if time.Since(start) > 5*time.Second || !errors.Is(r.doneErr, backoff.ErrDeadline) || r.attempts != 1 {
			t.Errorf("after %v: %d attempts, OnDone %v; want ErrDeadline at once", time.Since(start), r.attempts, r.doneErr)
		}
		if tt.wantStatus != 0 && (r.err != nil || r.resp.StatusCode != tt.wantStatus) {
			t.Errorf("RoundTrip = %v, %v; want the 503", r.resp, r.err)
		}
		if tt.wantStatus == 0 && (r.resp != nil || !errors.Is(r.err, context.DeadlineExceeded)) {
			t.Errorf("RoundTrip = %v, %v; want ErrDeadline", r.resp, r.err)
		}
	}
}

// TestTransportBudget: a shared budget stops the retries of a storm.
func TestTransportBudget(t *testing.T) {
	srv := newServer(t, status(503))
	budget, err := backoff.NewBudget(backoff.BudgetConfig{Ratio: 0.01, Reserve: 0.01, Burst: 2})
	if err != nil {
		t.Fatal(err)
	}
	tr := &Transport{Base: srv.Client().Transport, Retrier: &backoff.Retrier{Policy: fast, Budget: budget}}
	var attempts []int
	for range 3 {
		req, _ := http.NewRequest("GET", srv.URL, nil)
		r := roundTrip(t, tr, req)
		if r.err != nil || r.resp.StatusCode != 503 {
			t.Fatalf("RoundTrip = %v, %v; want the 503", r.resp, r.err)
		}
		attempts = append(attempts, r.attempts)
		if len(attempts) > 1 && !errors.Is(r.doneErr, backoff.ErrBudget) {
			t.Errorf("OnDone got %v; want ErrBudget", r.doneErr)
		}
	}
	// The full budget pays two retries of the first call, then refuses.
	if !slices.Equal(attempts, []int{3, 1, 1}) {
		t.Errorf("attempts per request: %v; want [3 1 1]", attempts)
	}
}

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

// TestTransportUpgrade: the body of a 101 response stays writable under a
// per-attempt timeout.
func TestTransportUpgrade(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		conn, brw, _ := w.(http.Hijacker).Hijack()
		defer conn.Close()
		io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
		line, _ := brw.ReadString('\n')
		io.WriteString(conn, line)
	})
	req, _ := http.NewRequest("GET", srv.URL, nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "echo")
	resp, err := (&Transport{Base: srv.Client().Transport, AttemptTimeout: time.Minute}).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rw, ok := resp.Body.(io.ReadWriter)
	if resp.StatusCode != 101 || !ok {
		t.Fatalf("got %d with body %T; want 101 and a writable body", resp.StatusCode, resp.Body)
	}
	io.WriteString(rw, "ping\n")
	if b, _ := io.ReadAll(rw); string(b) != "ping\n" {
		t.Errorf("echo %q", b)
	}
}

// TestTransportRequestUnchanged: RoundTrip leaves the caller's request as
// it was, also when it retries with a rewound body and a timeout.
func TestTransportRequestUnchanged(t *testing.T) {
	srv := newServer(t, status(503), ok("hi"))
	req, _ := http.NewRequest("PUT", srv.URL, strings.NewReader("data"))
	req.Header.Set("X-Test", "1")
	before := *req
	beforeHeader := req.Header.Clone()
	resp, err := (&Transport{Base: srv.Client().Transport, Retrier: retrier(fast), AttemptTimeout: time.Minute}).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(b) != "hi" {
		t.Fatalf("RoundTrip: %q, %v", b, err)
	}
	if req.Body != before.Body || req.Context() != before.Context() || req.URL != before.URL ||
		req.Method != before.Method || req.ContentLength != before.ContentLength || len(req.Header) != len(beforeHeader) ||
		req.Header.Get("X-Test") != "1" {
		t.Errorf("the request changed: %+v; was %+v", req, before)
	}
}

func TestTransportInvalid(t *testing.T) {
	var nilTransport *http.Transport
	var nilPolicy *backoff.FullJitter
	tests := []struct {
		tr    *Transport
		param string
	}{
		{&Transport{MaxRetryAfter: -1}, "Transport.MaxRetryAfter"},
		{&Transport{AttemptTimeout: -time.Second}, "Transport.AttemptTimeout"},
		{&Transport{Base: nilTransport}, "Transport.Base"},
		{&Transport{Retrier: &backoff.Retrier{}}, "Transport.Retrier.Policy"},
		{&Transport{Retrier: retrier(nilPolicy)}, "Transport.Retrier.Policy"},
		{&Transport{Retrier: &backoff.Retrier{Policy: fast, MaxElapsed: -1}}, "Transport.Retrier.MaxElapsed"},
	}
	for _, tt := range tests {
		body := &closeRecorder{Reader: strings.NewReader("x")}
		req, _ := http.NewRequest("PUT", "http://backoff.invalid/", body)
		for range 2 { // the error is kept
			resp, err := tt.tr.RoundTrip(req)
			var pe *backoff.ParamError
			if resp != nil || !errors.As(err, &pe) || pe.Param != tt.param || !strings.Contains(err.Error(), tt.param) {
				t.Errorf("RoundTrip = %v, %v; want an error naming %s", resp, err, tt.param)
			}
		}
		if !body.closed {
			t.Errorf("%s: the request body was not closed", tt.param)
		}
	}
	var pe *backoff.ParamError
	if _, err := (&Transport{}).RoundTrip(nil); !errors.As(err, &pe) || pe.Param != "req" {
		t.Errorf("RoundTrip(nil) = %v", err)
	}
	if _, err := (&Transport{}).RoundTrip(&http.Request{}); !errors.As(err, &pe) || pe.Param != "req.URL" {
		t.Errorf("RoundTrip without a URL = %v", err)
	}
	for _, url := range []string{"example.com/path", "/path", "http:///path"} {
		body := &closeRecorder{Reader: strings.NewReader("x")}
		req, err := http.NewRequest("PUT", url, body)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := (&Transport{}).RoundTrip(req); !errors.As(err, &pe) || pe.Param != "req.URL" || !strings.Contains(err.Error(), url) || !body.closed {
			t.Errorf("RoundTrip of %q = %v, body closed %v; want an error naming req.URL", url, err, body.closed)
		}
	}
}

func TestIsIdempotent(t *testing.T) {
	tests := []struct {
		method string
		header string
		want   bool
	}{
		{"", "", true}, {"GET", "", true}, {"HEAD", "", true}, {"OPTIONS", "", true}, {"TRACE", "", true},
		{"PUT", "", true}, {"DELETE", "", true}, {"POST", "", false}, {"PATCH", "", false}, {"CONNECT", "", false},
		{"POST", "Idempotency-Key", true}, {"PATCH", "X-Idempotency-Key", true},
	}
	for _, tt := range tests {
		req := &http.Request{Method: tt.method, Header: http.Header{}}
		if tt.header != "" {
			req.Header[tt.header] = nil // present, even without a value, as net/http reads it
		}
		if got := IsIdempotent(req); got != tt.want {
			t.Errorf("IsIdempotent(%q, %q) = %v; want %v", tt.method, tt.header, got, tt.want)
		}
	}
	if IsIdempotent(nil) {
		t.Error("IsIdempotent(nil) = true")
	}
}

func TestNewClient(t *testing.T) {
	srv := newServer(t, status(503), ok("hi"))
	tr := &Transport{Base: srv.Client().Transport, Retrier: retrier(fast)}
	for _, c := range []*http.Client{NewClient(tr), NewClient(nil)} {
		if _, ok := c.Transport.(*Transport); !ok {
			t.Fatalf("NewClient's transport is %T", c.Transport)
		}
	}
	resp, err := NewClient(tr).Get(srv.URL)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("Get = %v, %v", resp, err)
	}
	resp.Body.Close()
	NewClient(tr).CloseIdleConnections()
	(&Transport{}).CloseIdleConnections()
	var nilBase *http.Transport
	(&Transport{Base: nilBase}).CloseIdleConnections() // no panic on a field RoundTrip rejects
}

// TestTransportConcurrent sends through one Transport from 64 goroutines
// (run it with -race) against a server that fails every other request, and
// then checks that no goroutine is left behind.
func TestTransportConcurrent(t *testing.T) {
	before := runtime.NumGoroutine()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) % 3 {
		case 0:
			w.WriteHeader(http.StatusServiceUnavailable)
		case 1:
			hijack("HTTP/1.1 200 OK\r\n")(w, r)
		default:
			io.WriteString(w, r.URL.Path)
		}
	}))
	base := &http.Transport{MaxIdleConnsPerHost: 64}
	var retries, calls atomic.Int32
	unlimited := backoff.Must(backoff.NewFullJitter(backoff.Config{Base: time.Millisecond, Cap: time.Millisecond, MaxAttempts: backoff.Unlimited}, backoff.RuntimeRng{}))
	tr := &Transport{Base: base, AttemptTimeout: 5 * time.Second, Retrier: &backoff.Retrier{Policy: unlimited,
		OnRetry: func(context.Context, int, error, time.Duration) { retries.Add(1) },
		OnDone:  func(context.Context, int, error) { calls.Add(1) }}}
	client := NewClient(tr)
	var wg sync.WaitGroup
	for g := range 64 {
		wg.Go(func() {
			for i := range 5 {
				path := "/" + string(rune('a'+g%26)) + string(rune('a'+i))
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				req, _ := http.NewRequestWithContext(ctx, "PUT", srv.URL+path, strings.NewReader(path))
				resp, err := client.Do(req)
				if err != nil {
					t.Error(err)
					cancel()
					return
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				cancel()
				if err != nil || string(b) != path {
					t.Errorf("body %q, %v; want %q", b, err, path)
				}
			}
		})
	}
	wg.Wait()
	if calls.Load() != 64*5 || int(retries.Load())+64*5 != int(n.Load()) {
		t.Errorf("%d calls, %d retries, %d requests served", calls.Load(), retries.Load(), n.Load())
	}
	srv.Close()
	base.CloseIdleConnections()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if after := runtime.NumGoroutine(); after > before {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines before, %d after:\n%s", before, after, buf[:runtime.Stack(buf, true)])
	}
}

// TestTransportSuccessAllocs: on a request that succeeds at once, the
// Transport allocates nothing beyond what its base transport does (the
// target was at most one allocation). Both are measured against the
// same local server, which allocates its share in both.
func TestTransportSuccessAllocs(t *testing.T) {
	if race.Enabled {
		t.Skip("allocation counts differ under the race detector")
	}
	srv := newServer(t, ok("hi"))
	base := srv.Client().Transport
	req, _ := http.NewRequest("GET", srv.URL, nil)
	allocs := func(rt http.RoundTripper) float64 {
		return testing.AllocsPerRun(500, func() {
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		})
	}
	bare, ours := allocs(base), allocs(&Transport{Base: base})
	if ours > bare+1 {
		t.Errorf("%v allocations per request through the Transport, %v without; want at most one more", ours, bare)
	}
	// Over a base that allocates nothing, the Transport's own share is
	// seen alone: none (a back-pointer from an attempt's error to its
	// RoundTrip's state once cost one allocation per request).
	fixed := &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Header: http.Header{}}
	if n := allocs(&Transport{Base: roundTripperFunc(func(*http.Request) (*http.Response, error) { return fixed, nil })}); n != 0 {
		t.Errorf("%v allocations per successful RoundTrip over a base that allocates nothing, want 0", n)
	}
}

// TestDefaultPolicy pins the documented defaults: full jitter, Base 200ms,
// Cap 10s, MaxAttempts 5, a Retry-After over DefaultMaxRetryAfter gives up.
func TestDefaultPolicy(t *testing.T) {
	tr := &Transport{}
	if err := tr.init(); err != nil {
		t.Fatal(err)
	}
	fail := errors.New("fail")
	for attempt := 1; attempt <= 4; attempt++ {
		ceiling := min(10*time.Second, 200*time.Millisecond<<(attempt-1))
		var largest time.Duration
		for range 2000 {
			d, err := tr.retrier.Policy.NextDelay(attempt, fail)
			if err != nil || d < 0 || d > ceiling {
				t.Fatalf("attempt %d: %v, %v; want a delay in [0, %v]", attempt, d, err, ceiling)
			}
			largest = max(largest, d)
		}
		if largest < ceiling*9/10 {
			t.Errorf("attempt %d: largest of 2000 delays %v, far below %v: not full jitter", attempt, largest, ceiling)
		}
	}
	if _, err := tr.retrier.Policy.NextDelay(5, fail); !errors.Is(err, backoff.ErrExhausted) {
		t.Errorf("attempt 5: %v; want ErrExhausted", err)
	}
	hinted := backoff.WithRetryAfter(fail, time.Hour)
	if _, err := tr.retrier.Policy.NextDelay(1, hinted); !errors.Is(err, backoff.ErrHintTooLong) {
		t.Errorf("an hour's hint: %v; want ErrHintTooLong", err)
	}
	if d, err := tr.retrier.Policy.NextDelay(1, backoff.WithRetryAfter(fail, DefaultMaxRetryAfter)); err != nil || d != DefaultMaxRetryAfter {
		t.Errorf("a hint of DefaultMaxRetryAfter: %v, %v; want it waited", d, err)
	}
}

// TestErrorHoldsTheFailureItself: the *backoff.Error a caller gets has the
// transport's own error in Err, not a wrapper of the Transport's.
func TestErrorHoldsTheFailureItself(t *testing.T) {
	tr := &Transport{Retrier: retrier(backoff.Must(backoff.NewExponential(backoff.Config{Base: 1, Cap: 1, MaxAttempts: 2})))}
	req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:1/", nil) // nothing listens on port 1
	_, err := tr.RoundTrip(req)
	var e *backoff.Error
	var op *net.OpError
	if !errors.As(err, &e) || e.Attempts != 2 || !errors.Is(err, backoff.ErrExhausted) {
		t.Fatalf("RoundTrip = %v, want a *backoff.Error after 2 attempts", err)
	}
	if op, ok := e.Err.(*net.OpError); !ok || op.Op != "dial" {
		t.Errorf("Error.Err is %T (%v), want the dial's *net.OpError itself", e.Err, e.Err)
	}
	if !errors.As(err, &op) {
		t.Errorf("errors.As cannot reach the *net.OpError in %v", err)
	}
}

// TestTransportHintInBaseError: a base transport's error that carries a
// retry hint (backoff.WithRetryAfter) is honoured like a status's.
func TestTransportHintInBaseError(t *testing.T) {
	calls := 0
	base := roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		if calls++; calls == 1 {
			return nil, backoff.WithRetryAfter(errors.New("busy"), 5*time.Millisecond)
		}
		return &http.Response{StatusCode: 200, Body: http.NoBody, Request: req}, nil
	})
	var delays []time.Duration
	tr := &Transport{
		Base: base,
		Retrier: &backoff.Retrier{
			Policy:  backoff.Must(backoff.NewExponential(backoff.Config{Base: 1, Cap: 1, MaxAttempts: 3})),
			OnRetry: func(_ context.Context, _ int, _ error, d time.Duration) { delays = append(delays, d) },
		},
	}
	req, _ := http.NewRequest(http.MethodGet, "http://example.invalid/", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil || resp.StatusCode != 200 || calls != 2 {
		t.Fatalf("RoundTrip = %v, %v after %d calls", resp, err, calls)
	}
	if len(delays) != 1 || delays[0] != 5*time.Millisecond {
		t.Errorf("waited %v, want the base error's hint of 5ms", delays)
	}
}

// TestDefaultRetrier: DefaultRetrier returns a new Retrier at each call,
// with nothing set but the policy of a Transport whose Retrier is nil
// (which TestDefaultPolicy pins), shared by all.
func TestDefaultRetrier(t *testing.T) {
	a, b := DefaultRetrier(), DefaultRetrier()
	for _, r := range []*backoff.Retrier{a, b} {
		if r.Policy != defaultPolicy || r.Budget != nil || r.MaxElapsed != 0 || r.RetryInner || r.OnRetry != nil || r.OnDone != nil {
			t.Errorf("DefaultRetrier() = %+v; want defaultPolicy and nothing else", r)
		}
	}
	if a == b {
		t.Error("DefaultRetrier returned the same Retrier twice")
	}
}
