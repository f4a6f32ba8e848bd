package backoffotel_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/backoffhttp"
	"github.com/backoffgo/backoff/backoffotel"
	"github.com/backoffgo/backoff/retryshare"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// tracedClient returns a client whose requests t retries, instrumented by
// NewTransport into tm.
func tracedClient(t *testing.T, tm *telemetry, tr *backoffhttp.Transport) *http.Client {
	t.Helper()
	rt, err := backoffotel.NewTransport(tr, tm.config())
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Transport: rt}
}

// threeAttempts is a Transport of 3 attempts 1 ms apart.
func threeAttempts() *backoffhttp.Transport {
	return &backoffhttp.Transport{Retrier: &backoff.Retrier{Policy: constant(time.Millisecond, 3)}}
}

// parents records the span ID that each request's traceparent names.
type parents struct {
	mu  sync.Mutex
	ids []string
}

func (p *parents) record(r *http.Request) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	// version-traceid-parentid-flags
	if f := strings.Split(r.Header.Get("traceparent"), "-"); len(f) == 4 {
		p.ids = append(p.ids, f[2])
	} else {
		p.ids = append(p.ids, "")
	}
	return len(p.ids)
}

func (p *parents) get() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.ids)
}

// failing returns a server on loopback TCP that answers 503 to its first
// n requests and 200 to the others, and records their traceparents.
func failing(t *testing.T, n int) (*httptest.Server, *parents) {
	p := &parents{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.record(r) <= n {
			http.Error(w, "injected", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	return srv, p
}

// httpAttrs are the metrics' attributes of a GET to srvURL.
func httpAttrs(t *testing.T, srvURL string) string {
	u, err := url.Parse(srvURL)
	if err != nil {
		t.Fatal(err)
	}
	return "http.request.method=GET server.address=" + u.Hostname() + " server.port=" + u.Port()
}

// checkHTTPMetrics checks the HTTP instruments of tm, as checkMetrics.
func checkHTTPMetrics(t *testing.T, tm *telemetry, srvURL string, w want) {
	t.Helper()
	checkMetrics(t, tm, httpAttrs(t, srvURL), w, backoffotel.HTTPRetriesMetric, "", backoffotel.HTTPRetryDelayMetric, backoffotel.HTTPGiveUpsMetric)
}

// attempt is what a test expects of an attempt's span.
type attempt struct {
	resend int64 // 0: none
	status int
	code   codes.Code
}

// callSpan is what a test expects of a call's span.
type callSpan struct {
	code   codes.Code
	status int    // 0: none
	reason string // "": none
}

// checkSpans checks that spans are the call's span, a root, as call says,
// and its attempts, children in its trace, one client span each, as want
// says; seen are the span IDs that the server saw as the requests'
// parents (nil: not checked).
func checkSpans(t *testing.T, spans tracetest.SpanStubs, call callSpan, want []attempt, seen []string) {
	t.Helper()
	if len(spans) != 1+len(want) {
		t.Fatalf("%d spans, want %d: %v", len(spans), 1+len(want), names(spans))
	}
	c := spans[0]
	if c.Name != "call GET" || c.SpanKind != trace.SpanKindInternal || c.Parent.IsValid() || c.Status.Code != call.code {
		t.Errorf("call span %q kind %v parent %v status %v; want \"call GET\", internal, a root, %v", c.Name, c.SpanKind, c.Parent.SpanID(), c.Status, call.code)
	}
	if got := statusCode(c); got != call.status {
		t.Errorf("call span's status code %d, want %d", got, call.status)
	}
	if got := reason(c); got != call.reason {
		t.Errorf("call span's reason %q, want %q", got, call.reason)
	}
	for i, w := range want {
		s := spans[1+i]
		if s.SpanKind != trace.SpanKindClient || s.Parent.SpanID() != c.SpanContext.SpanID() || s.SpanContext.TraceID() != c.SpanContext.TraceID() {
			t.Errorf("attempt %d: kind %v, parent %v in trace %v; want a client span under %v in %v", i+1, s.SpanKind, s.Parent.SpanID(), s.SpanContext.TraceID(), c.SpanContext.SpanID(), c.SpanContext.TraceID())
		}
		n, ok := resendCount(s)
		if ok != (w.resend > 0) || n != w.resend {
			t.Errorf("attempt %d: resend_count %d (set: %v), want %d (set: %v)", i+1, n, ok, w.resend, w.resend > 0)
		}
		if got := statusCode(s); got != w.status || s.Status.Code != w.code {
			t.Errorf("attempt %d: status code %d, span status %v; want %d, %v", i+1, got, s.Status.Code, w.status, w.code)
		}
		if seen != nil && (i >= len(seen) || seen[i] != s.SpanContext.SpanID().String()) {
			t.Errorf("attempt %d: the server saw parents %q, want %v at %d", i+1, seen, s.SpanContext.SpanID(), i)
		}
	}
}

func names(spans tracetest.SpanStubs) []string {
	var n []string
	for _, s := range spans {
		n = append(n, s.Name)
	}
	return n
}

// statusCode returns a span's http.response.status_code, 0 if none.
func statusCode(s tracetest.SpanStub) int {
	for _, a := range s.Attributes {
		if a.Key == semconv.HTTPResponseStatusCodeKey {
			return int(a.Value.AsInt64())
		}
	}
	return 0
}

// get sends a GET to u through client and returns the response's status
// code, its body read and closed, or the error.
func get(t *testing.T, client *http.Client, u string) (int, error) {
	t.Helper()
	resp, err := client.Get(u)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if _, err := io.ReadAll(resp.Body); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, nil
}

// checkHTTPCall sends a GET to u through tr, instrumented by NewTransport,
// and checks that it returns a response of status call.status (0: an error
// of reason call.reason), its spans as checkSpans and its metrics as
// checkHTTPMetrics; seen may be nil.
func checkHTTPCall(t *testing.T, tr *backoffhttp.Transport, u string, call callSpan, attempts []attempt, seen *parents, w want) {
	t.Helper()
	tm := newTelemetry()
	code, err := get(t, tracedClient(t, tm, tr), u)
	if code != call.status || (code == 0) != (err != nil) || (err != nil && backoffotel.Reason(err) != call.reason) {
		t.Fatalf("GET: status %d, error %v; want %d, reason %q", code, err, call.status, call.reason)
	}
	spans, err := tm.ended(1 + len(attempts))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	if seen != nil {
		ids = seen.get()
	}
	checkSpans(t, spans, call, attempts, ids)
	checkHTTPMetrics(t, tm, u, w)
}

// TestHTTPRetried: a GET whose server fails twice, then answers, is one
// call span over three client spans, the retries' with resend counts 1 and
// 2, each the parent the server saw; the call made 2 retries after 2 ms of
// waits, and did not give up.
func TestHTTPRetried(t *testing.T) {
	srv, seen := failing(t, 2)
	checkHTTPCall(t, threeAttempts(), srv.URL, callSpan{codes.Unset, 200, ""},
		[]attempt{{0, 503, codes.Error}, {1, 503, codes.Error}, {2, 200, codes.Unset}}, seen, want{retries: 2, delay: 2 * time.Millisecond})
}

// TestHTTPGivesUp: a GET whose server always fails ends after three
// attempts with the last 503; the call's span is an error of reason
// exhausted, the call one give-up, exhausted, after 2 retries.
func TestHTTPGivesUp(t *testing.T) {
	srv, seen := failing(t, 1<<30)
	checkHTTPCall(t, threeAttempts(), srv.URL, callSpan{codes.Error, 503, "exhausted"},
		[]attempt{{0, 503, codes.Error}, {1, 503, codes.Error}, {2, 503, codes.Error}}, seen, want{retries: 2, delay: 2 * time.Millisecond, reason: "exhausted"})
}

// TestHTTPRefused: a GET to a port where nothing listens fails three
// times; the spans are errors, the call's without a status code, and the
// call gives up, exhausted.
func TestHTTPRefused(t *testing.T) {
	checkHTTPCall(t, threeAttempts(), "http://"+deadAddr(t), callSpan{codes.Error, 0, "exhausted"},
		[]attempt{{0, 0, codes.Error}, {1, 0, codes.Error}, {2, 0, codes.Error}}, nil, want{retries: 2, delay: 2 * time.Millisecond, reason: "exhausted"})
}

// deadAddr returns a loopback address where nothing listens.
func deadAddr(t *testing.T) string {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	return lis.Addr().String()
}

// TestHTTPBudget: a Budget that holds one retry refuses the second; the
// call gives up after 1 retry, of reason budget.
func TestHTTPBudget(t *testing.T) {
	srv, _ := failing(t, 1<<30)
	tr := threeAttempts()
	tr.Retrier.Budget = backoff.Must(backoff.NewBudget(backoff.BudgetConfig{Burst: 1, Ratio: 0.001, Reserve: 0.001}))
	checkHTTPCall(t, tr, srv.URL, callSpan{codes.Error, 503, "budget"},
		[]attempt{{0, 503, codes.Error}, {1, 503, codes.Error}}, nil, want{retries: 1, delay: time.Millisecond, reason: "budget"})
}

// TestHTTPRetryShare: a server behind backoffhttp.Handler, whose retry
// share refuses once one failing answer was let be retried (Burst 1; 2
// failing answers of 2 are significant), tells the client not to retry its
// answer to the first retry: the call gives up after 1 retry, of reason
// retried_below.
func TestHTTPRetryShare(t *testing.T) {
	share, err := retryshare.New(retryshare.Config{Burst: 1})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(backoffhttp.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "injected", http.StatusServiceUnavailable)
	}), backoffhttp.ServerConfig{Share: share}))
	defer srv.Close()
	checkHTTPCall(t, threeAttempts(), srv.URL, callSpan{codes.Error, 503, "retried_below"},
		[]attempt{{0, 503, codes.Error}, {1, 503, codes.Error}}, nil, want{retries: 1, delay: time.Millisecond, reason: "retried_below"})
}

