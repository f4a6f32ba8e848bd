package backoffotel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/backoffgrpc"
	"github.com/backoffgo/backoff/backoffhttp"
	"github.com/backoffgo/backoff/backoffotel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// refusingMeter is a meter provider whose meters refuse to make the
// retry-delay histogram.
type refusingMeter struct{ noop.MeterProvider }

var errRefused = errors.New("refused by the meter")

func (refusingMeter) Meter(string, ...metric.MeterOption) metric.Meter { return refusingMeterOf{} }

type refusingMeterOf struct{ noop.Meter }

func (refusingMeterOf) Float64Histogram(string, ...metric.Float64HistogramOption) (metric.Float64Histogram, error) {
	return nil, errRefused
}

// TestMeterRefuses: every constructor returns the meter's error when it
// cannot make an instrument, and leaves a Transport as it was.
func TestMeterRefuses(t *testing.T) {
	cfg := backoffotel.Config{MeterProvider: refusingMeter{}}
	tr := &backoffhttp.Transport{}
	if _, err := backoffotel.NewTransport(tr, cfg); !errors.Is(err, errRefused) || tr.Base != nil || tr.Retrier != nil {
		t.Errorf("NewTransport = %v, Base %v, Retrier %v; want the meter's error, Base and Retrier nil", err, tr.Base, tr.Retrier)
	}
	if _, err := backoffotel.DialOptions(backoffgrpc.ClientConfig{Retrier: &backoff.Retrier{Policy: constant(time.Millisecond, 2)}}, cfg); !errors.Is(err, errRefused) {
		t.Errorf("DialOptions = %v, want the meter's error", err)
	}
	if _, err := backoffotel.NewTxRunner(nil, cfg); !errors.Is(err, errRefused) {
		t.Errorf("NewTxRunner = %v, want the meter's error", err)
	}
}

// TestGRPCHooks: DialOptions keeps the Retrier's own hooks, called after
// the metrics with the call's figures.
func TestGRPCHooks(t *testing.T) {
	tm := newTelemetry()
	addr := healthServer(t, failFirst(1))
	var retries, dones []int
	r := &backoff.Retrier{Policy: constant(time.Millisecond, 3),
		OnRetry: func(_ context.Context, attempt int, _ error, _ time.Duration) { retries = append(retries, attempt) },
		OnDone:  func(_ context.Context, attempts int, _ error) { dones = append(dones, attempts) }}
	opts, err := backoffotel.DialOptions(backoffgrpc.ClientConfig{Retrier: r}, tm.config())
	if err != nil {
		t.Fatal(err)
	}
	if err := check(dialWith(t, addr, opts)); err != nil {
		t.Fatal(err)
	}
	if len(retries) != 1 || retries[0] != 1 || len(dones) != 1 || dones[0] != 2 {
		t.Errorf("the Retrier's own OnRetry saw %v, OnDone %v; want [1], [2]", retries, dones)
	}
	checkGRPCMetrics(t, tm, checkMethod, addr, want{retries: 1, delay: time.Millisecond})
}
