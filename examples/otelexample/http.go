package otelexample

import (
	"errors"
	"net/http"

	"github.com/backoffgo/backoff/backoffhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// ResendCountTransport is an http.RoundTripper that sets
// http.request.resend_count on the span of each retry it sends: install it
// under otelhttp's Transport, itself the Base of a backoffhttp.Transport,
//
//	&backoffhttp.Transport{Base: otelhttp.NewTransport(otelexample.ResendCountTransport{})}
//
// so that each request it sees is one attempt, whose span otelhttp has put
// in the request's context. The count is backoffhttp.Attempt − 1, set only
// when it is positive, as the conventions say: a first attempt gets none,
// unless the caller's request carried an attempt count of its own, which a
// Transport sends on a first attempt as it is (see backoffhttp.Attempt).
// Base sends the request; nil means http.DefaultTransport.
type ResendCountTransport struct{ Base http.RoundTripper }

// RoundTrip sets the resend count of req's span, if req is a retry, and
// sends req through Base.
func (t ResendCountTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if n := backoffhttp.Attempt(req) - 1; n > 0 {
		trace.SpanFromContext(req.Context()).SetAttributes(semconv.HTTPRequestResendCount(n))
	}
	return base(t.Base).RoundTrip(req)
}

// CallSpanTransport is an http.RoundTripper that makes one span for each
// logical request, above the spans of its attempts: install it above the
// retrying transport, which is its Base,
//
//	otelexample.CallSpanTransport{Tracer: tracer, Base: &backoffhttp.Transport{…}}
//
// The span is named "call " and the request's method, and is of kind
// internal: the attempts are the client spans that HTTP's conventions
// count. It starts when RoundTrip is called and ends when RoundTrip
// returns, with the status code of the response it returns, if any; its
// status is Error when RoundTrip fails or the status is 400 or more. The
// response's body is read after it ends, within the last attempt's span.
//
// Tracer makes the spans; nil means the global TracerProvider's. Base
// sends the request; nil means http.DefaultTransport.
type CallSpanTransport struct {
	Tracer trace.Tracer
	Base   http.RoundTripper
}

// RoundTrip sends req through Base within the call's span.
func (t CallSpanTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	tracer := t.Tracer
	if tracer == nil {
		tracer = otel.Tracer("github.com/backoffgo/backoff/examples/otelexample")
	}
	ctx, span := tracer.Start(req.Context(), "call "+req.Method, trace.WithSpanKind(trace.SpanKindInternal))
	defer span.End()
	resp, err := base(t.Base).RoundTrip(req.WithContext(ctx))
	switch {
	case err != nil:
		span.SetStatus(codes.Error, err.Error())
	case resp.StatusCode >= 400:
		span.SetAttributes(semconv.HTTPResponseStatusCode(resp.StatusCode))
		span.SetStatus(codes.Error, "")
	default:
		span.SetAttributes(semconv.HTTPResponseStatusCode(resp.StatusCode))
	}
	return resp, err
}

// base returns rt, or http.DefaultTransport when rt is nil.
func base(rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		return http.DefaultTransport
	}
	return rt
}

// HTTPRetriesMetric is the histogram of the retries of each HTTP request
// that InstrumentTransport records (HTTP's conventions name none).
const HTTPRetriesMetric = "backoff.http.client.retries"

// InstrumentTransport sets t's OnDone to record each RoundTrip on meter's
// instruments, and then to call t's own OnDone, if any: one count in
// CallsMetric with the request's OutcomeKey, and its retries in
// HTTPRetriesMetric, in the request's context. A response that t was not
// to retry counts as "success" or "success_after_retry", whatever its
// status (a 404 included): its status is otelhttp's to record. Call it
// before t's first use. It returns an error, and leaves t as it was, when t
// is nil or meter cannot make the instruments.
func InstrumentTransport(t *backoffhttp.Transport, meter metric.Meter) error {
	if t == nil {
		return errors.New("otelexample: InstrumentTransport: the Transport t is nil")
	}
	in, err := newInstruments(meter, HTTPRetriesMetric)
	if err != nil {
		return err
	}
	onDone := t.OnDone
	t.OnDone = func(req *http.Request, attempts int, err error) {
		in.record(req.Context(), attempts, err)
		if onDone != nil {
			onDone(req, attempts, err)
		}
	}
	return nil
}