// TestHTTPNotFound: a 404, which the Transport does not retry, is one
// attempt; the call's span is an error, as a client span's would be, and
// the call made no retry (none recorded), waited 0 s and did not give up.
func TestHTTPNotFound(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	checkHTTPCall(t, threeAttempts(), srv.URL, callSpan{codes.Error, 404, ""}, []attempt{{0, 404, codes.Error}}, nil, want{})
}

// TestNewTransportHooks: NewTransport keeps the hooks of the Transport's
// Retrier, called after the metrics, with the loop's figures.
func TestNewTransportHooks(t *testing.T) {
	srv, _ := failing(t, 1)
	tm := newTelemetry()
	var retries, dones []int
	tr := threeAttempts()
	tr.Retrier.OnRetry = func(_ context.Context, attempt int, _ error, _ time.Duration) { retries = append(retries, attempt) }
	tr.Retrier.OnDone = func(_ context.Context, attempts int, _ error) { dones = append(dones, attempts) }
	if code, err := get(t, tracedClient(t, tm, tr), srv.URL); code != http.StatusOK {
		t.Fatalf("status %d (%v), want 200", code, err)
	}
	if !slices.Equal(retries, []int{1}) || !slices.Equal(dones, []int{2}) {
		t.Errorf("the Transport's own OnRetry saw %v, OnDone %v; want [1], [2]", retries, dones)
	}
	checkHTTPMetrics(t, tm, srv.URL, want{retries: 1, delay: time.Millisecond})
}

