// Package otelexample shows the retries of backoffhttp and backoffgrpc in
// OpenTelemetry, as its semantic conventions describe them: each attempt is
// its own client span, and a retry's span carries
// http.request.resend_count (attempt − 1); one span covers the logical
// call above its attempts; each call is counted by outcome (the stop
// reason), and its retries are recorded.
//
// For HTTP, otelhttp's Transport makes one span per attempt under a
// backoffhttp.Transport, [ResendCountTransport] sets the resend count,
// [CallSpanTransport] makes the call's span and [InstrumentTransport] the
// metrics. For gRPC, otelgrpc's stats handler makes the attempts' spans,
// [ResendCount] sets the resend count, [CallSpan] makes the call's span and
// [Instrument] the metrics.
//
// It is a module of its own, so that neither backoff nor backoffgrpc
// requires OpenTelemetry.
package otelexample
