package backoffotel

import (
	"net/http"
	"strconv"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/backoffhttp"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// The instruments of an HTTP request retried by a backoffhttp.Transport.
// OpenTelemetry's HTTP conventions (semconv v1.43.0) define no retry
// metric, only the span attribute http.request.resend_count: these are
// this module's names, of the shape of gRFC A96's for gRPC (see
// [GRPCRetriesMetric]), with the attributes http.request.method,
// server.address and server.port.
const (
	// HTTPRetriesMetric is the histogram of the retries of each request
	// that retried ({retry}), a Transport's hedges included, as gRFC A96
	// counts hedging attempts among a call's retries.
	HTTPRetriesMetric = "backoff.http.client.request.retries"
	// HTTPRetryDelayMetric is the histogram of the total wait before the
	// retries of each request, in seconds (s), 0 for a request not retried.
	HTTPRetryDelayMetric = "backoff.http.client.request.retry_delay"
	// HTTPGiveUpsMetric counts the requests whose Transport stopped
	// without success ({request}), by [ReasonKey].
	HTTPGiveUpsMetric = "backoff.http.client.request.give_ups"
	// HTTPHedgesMetric is the histogram of the hedges of each hedged
	// request that sent any ({hedge}): its copies after the first, which
	// [HTTPRetriesMetric] counts too.
	HTTPHedgesMetric = "backoff.http.client.request.hedges"
	// HTTPHedgeWinsMetric counts the hedged requests won by a copy after
	// the first ({request}).
	HTTPHedgeWinsMetric = "backoff.http.client.request.hedge_wins"
)

var httpNames = names{retries: HTTPRetriesMetric, delay: HTTPRetryDelayMetric, giveUps: HTTPGiveUpsMetric, unit: "{request}",
	hedges: HTTPHedgesMetric, hedgeWins: HTTPHedgeWinsMetric}

// NewTransport instruments t and returns the RoundTripper to send
// requests through: t under a span for each request, above one client span
// per attempt.
//
// It sets t.Base to otelhttp's Transport over the old Base (nil:
// http.DefaultTransport), so that each attempt is a client span of its own
// whose traceparent the server receives; a retry's span carries
// http.request.resend_count, the number of attempts before it. It sets
// t.Retrier to a copy of it (nil: backoffhttp.DefaultRetrier()) whose
// hooks record [HTTPRetriesMetric], [HTTPRetryDelayMetric] and
// [HTTPGiveUpsMetric], then call its own, and t.Hedging, when not nil, to a
// copy whose OnWin records, with OnDone, [HTTPHedgesMetric] and
// [HTTPHedgeWinsMetric], then calls its own.
// The RoundTripper it returns starts the request's span, named "call" and
// the method, of kind internal, the attempts' parent; it ends when
// RoundTrip returns, with the status code of the response returned, status
// Error for an error, a status of 400 or more or a give-up, and the
// [ReasonKey] of a give-up. The body of the response returned is read
// within the last attempt's span. Its CloseIdleConnections closes those of
// the old Base.
//
// Call it once, before t's first use, and send requests only through the
// RoundTripper it returns: a request sent through t itself gets its
// attempts' spans, with their resend counts (backoffhttp.Attempt − 1), but
// no span of its own and no metrics. It returns a
// *backoff.ParamError, and leaves t unchanged, when t is nil or its Base is
// an *otelhttp.Transport already (which would trace each attempt twice),
// and the meter's error when it cannot make the instruments.
func NewTransport(t *backoffhttp.Transport, cfg Config) (http.RoundTripper, error) {
	if t == nil {
		return nil, &backoff.ParamError{Param: "t", Value: t, Reason: "must not be nil"}
	}
	if _, ok := t.Base.(*otelhttp.Transport); ok {
		return nil, &backoff.ParamError{Param: "Transport.Base", Value: t.Base,
			Reason: "must not be an *otelhttp.Transport: NewTransport puts one above it itself"}
	}
	in, err := newInstruments(cfg, httpNames)
	if err != nil {
		return nil, err
	}
	base := orDefault(t.Base)
	t.Base = otelhttp.NewTransport(attemptTransport{base: base},
		otelhttp.WithTracerProvider(cfg.tracerProvider()), otelhttp.WithMeterProvider(cfg.meterProvider()),
		otelhttp.WithPropagators(cfg.propagators()))
	t.Retrier = in.retrier(t.Retrier, backoffhttp.DefaultRetrier)
	if t.Hedging != nil {
		h := *t.Hedging
		h.OnWin = in.onWin(h.OnWin)
		t.Hedging = &h
	}
	return &callTransport{tracer: cfg.tracerProvider().Tracer(scope), next: t, base: base}, nil
}

// attemptTransport sends each attempt through base (not nil), setting the
// resend count of its span, which otelhttp has put in the request's
// context.
type attemptTransport struct{ base http.RoundTripper }

func (t attemptTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	n := backoffhttp.Attempt(req) - 1 // t used without its callTransport
	if c := callFrom(req.Context()); c != nil {
		n = c.resendCount()
	}
	if n > 0 {
		trace.SpanFromContext(req.Context()).SetAttributes(semconv.HTTPRequestResendCount(n))
	}
	return t.base.RoundTrip(req)
}

// callTransport makes the span of each request sent through next, whose
// attempts base sends.
type callTransport struct {
	tracer trace.Tracer
	next   *backoffhttp.Transport
	base   http.RoundTripper
}

func (t *callTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req == nil {
		return t.next.RoundTrip(req) // its ParamError
	}
	ctx, span := t.tracer.Start(req.Context(), "call "+req.Method, trace.WithSpanKind(trace.SpanKindInternal))
	defer span.End()
	ctx, c := withCall(ctx, httpAttributes(req)...)
	c.hedged.Store(t.next.Hedging != nil && t.hedgeable(req))
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if resp != nil {
		span.SetAttributes(semconv.HTTPResponseStatusCode(resp.StatusCode))
	}
	reason := c.gaveUp()
	if reason != "" {
		span.SetAttributes(ReasonKey.String(reason))
	}
	switch {
	case err != nil:
		span.SetStatus(codes.Error, err.Error())
	case resp.StatusCode >= 400 || reason != "":
		span.SetStatus(codes.Error, "")
	}
	return resp, err
}

// hedgeable reports whether next hedges req, as backoffhttp.Transport
// decides: its body can be sent again and its method is idempotent.
func (t *callTransport) hedgeable(req *http.Request) bool {
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return false
	}
	if t.next.Idempotent != nil {
		return t.next.Idempotent(req)
	}
	return backoffhttp.IsIdempotent(req)
}

// CloseIdleConnections closes the idle connections of the base, for
// http.Client.CloseIdleConnections: otelhttp's Transport, between, has no
// such method.
func (t *callTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// httpAttributes are the metrics' attributes of req, as HTTP's conventions
// name them for http.client.request.duration.
func httpAttributes(req *http.Request) []attribute.KeyValue {
	method := req.Method
	switch method {
	case "":
		method = http.MethodGet
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
	default:
		method = "_OTHER"
	}
	attrs := []attribute.KeyValue{semconv.HTTPRequestMethodKey.String(method)}
	if req.URL == nil {
		return attrs
	}
	attrs = append(attrs, semconv.ServerAddress(req.URL.Hostname()))
	port, err := strconv.Atoi(req.URL.Port())
	if err != nil {
		port = map[string]int{"http": 80, "https": 443}[req.URL.Scheme]
	}
	if port > 0 {
		attrs = append(attrs, semconv.ServerPort(port))
	}
	return attrs
}

// orDefault returns rt, or http.DefaultTransport when rt is nil.
func orDefault(rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		return http.DefaultTransport
	}
	return rt
}
