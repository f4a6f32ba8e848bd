package backoffotel_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/backoffotel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// telemetry is an SDK tracer provider whose ended spans go to an in-memory
// exporter, and a meter provider read by hand.
type telemetry struct {
	tp     *sdktrace.TracerProvider
	mp     *sdkmetric.MeterProvider
	spans  *tracetest.InMemoryExporter
	reader *sdkmetric.ManualReader
	ends   ends
}

func newTelemetry() *telemetry {
	tm := &telemetry{spans: tracetest.NewInMemoryExporter(), reader: sdkmetric.NewManualReader(), ends: make(ends, 64)}
	// The exporter is a syncer, called before ends is told.
	tm.tp = sdktrace.NewTracerProvider(sdktrace.WithSyncer(tm.spans), sdktrace.WithSpanProcessor(tm.ends))
	tm.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(tm.reader))
	return tm
}

// config is the Config of tm's providers, with W3C trace context.
func (tm *telemetry) config() backoffotel.Config {
	return backoffotel.Config{TracerProvider: tm.tp, MeterProvider: tm.mp, Propagators: propagation.TraceContext{}}
}

// ended waits until n spans have ended, for at most 10 s, and returns the
// spans exported, in the order they started. A backoffhttp.Transport
// drains a retried response on a goroutine of its own, and otelhttp ends
// its span when the body is read to its end or closed: so after the call.
func (tm *telemetry) ended(n int) (tracetest.SpanStubs, error) {
	timeout := time.After(10 * time.Second)
	for range n {
		select {
		case <-tm.ends:
		case <-timeout:
			return nil, fmt.Errorf("%d spans ended in 10 s, want %d", len(tm.spans.GetSpans()), n)
		}
	}
	spans := tm.spans.GetSpans()
	sort.SliceStable(spans, func(i, j int) bool { return spans[i].StartTime.Before(spans[j].StartTime) })
	return spans, nil
}

// ends is a span processor that tells of each span that ends.
type ends chan struct{}

func (ends) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (e ends) OnEnd(sdktrace.ReadOnlySpan)                   { e <- struct{}{} }
func (ends) Shutdown(context.Context) error                  { return nil }
func (ends) ForceFlush(context.Context) error                { return nil }

// resendCount returns a span's http.request.resend_count, and whether it
// has one.
func resendCount(s tracetest.SpanStub) (int64, bool) {
	for _, a := range s.Attributes {
		if a.Key == semconv.HTTPRequestResendCountKey {
			return a.Value.AsInt64(), true
		}
	}
	return 0, false
}

// reason returns a span's backoff.reason, "" if none.
func reason(s tracetest.SpanStub) string {
	for _, a := range s.Attributes {
		if a.Key == backoffotel.ReasonKey {
			return a.Value.AsString()
		}
	}
	return ""
}

// point is a data point as the tests compare them: the attributes as
// "key=value" text, and the count and sum of a histogram or the value of a
// counter.
type point struct {
	attrs string
	count uint64
	sum   float64
}

func (p point) String() string { return fmt.Sprintf("{%s} count=%d sum=%g", p.attrs, p.count, p.sum) }

// points returns the data points of the metric named name, by attributes,
// and whether it was recorded at all.
func (tm *telemetry) points(t testing.TB, name string) []point {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := tm.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var ps []point
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			switch d := m.Data.(type) {
			case metricdata.Histogram[int64]:
				for _, dp := range d.DataPoints {
					ps = append(ps, point{attrText(dp.Attributes), dp.Count, float64(dp.Sum)})
				}
			case metricdata.Histogram[float64]:
				for _, dp := range d.DataPoints {
					ps = append(ps, point{attrText(dp.Attributes), dp.Count, dp.Sum})
				}
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					ps = append(ps, point{attrText(dp.Attributes), 1, float64(dp.Value)})
				}
			default:
				t.Fatalf("%s: unexpected data %T", name, d)
			}
		}
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].attrs < ps[j].attrs })
	return ps
}

// attrText is set as "k=v k=v", sorted by key.
func attrText(set attribute.Set) string {
	s := ""
	for i, kv := range set.ToSlice() {
		if i > 0 {
			s += " "
		}
		s += string(kv.Key) + "=" + kv.Value.String()
	}
	return s
}

// want is the metrics a test expects of one call: its retries (0: not
// recorded), transparent retries, total delay, and its give-up reason
// ("" for none).
type want struct {
	retries, transparent int
	delay                time.Duration
	reason               string
}

// checkMetrics checks that tm recorded exactly one call, with attributes
// attrs, in the instruments named retries, transparent (if not ""),
// delay and giveUps, as w says.
func checkMetrics(t *testing.T, tm *telemetry, attrs string, w want, retries, transparent, delay, giveUps string) {
	t.Helper()
	check := func(name string, want []point) {
		t.Helper()
		if got := tm.points(t, name); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	histogram := func(n int) []point {
		if n == 0 {
			return nil
		}
		return []point{{attrs, 1, float64(n)}}
	}
	check(retries, histogram(w.retries))
	if transparent != "" {
		check(transparent, histogram(w.transparent))
	}
	check(delay, []point{{attrs, 1, w.delay.Seconds()}})
	if w.reason == "" {
		check(giveUps, nil)
	} else {
		sep := " "
		if attrs == "" {
			sep = ""
		}
		check(giveUps, []point{{string(backoffotel.ReasonKey) + "=" + w.reason + sep + attrs, 1, 1}})
	}
}

// constant is a policy of n attempts that waits d before each retry.
func constant(d time.Duration, n int) *backoff.Exponential {
	return backoff.Must(backoff.NewExponential(backoff.Config{Base: d, Cap: d, MaxAttempts: n}))
}

// print waits for n ended spans and prints them, the first one's children
// indented, with their status and resend count, then the count and sum of
// the metrics named.
func (tm *telemetry) print(n int, metrics ...string) {
	spans, err := tm.ended(n)
	if err != nil {
		panic(err)
	}
	for _, s := range spans {
		line := s.Name + " " + s.Status.Code.String()
		if n, ok := resendCount(s); ok {
			line += fmt.Sprintf(" resend_count=%d", n)
		}
		if s.Parent.SpanID() == spans[0].SpanContext.SpanID() {
			line = "  " + line
		}
		fmt.Println(line)
	}
	for _, name := range metrics {
		for _, p := range tm.points(panicTB{}, name) {
			fmt.Printf("%s count=%d sum=%g\n", name, p.count, p.sum)
		}
	}
}

// panicTB is a testing.TB for an Example, which panics on failure.
type panicTB struct{ testing.TB }

func (panicTB) Helper()                   {}
func (panicTB) Fatal(args ...any)         { panic(fmt.Sprint(args...)) }
func (panicTB) Fatalf(f string, a ...any) { panic(fmt.Sprintf(f, a...)) }

// wins records what a Hedging's OnWin heard.
type wins struct {
	mu    sync.Mutex
	heard []int
}

func (w *wins) onWin(_ context.Context, copy int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.heard = append(w.heard, copy)
}

// check fails unless OnWin heard want, the winners printed ("[2]", "[]").
func (w *wins) check(t *testing.T, want string) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if got := fmt.Sprint(append([]int{}, w.heard...)); got != want {
		t.Errorf("the Hedging's OnWin heard %s, want %s", got, want)
	}
}
