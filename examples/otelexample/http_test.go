package otelexample_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/backoffhttp"
	"github.com/backoffgo/backoff/examples/otelexample"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// tracedClient returns a client whose requests have their call's span
// above a backoffhttp.Transport of 3 attempts, whose attempts otelhttp
// traces, with their resend count, and propagates in traceparent; tm
// records them, and counts the calls.
func tracedClient(t *testing.T, tm *telemetry) *http.Client {
	t.Helper()
	tr := &backoffhttp.Transport{
		Policy: backoff.Must(backoff.NewExponential(backoff.Config{Base: time.Millisecond, Cap: time.Millisecond, MaxAttempts: 3})),
		Base: otelhttp.NewTransport(otelexample.ResendCountTransport{},
			otelhttp.WithTracerProvider(tm.tp), otelhttp.WithPropagators(propagation.TraceContext{})),
	}
	if err := otelexample.InstrumentTransport(tr, tm.mp.Meter("test")); err != nil {
		t.Fatal(err)
	}
	return &http.Client{Transport: otelexample.CallSpanTransport{Tracer: tm.tp.Tracer("test"), Base: tr}}
}

// parents records the span ID that each request's traceparent names.
type parents struct {
	mu  sync.Mutex
	ids []string
}

func (p *parents) record(r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	// version-traceid-parentid-flags
	if f := strings.Split(r.Header.Get("traceparent"), "-"); len(f) == 4 {
		p.ids = append(p.ids, f[2])
	} else {
		p.ids = append(p.ids, "")
	}
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
		p.record(r)
		if len(p.get()) <= n {
			http.Error(w, "injected", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	return srv, p
}

// attempt is what a test expects of an attempt's span.
type attempt struct {
	resend int64 // 0: none
	status int
	code   codes.Code
}

// checkSpans checks that spans are the call's span, of status callCode and
// HTTP status callStatus (0: none), and its attempts, children in its
// trace, one client span each, as want says; seen are the span IDs that
// the server saw as the requests' parents (nil: not checked).
func checkSpans(t *testing.T, spans tracetest.SpanStubs, callCode codes.Code, callStatus int, want []attempt, seen []string) {
	t.Helper()
	if len(spans) != 1+len(want) {
		t.Fatalf("%d spans, want %d: %v", len(spans), 1+len(want), names(spans))
	}
	call := spans[0]
	if call.Name != "call GET" || call.SpanKind != trace.SpanKindInternal || call.Parent.IsValid() || call.Status.Code != callCode {
		t.Errorf("call span %q kind %v parent %v status %v; want \"call GET\", internal, a root, %v", call.Name, call.SpanKind, call.Parent.SpanID(), call.Status, callCode)
	}
	if got := statusCode(call); got != callStatus {
		t.Errorf("call span's status code %d, want %d", got, callStatus)
	}
	for i, w := range want {
		s := spans[1+i]
		if s.SpanKind != trace.SpanKindClient || s.Parent.SpanID() != call.SpanContext.SpanID() || s.SpanContext.TraceID() != call.SpanContext.TraceID() {
			t.Errorf("attempt %d: kind %v, parent %v in trace %v; want a client span under %v in %v", i+1, s.SpanKind, s.Parent.SpanID(), s.SpanContext.TraceID(), call.SpanContext.SpanID(), call.SpanContext.TraceID())
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

// checkCalls checks that tm counted one call, of outcome, with retries
// retries in the histogram retriesMetric.
func checkCalls(t *testing.T, tm *telemetry, retriesMetric, outcome string, retries int64) {
	t.Helper()
	rm, err := tm.metrics()
	if err != nil {
		t.Fatal(err)
	}
	want := attribute.NewSet(otelexample.OutcomeKey.String(outcome))
	var sawCalls, sawRetries bool
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				if m.Name != otelexample.CallsMetric {
					continue
				}
				sawCalls = true
				if len(d.DataPoints) != 1 || !d.DataPoints[0].Attributes.Equals(&want) || d.DataPoints[0].Value != 1 {
					t.Errorf("%s = %+v; want one call with %v", m.Name, d.DataPoints, want.ToSlice())
				}
			case metricdata.Histogram[int64]:
				if m.Name != retriesMetric {
					continue
				}
				sawRetries = true
				if len(d.DataPoints) != 1 || !d.DataPoints[0].Attributes.Equals(&want) || d.DataPoints[0].Count != 1 || d.DataPoints[0].Sum != retries {
					t.Errorf("%s = %+v; want one call of %d retries with %v", m.Name, d.DataPoints, retries, want.ToSlice())
				}
			}
		}
	}
	if !sawCalls || !sawRetries {
		t.Errorf("metrics %s: %v, %s: %v; want both", otelexample.CallsMetric, sawCalls, retriesMetric, sawRetries)
	}
}

// TestHTTPRetried: a GET whose server fails twice, then answers, is one
// call span over three client spans, the retries' with resend counts 1 and
// 2, each the parent the server saw; one call is counted, succeeded after
// 2 retries.
func TestHTTPRetried(t *testing.T) {
	srv, seen := failing(t, 2)
	tm := newTelemetry()
	resp, err := tracedClient(t, tm).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "ok" || err != nil {
		t.Fatalf("got %s %q (%v), want 200 ok", resp.Status, body, err)
	}
	spans, err := tm.ended(4)
	if err != nil {
		t.Fatal(err)
	}
	checkSpans(t, spans, codes.Unset, 200, []attempt{{0, 503, codes.Error}, {1, 503, codes.Error}, {2, 200, codes.Unset}}, seen.get())
	checkCalls(t, tm, otelexample.HTTPRetriesMetric, "success_after_retry", 2)
}

// TestHTTPGivesUp: a GET whose server always fails ends after three
// attempts with the last 503, the call's span an error; one call is
// counted, exhausted after 2 retries.
func TestHTTPGivesUp(t *testing.T) {
	srv, seen := failing(t, 1<<30)
	tm := newTelemetry()
	resp, err := tracedClient(t, tm).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("got %s, want 503", resp.Status)
	}
	spans, err := tm.ended(4)
	if err != nil {
		t.Fatal(err)
	}
	checkSpans(t, spans, codes.Error, 503, []attempt{{0, 503, codes.Error}, {1, 503, codes.Error}, {2, 503, codes.Error}}, seen.get())
	checkCalls(t, tm, otelexample.HTTPRetriesMetric, "exhausted", 2)
}

// TestHTTPRefused: a GET to a port where nothing listens fails three
// times; the spans are errors, the call's without a status code, and the
// call is counted exhausted.
func TestHTTPRefused(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	tm := newTelemetry()
	_, err = tracedClient(t, tm).Get("http://" + addr)
	if !errors.Is(err, backoff.ErrExhausted) {
		t.Fatalf("Get = %v, want ErrExhausted", err)
	}
	spans, err := tm.ended(4)
	if err != nil {
		t.Fatal(err)
	}
	checkSpans(t, spans, codes.Error, 0, []attempt{{0, 0, codes.Error}, {1, 0, codes.Error}, {2, 0, codes.Error}}, nil)
	checkCalls(t, tm, otelexample.HTTPRetriesMetric, "exhausted", 2)
}

// TestInstrumentTransport: InstrumentTransport keeps the Transport's own
// OnDone, called after the count, and refuses a nil Transport.
func TestInstrumentTransport(t *testing.T) {
	if err := otelexample.InstrumentTransport(nil, newTelemetry().mp.Meter("test")); err == nil || !strings.Contains(err.Error(), "Transport") {
		t.Errorf("InstrumentTransport(nil) = %v, want an error naming the Transport", err)
	}
	srv, _ := failing(t, 0)
	tm := newTelemetry()
	var got []int
	tr := &backoffhttp.Transport{OnDone: func(_ *http.Request, attempts int, _ error) { got = append(got, attempts) }}
	if err := otelexample.InstrumentTransport(tr, tm.mp.Meter("test")); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL, nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if !slices.Equal(got, []int{1}) {
		t.Errorf("the Transport's own OnDone saw %v, want [1]", got)
	}
	checkCalls(t, tm, otelexample.HTTPRetriesMetric, "success", 0)
}

// TestHTTPNotFound: a 404, which the Transport does not retry, is one
// attempt; the call's span is an error, as a client span's would be, and
// the call counts as a success of the Transport's.
func TestHTTPNotFound(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	tm := newTelemetry()
	resp, err := tracedClient(t, tm).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	spans, err := tm.ended(2)
	if err != nil {
		t.Fatal(err)
	}
	checkSpans(t, spans, codes.Error, 404, []attempt{{0, 404, codes.Error}}, nil)
	checkCalls(t, tm, otelexample.HTTPRetriesMetric, "success", 0)
}
