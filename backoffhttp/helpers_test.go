package backoffhttp

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

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

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

type closeRecorder struct {
	io.Reader
	closed bool
}

func (c *closeRecorder) Close() error { c.closed = true; return nil }

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

// The tests run against real servers: an http.Server reached by a real
// http.Transport over net.Pipe in a testing/synctest bubble where a test
// checks waits, whose time is fake and exact (real network I/O does not
// work in a bubble), and an httptest server where it needs real sockets.

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

func (pipeAddr) String() string { return "pipe" }

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

// checkDone checks that the context of every attempt a sent has ended.
func (a *attempts) checkDone(t *testing.T) {
	t.Helper()
	for i, ctx := range a.ctxs {
		if ctx.Err() == nil {
			t.Errorf("attempt %d of %d: its context is not done", i+1, len(a.ctxs))
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

// nilBodies is a base transport that answers codes[i] to attempt i (the
// last one to every later attempt), each response with a nil Body, as
// RoundTrippers written for tests often do, and counts the attempts.
func nilBodies(n *atomic.Int32, codes ...int) roundTripperFunc {
	return func(req *http.Request) (*http.Response, error) {
		i := int(n.Add(1))
		code := codes[min(i, len(codes))-1]
		return &http.Response{StatusCode: code, Status: http.StatusText(code), Header: http.Header{}, Request: req}, nil
	}
}

// countConns counts in conns the connections srv accepts, with ConnState.
func countConns(srv *httptest.Server, conns *atomic.Int32) {
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
}