// TestNewTransportRefuses: NewTransport refuses a nil Transport, and one
// whose Base otelhttp traces already (NewTransport called twice, or the
// attempts' tracing installed by hand), which would trace each attempt
// twice, with a ParamError naming the parameter; the Transport is left as
// it was. Its RoundTripper answers a nil request with the Transport's
// ParamError, not a panic.
func TestNewTransportRefuses(t *testing.T) {
	cfg := newTelemetry().config()
	var pe *backoff.ParamError
	if _, err := backoffotel.NewTransport(nil, cfg); !errors.As(err, &pe) || pe.Param != "t" {
		t.Errorf("NewTransport(nil) = %v, want a ParamError naming t", err)
	}
	tr := &backoffhttp.Transport{}
	if _, err := backoffotel.NewTransport(tr, cfg); err != nil {
		t.Fatal(err)
	}
	base := tr.Base
	if _, err := backoffotel.NewTransport(tr, cfg); !errors.As(err, &pe) || pe.Param != "Transport.Base" {
		t.Errorf("NewTransport twice = %v, want a ParamError naming Transport.Base", err)
	}
	if tr.Base != base {
		t.Errorf("the refused NewTransport changed Base")
	}
	rt, err := backoffotel.NewTransport(&backoffhttp.Transport{}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.RoundTrip(nil); !errors.As(err, &pe) {
		t.Errorf("RoundTrip(nil) = %v, want the Transport's ParamError", err)
	}
	byHand := &backoffhttp.Transport{Base: otelhttp.NewTransport(nil)}
	if _, err := backoffotel.NewTransport(byHand, cfg); !errors.As(err, &pe) || pe.Param != "Transport.Base" {
		t.Errorf("NewTransport over otelhttp = %v, want a ParamError naming Transport.Base", err)
	}
}

// TestHTTPTransportAlone: a request sent through the instrumented
// Transport itself, not through the RoundTripper NewTransport returned,
// still has one client span per attempt with its resend count, and no
// metrics.
func TestHTTPTransportAlone(t *testing.T) {
	srv, _ := failing(t, 2)
	tm := newTelemetry()
	tr := threeAttempts()
	if _, err := backoffotel.NewTransport(tr, tm.config()); err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	spans, err := tm.ended(3)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range spans {
		if n, ok := resendCount(s); n != int64(i) || ok != (i > 0) || s.SpanKind != trace.SpanKindClient {
			t.Errorf("span %d: %q kind %v resend_count %d (set: %v), want a client span, %d", i, s.Name, s.SpanKind, n, ok, i)
		}
	}
	for _, name := range []string{backoffotel.HTTPRetriesMetric, backoffotel.HTTPRetryDelayMetric, backoffotel.HTTPGiveUpsMetric} {
		if p := tm.points(t, name); p != nil {
			t.Errorf("%s = %v, want none", name, p)
		}
	}
}

// TestHTTPRetryPrevented: a retry that OnRetry announced but that the
// deadline then prevented (the caller's OnRetry took the time) is no
// retry: the call made none, waited 0 s, and gave up, of reason deadline.
func TestHTTPRetryPrevented(t *testing.T) {
	srv, _ := failing(t, 1<<30)
	tm := newTelemetry()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	deadline, _ := ctx.Deadline()
	tr := &backoffhttp.Transport{Retrier: &backoff.Retrier{Policy: constant(100*time.Millisecond, 3),
		// Leaves 50 ms before the deadline, less than the delay.
		OnRetry: func(context.Context, int, error, time.Duration) {
			time.Sleep(time.Until(deadline) - 50*time.Millisecond)
		}}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	// backoffhttp returns the 503 given up on, or, as of 8e27d21, the
	// error that says why (its response drained as the retry began).
	resp, err := tracedClient(t, tm, tr).Do(req)
	if err == nil {
		resp.Body.Close()
		err = backoffhttp.CheckResponse(resp)
	}
	if r := backoffotel.Reason(err); r != "deadline" {
		t.Fatalf("gave up with %v, want deadline", err)
	}
	checkHTTPMetrics(t, tm, srv.URL, want{reason: "deadline"})
}

// TestHTTPCloseIdleConnections: http.Client.CloseIdleConnections reaches
// the base transport through every layer: the next request opens a new
// connection, where without it the idle one is reused.
func TestHTTPCloseIdleConnections(t *testing.T) {
	for _, closeIdle := range []bool{false, true} {
		var conns atomic.Int64
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
		srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		}
		srv.Start()
		defer srv.Close()
		client := tracedClient(t, newTelemetry(), &backoffhttp.Transport{Base: &http.Transport{}})
		for range 2 {
			if code, err := get(t, client, srv.URL); code != http.StatusOK {
				t.Fatalf("status %d (%v), want 200", code, err)
			}
			if closeIdle {
				client.CloseIdleConnections()
			}
		}
		if want := map[bool]int64{false: 1, true: 2}[closeIdle]; conns.Load() != want {
			t.Errorf("CloseIdleConnections %v: %d connections, want %d", closeIdle, conns.Load(), want)
		}
	}
}

// TestConfigGlobal: a zero Config uses the global providers.
func TestConfigGlobal(t *testing.T) {
	tm := newTelemetry()
	tp, mp, prop := otel.GetTracerProvider(), otel.GetMeterProvider(), otel.GetTextMapPropagator()
	defer func() { otel.SetTracerProvider(tp); otel.SetMeterProvider(mp); otel.SetTextMapPropagator(prop) }()
	otel.SetTracerProvider(tm.tp)
	otel.SetMeterProvider(tm.mp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	srv, seen := failing(t, 1)
	rt, err := backoffotel.NewTransport(threeAttempts(), backoffotel.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if code, err := get(t, &http.Client{Transport: rt}, srv.URL); code != http.StatusOK {
		t.Fatalf("status %d (%v), want 200", code, err)
	}
	spans, err := tm.ended(3)
	if err != nil {
		t.Fatal(err)
	}
	checkSpans(t, spans, callSpan{codes.Unset, 200, ""}, []attempt{{0, 503, codes.Error}, {1, 200, codes.Unset}}, seen.get())
	checkHTTPMetrics(t, tm, srv.URL, want{retries: 1, delay: time.Millisecond})
}

// TestNewTransportNilRetrier: a Transport without a Retrier gets
// backoffhttp's default one, with the metrics' hooks: a request whose
// first attempt fails is retried and succeeds.
func TestNewTransportNilRetrier(t *testing.T) {
	srv, _ := failing(t, 1)
	tm := newTelemetry()
	tr := &backoffhttp.Transport{}
	if code, err := get(t, tracedClient(t, tm, tr), srv.URL); code != http.StatusOK {
		t.Fatalf("status %d (%v), want 200 after a retry", code, err)
	}
	if tr.Retrier == nil || tr.Retrier.Policy != backoffhttp.DefaultRetrier().Policy || tr.Retrier.OnDone == nil {
		t.Errorf("Retrier %+v, want the default policy with the metrics' hooks", tr.Retrier)
	}
}

// TestHTTPHedgeCounted: a hedge is counted as gRFC A96 counts hedging
// attempts, among the request's retries, with its delay: a first copy
// that does not answer within 20ms is hedged, the hedge wins, and the
// request records 1 retry and a 20ms retry delay, under one call span
// over two attempt spans.
func TestHTTPHedgeCounted(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			<-r.Context().Done() // the first copy: answers only when cancelled
			return
		}
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	tm := newTelemetry()
	tr := &backoffhttp.Transport{
		Retrier: &backoff.Retrier{Policy: constant(time.Millisecond, 3)},
		Hedging: &backoffhttp.Hedging{Delay: 20 * time.Millisecond},
	}
	if code, err := get(t, tracedClient(t, tm, tr), srv.URL); code != http.StatusOK {
		t.Fatalf("status %d (%v), want 200 from the hedge", code, err)
	}
	if _, err := tm.ended(3); err != nil {
		t.Fatal(err)
	}
	checkHTTPMetrics(t, tm, srv.URL, want{retries: 1, delay: 20 * time.Millisecond})
}

// TestHTTPHedgesAndWins: a hedged request records its hedges, and a win by
// a hedge, with the request's attributes; the Hedging's own OnWin still
// hears of the winner. A request that is not hedged (a POST, retried
// after a 503) records neither.
func TestHTTPHedgesAndWins(t *testing.T) {
	hang := func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }
	answer := func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }
	late := func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(60 * time.Millisecond)
		answer(w, r)
	}
	unavailable := func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }
	for _, c := range []struct {
		name         string
		method       string
		copies       []http.HandlerFunc // by backoffhttp.Attempt
		hedges, wins int                // 0: not recorded
		onWin        string
	}{
		{"hedge wins", "GET", []http.HandlerFunc{hang, answer}, 1, 1, "[2]"},
		{"first wins after the hedge", "GET", []http.HandlerFunc{late, hang}, 1, 0, "[1]"},
		{"first in time", "GET", []http.HandlerFunc{answer}, 0, 0, "[]"},
		{"not hedged", "POST", []http.HandlerFunc{unavailable, answer}, 0, 0, "[]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body) // else the server does not see the client go away
				c.copies[min(backoffhttp.Attempt(r), len(c.copies))-1](w, r)
			}))
			defer srv.Close()
			tm := newTelemetry()
			heard := &wins{}
			tr := &backoffhttp.Transport{
				Retrier:    &backoff.Retrier{Policy: constant(time.Millisecond, 3)},
				Idempotent: func(r *http.Request) bool { return r.Method == "GET" },
				ShouldRetry: func(resp *http.Response, err error) bool {
					return err == nil && resp.StatusCode == http.StatusServiceUnavailable
				},
				Hedging: &backoffhttp.Hedging{Delay: 20 * time.Millisecond, OnWin: heard.onWin},
			}
			req, err := http.NewRequest(c.method, srv.URL, strings.NewReader("x"))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := tracedClient(t, tm, tr).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			attrs := strings.Replace(httpAttrs(t, srv.URL), "GET", c.method, 1)
			points := func(n int) string {
				if n == 0 {
					return "[]"
				}
				return fmt.Sprint([]point{{attrs, 1, float64(n)}})
			}
			if got := fmt.Sprint(tm.points(t, backoffotel.HTTPHedgesMetric)); got != points(c.hedges) {
				t.Errorf("%s = %s, want %s", backoffotel.HTTPHedgesMetric, got, points(c.hedges))
			}
			if got := fmt.Sprint(tm.points(t, backoffotel.HTTPHedgeWinsMetric)); got != points(c.wins) {
				t.Errorf("%s = %s, want %s", backoffotel.HTTPHedgeWinsMetric, got, points(c.wins))
			}
			heard.check(t, c.onWin)
		})
	}
}
