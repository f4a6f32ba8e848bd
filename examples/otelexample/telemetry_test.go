package otelexample_test

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/backoffgo/backoff/examples/otelexample"
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

// metrics collects the meter provider's metrics.
func (tm *telemetry) metrics() (metricdata.ResourceMetrics, error) {
	var rm metricdata.ResourceMetrics
	err := tm.reader.Collect(context.Background(), &rm)
	return rm, err
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

// print waits for n ended spans and prints them (printSpans), then the
// calls counted (printCalls).
func (tm *telemetry) print(n int) {
	spans, err := tm.ended(n)
	if err != nil {
		panic(err)
	}
	printSpans(spans)
	rm, err := tm.metrics()
	if err != nil {
		panic(err)
	}
	printCalls(rm)
}

// printSpans prints spans, the first one's children indented, with their
// status and resend count.
func printSpans(spans tracetest.SpanStubs) {
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
}

// printCalls prints the data points of CallsMetric, by outcome.
func printCalls(rm metricdata.ResourceMetrics) {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			sum, ok := m.Data.(metricdata.Sum[int64])
			if !ok || m.Name != otelexample.CallsMetric {
				continue
			}
			for _, dp := range sum.DataPoints {
				outcome, _ := dp.Attributes.Value(otelexample.OutcomeKey)
				fmt.Printf("%s{%s=%s} %d\n", m.Name, otelexample.OutcomeKey, outcome.AsString(), dp.Value)
			}
		}
	}
}
