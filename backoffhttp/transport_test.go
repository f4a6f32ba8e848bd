package backoffhttp

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/internal/race"
)

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

// TestTransportNilBody: a base transport may return a response with a nil
// Body, which http.Client takes for an empty one; the Transport does too,
// on every path: retried, returned, returned after AttemptTimeout fired,
// discarded when the caller cancels. Each used to panic, in the drain or
// on the first Read or Close, and the drain's timer called Close on nil on
// a goroutine of its own, which no recover reaches. In a bubble, any
// goroutine left behind would fail the test.
func TestTransportNilBody(t *testing.T) {
	tests := []struct {
		name     string
		codes    []int
		timeout  time.Duration
		late     time.Duration // the base returns this long after AttemptTimeout began
		cancel   bool          // the caller cancels in OnRetry
		cancelAs bool          // the caller cancels as the response comes
		attempts int32
		want     int // the status returned, unless the caller cancels
	}{
		{name: "503, then 200", codes: []int{503, 200}, attempts: 2, want: 200},
		{name: "503, then 200, AttemptTimeout", codes: []int{503, 200}, timeout: time.Hour, attempts: 2, want: 200},
		{name: "200, AttemptTimeout", codes: []int{200}, timeout: time.Hour, attempts: 1, want: 200},
		{name: "200 after AttemptTimeout fired", codes: []int{200}, timeout: time.Second, late: 2 * time.Second, attempts: 1, want: 200},
		{name: "503 given up", codes: []int{503}, attempts: 3, want: 503},
		{name: "503 given up, AttemptTimeout", codes: []int{503}, timeout: time.Hour, attempts: 3, want: 503},
		{name: "503 discarded on cancel", codes: []int{503}, cancel: true, attempts: 1},
		{name: "503 discarded on cancel, AttemptTimeout", codes: []int{503}, timeout: time.Hour, cancel: true, attempts: 1},
		{name: "503 discarded on a cancel as it comes", codes: []int{503}, cancelAs: true, attempts: 1},
		{name: "503 discarded on a cancel as it comes, AttemptTimeout", codes: []int{503}, timeout: time.Hour, cancelAs: true, attempts: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var n atomic.Int32
				var base http.RoundTripper = nilBodies(&n, tt.codes...)
				if tt.late > 0 {
					base = lateBy(base, tt.late)
				}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if tt.cancelAs {
					inner := base
					base = roundTripperFunc(func(req *http.Request) (*http.Response, error) {
						defer cancel()
						return inner.RoundTrip(req)
					})
				}
				tr := &Transport{Base: base, Retrier: retrier(minute), AttemptTimeout: tt.timeout}
				if tt.cancel {
					tr.Retrier.OnRetry = func(context.Context, int, error, time.Duration) { cancel() }
				}
				req, _ := http.NewRequestWithContext(ctx, "GET", "http://example.test/", nil)
				resp, err := tr.RoundTrip(req)
				if tt.cancel || tt.cancelAs {
					if resp != nil || !errors.Is(err, context.Canceled) {
						t.Errorf("RoundTrip = %v, %v; want context.Canceled", resp, err)
					}
				} else {
					if err != nil || resp == nil || resp.StatusCode != tt.want {
						t.Fatalf("RoundTrip = %v, %v; want %d", resp, err, tt.want)
					}
					if b, err := io.ReadAll(resp.Body); err != nil || len(b) != 0 {
						t.Errorf("reading the body: %q, %v; want it empty", b, err)
					}
					if err := resp.Body.Close(); err != nil {
						t.Errorf("closing the body: %v", err)
					}
				}
				if n.Load() != tt.attempts {
					t.Errorf("%d attempts; want %d", n.Load(), tt.attempts)
				}
				time.Sleep(2 * drainTimeout) // a drain's timer would fire by then
			})
		})
	}
}

// TestTransportNilResponse: a base transport that returns neither a
// response nor an error (http.Client reports it as an error) fails the
// attempt, which is not retried, instead of a panic; also when it comes
// after AttemptTimeout fired.
func TestTransportNilResponse(t *testing.T) {
	for _, tt := range []struct{ timeout, late time.Duration }{{0, 0}, {time.Hour, 0}, {time.Second, 2 * time.Second}} {
		synctest.Test(t, func(t *testing.T) {
			var n atomic.Int32
			base := lateBy(roundTripperFunc(func(*http.Request) (*http.Response, error) { n.Add(1); return nil, nil }), tt.late)
			req, _ := http.NewRequest("GET", "http://example.test/", nil)
			resp, err := (&Transport{Base: base, Retrier: retrier(minute), AttemptTimeout: tt.timeout}).RoundTrip(req)
			want := "backoff: stopped after 1 attempt (error is not retryable): backoffhttp: Transport.Base returned a nil *http.Response and a nil error"
			if resp != nil || !errors.Is(err, backoff.ErrPermanent) || err.Error() != want || n.Load() != 1 {
				t.Errorf("RoundTrip = %v, %v after %d attempts; want %q", resp, err, n.Load(), want)
			}
		})
	}
}

// TestTransportPolicySeesTheFailure: a Policy, which gets each failure
// as the loop sees it, reads it as the failure itself: its message is the
// status's, and it unwraps to the *StatusError.
func TestTransportPolicySeesTheFailure(t *testing.T) {
	srv := newServer(t, status(503), ok("hi"))
	var seen []string
	policy := backoff.PolicyFunc(func(_ int, err error) (time.Duration, error) {
		var he *StatusError
		if !errors.As(err, &he) || he.StatusCode != 503 {
			t.Errorf("the policy got %v; want the 503's *StatusError", err)
		}
		seen = append(seen, err.Error())
		return time.Millisecond, nil
	})
	req, _ := http.NewRequest("GET", srv.URL, nil)
	r := roundTrip(t, &Transport{Base: srv.Client().Transport, Retrier: retrier(policy)}, req)
	if r.err != nil || r.body != "hi" || len(seen) != 1 || seen[0] != "HTTP 503 Service Unavailable" {
		t.Errorf("RoundTrip = %q, %v; the policy read %q; want hi, and HTTP 503 Service Unavailable", r.body, r.err, seen)
	}
}
