package backoffotel

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/backoffgrpc"
	"github.com/backoffgo/backoff/backoffhttp"
	"github.com/backoffgo/backoff/throttle"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// scope is the instrumentation scope of the tracers and meters.
const scope = "github.com/backoffgo/backoff/backoffotel"

// Config names the OpenTelemetry providers that record the calls; a nil
// field means the global one (otel.GetTracerProvider, otel.GetMeterProvider,
// otel.GetTextMapPropagator).
type Config struct {
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
	Propagators    propagation.TextMapPropagator
}

func (c Config) tracerProvider() trace.TracerProvider {
	if c.TracerProvider == nil {
		return otel.GetTracerProvider()
	}
	return c.TracerProvider
}

func (c Config) meterProvider() metric.MeterProvider {
	if c.MeterProvider == nil {
		return otel.GetMeterProvider()
	}
	return c.MeterProvider
}

func (c Config) propagators() propagation.TextMapPropagator {
	if c.Propagators == nil {
		return otel.GetTextMapPropagator()
	}
	return c.Propagators
}

// ReasonKey is the attribute of a give-up, in the give-ups counters and on
// a call's span: the reason the retry loop stopped, as [Reason] names it.
const ReasonKey = attribute.Key("backoff.reason")

// names are the names of one protocol's instruments; transparent is empty
// where there are no transparent retries to count, hedges and hedgeWins
// where there is no hedging.
type names struct{ retries, transparent, delay, giveUps, unit, hedges, hedgeWins string }

// instruments are the per-call instruments of one protocol.
type instruments struct {
	retries     metric.Int64Histogram
	transparent metric.Int64Histogram // nil when not counted
	delay       metric.Float64Histogram
	giveUps     metric.Int64Counter
	hedges      metric.Int64Histogram // nil when not counted
	hedgeWins   metric.Int64Counter   // nil when not counted
}

// newInstruments makes the instruments named n on cfg's meter.
func newInstruments(cfg Config, n names) (*instruments, error) {
	meter := cfg.meterProvider().Meter(scope)
	var in instruments
	var errs [6]error
	in.retries, errs[0] = meter.Int64Histogram(n.retries, metric.WithUnit("{retry}"),
		metric.WithDescription("Retries made during the call, the first attempt not counted; a call without retries is not recorded."),
		metric.WithExplicitBucketBoundaries(1, 2, 3, 4, 5, 10))
	if n.transparent != "" {
		in.transparent, errs[1] = meter.Int64Histogram(n.transparent, metric.WithUnit("{transparent_retry}"),
			metric.WithDescription("Transparent retries made during the call; a call without any is not recorded."),
			metric.WithExplicitBucketBoundaries(1, 2, 3, 4, 5, 10))
	}
	in.delay, errs[2] = meter.Float64Histogram(n.delay, metric.WithUnit("s"),
		metric.WithDescription("Total time of the waits before the call's retries."),
		metric.WithExplicitBucketBoundaries(0, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60))
	in.giveUps, errs[3] = meter.Int64Counter(n.giveUps, metric.WithUnit(n.unit),
		metric.WithDescription("Calls whose retry loop stopped without success, by "+string(ReasonKey)+"."))
	if n.hedges != "" {
		in.hedges, errs[4] = meter.Int64Histogram(n.hedges, metric.WithUnit("{hedge}"),
			metric.WithDescription("Copies of a hedged call sent after the first; a call without any is not recorded."),
			metric.WithExplicitBucketBoundaries(1, 2, 3, 4))
		in.hedgeWins, errs[5] = meter.Int64Counter(n.hedgeWins, metric.WithUnit(n.unit),
			metric.WithDescription("Hedged calls won by a copy after the first."))
	}
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	return &in, nil
}

// call is what the instrumentation learns of one call: its attributes,
// set when it starts, the attempts the tracing layer saw, the waits before
// each retry and, once the loop has stopped without success, the reason.
type call struct {
	attrs       []attribute.KeyValue
	attempts    atomic.Int64 // attempts started, for their resend counts
	transparent atomic.Int64 // of them, transparent retries (gRPC)
	hedged      atomic.Bool  // the call's copies after the first are hedges
	winner      atomic.Int64 // the winning copy's number, once OnWin told it

	mu     sync.Mutex
	delays []time.Duration // delays[n-1]: the wait announced after attempt n
	reason string
}

type callKey struct{}

// withCall returns ctx carrying a new call of attributes attrs.
func withCall(ctx context.Context, attrs ...attribute.KeyValue) (context.Context, *call) {
	c := &call{attrs: attrs}
	return context.WithValue(ctx, callKey{}, c), c
}

// callFrom returns the call of ctx, nil if none.
func callFrom(ctx context.Context) *call {
	c, _ := ctx.Value(callKey{}).(*call)
	return c
}

// resendCount counts an attempt of c that starts and returns the attempts
// of c before it.
func (c *call) resendCount() int { return int(c.attempts.Add(1)) - 1 }

// gaveUp returns the reason the loop of c stopped without success, "" if
// it did not (yet).
func (c *call) gaveUp() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reason
}

// onRetry is the OnRetry hook's part: it keeps the delay announced after
// attempt.
func (in *instruments) onRetry(ctx context.Context, attempt int, delay time.Duration) {
	c := callFrom(ctx)
	if c == nil || attempt < 1 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.delays) < attempt {
		c.delays = append(c.delays, 0)
	}
	c.delays[attempt-1] = delay
}

// onDone is the OnDone hook's part: it records the call of ctx, if any,
// which made attempts attempts and ended with err. The retry delay is the
// sum of the waits before the retries made: a wait announced after the
// last attempt, which the deadline or the context then prevented, is not
// one.
func (in *instruments) onDone(ctx context.Context, attempts int, err error) {
	c := callFrom(ctx)
	if c == nil {
		return
	}
	var delay time.Duration
	c.mu.Lock()
	for i := 0; i < attempts-1 && i < len(c.delays); i++ {
		delay += c.delays[i]
	}
	if err != nil {
		c.reason = Reason(err)
	}
	c.mu.Unlock()
	set := metric.WithAttributes(c.attrs...)
	if n := attempts - 1; n > 0 {
		in.retries.Record(ctx, int64(n), set)
	}
	if n := c.transparent.Load(); n > 0 && in.transparent != nil {
		in.transparent.Record(ctx, n, set)
	}
	in.delay.Record(ctx, delay.Seconds(), set)
	if n := attempts - 1; n > 0 && c.hedged.Load() && in.hedges != nil {
		in.hedges.Record(ctx, int64(n), set)
		if c.winner.Load() > 1 {
			in.hedgeWins.Add(ctx, 1, set)
		}
	}
	if err != nil {
		in.giveUps.Add(ctx, 1, metric.WithAttributes(append(c.attrs[:len(c.attrs):len(c.attrs)], ReasonKey.String(c.reason))...))
	}
}

// onWin returns the hedging's OnWin hook: it keeps the winner's number
// for onDone, which follows, then calls own, if not nil.
func (in *instruments) onWin(own func(ctx context.Context, copy int)) func(ctx context.Context, copy int) {
	return func(ctx context.Context, copy int) {
		if c := callFrom(ctx); c != nil {
			c.winner.Store(int64(copy))
		}
		if own != nil {
			own(ctx, copy)
		}
	}
}

// retrier returns a copy of r (nil: of the integration's default, a new
// Retrier from def) whose hooks feed in, then call r's own.
func (in *instruments) retrier(rp *backoff.Retrier, def func() *backoff.Retrier) *backoff.Retrier {
	if rp == nil {
		rp = def()
	}
	r := *rp
	onRetry, onDone := r.OnRetry, r.OnDone
	r.OnRetry = func(ctx context.Context, attempt int, err error, delay time.Duration) {
		in.onRetry(ctx, attempt, delay)
		if onRetry != nil {
			onRetry(ctx, attempt, err, delay)
		}
	}
	r.OnDone = func(ctx context.Context, attempts int, err error) {
		in.onDone(ctx, attempts, err)
		if onDone != nil {
			onDone(ctx, attempts, err)
		}
	}
	return &r
}

// Reason names why a retry loop stopped without success with err, as the
// OnDone hook of a backoff.Retrier, a backoffhttp.Transport or a
// backoffgrpc.Client sees it: "exhausted", "deadline", "budget" (the
// Budget refused a retry), "throttled" (a throttle.Throttle refused an
// attempt), "retried_below" (the server, or an inner loop, said not to
// retry: its retry share was over, or it had retried already),
// "permanent", "committed", "not_replayable", "not_repeatable",
// "hint_too_long", "canceled", "deadline_exceeded", or "other" for a
// policy's own reason or an error that is not a *backoff.Error. It returns
// "" for a nil err.
func Reason(err error) string {
	if err == nil {
		return ""
	}
	var e *backoff.Error
	if !errors.As(err, &e) {
		return "other"
	}
	for _, r := range reasons {
		if errors.Is(e.Reason, r.err) {
			return r.name
		}
	}
	return "other"
}

// reasons are the stop reasons Reason names, ErrDeadline before
// context.DeadlineExceeded, which it matches.
var reasons = [...]struct {
	err  error
	name string
}{
	{backoff.ErrExhausted, "exhausted"},
	{backoff.ErrDeadline, "deadline"},
	{backoff.ErrBudget, "budget"},
	{throttle.ErrThrottled, "throttled"},
	{backoff.ErrRetriedBelow, "retried_below"},
	{backoff.ErrPermanent, "permanent"},
	{backoffgrpc.ErrCommitted, "committed"},
	{backoffgrpc.ErrNotReplayable, "not_replayable"},
	{backoffhttp.ErrNotRepeatable, "not_repeatable"},
	{backoff.ErrHintTooLong, "hint_too_long"},
	{context.Canceled, "canceled"},
	{context.DeadlineExceeded, "deadline_exceeded"},
}
