// Adapter for github.com/hashicorp/go-retryablehttp v0.7.8 (its backoff
// functions and its Client retry loop).
//
// Mapping: retryablehttp.DefaultBackoff(min=base, max=cap, attemptNum=n-1,
// nil) - the Client calls Backoff with attemptNum = 0 before the first
// retry - which returns min(cap, base*2^(n-1)): the full-jitter CEILING.
//
// Inexact:
//   - NO JITTER. None of the library's backoff functions does exponential
//     backoff with jitter: DefaultBackoff is exponential without jitter
//     (its delay is always the ceiling, still within the full-jitter bound),
//     LinearJitterBackoff is linear (and seeds a new math/rand source on
//     every call). We use DefaultBackoff; a user wanting full jitter must
//     write their own Backoff func.
//   - The loop is Client.Do, an HTTP loop: the operation is the RoundTrip
//     of an in-memory http.RoundTripper (no network) that calls Op and
//     returns a 200 response on success, an error on failure. Every
//     measurement therefore includes net/http client work, a
//     retryablehttp.Request per call, and on failure DefaultRetryPolicy's
//     regexp checks of the error text. Not directly comparable with the
//     generic loops; reported for completeness.
//   - RetryMax = maxAttempts-1 (it counts retries). Logger nil.
//   - NoCap: max = math.MaxInt64 (no such setting exists).
//   - Smallest delays: base=cap=1ns (a zero RetryWaitMin works as well).
package benchmarks

import (
	"context"
	"io"
	"math"
	"net/http"
	"time"

	retryablehttp "github.com/hashicorp/go-retryablehttp"
)

type hashicorp struct{}

func init() { register(hashicorp{}) }

func (hashicorp) Name() string { return "retryablehttp" }

func hcMax(cap time.Duration) time.Duration {
	if cap == NoCap {
		return math.MaxInt64
	}
	return cap
}

type hcSeq struct{ base, max time.Duration }

func (s hcSeq) Delay(attempt int) time.Duration {
	return retryablehttp.DefaultBackoff(s.base, s.max, attempt-1, nil)
}

func (hashicorp) NewSeq(base, cap time.Duration) Seq { return hcSeq{base, hcMax(cap)} }

// opTransport is an in-memory RoundTripper: the HTTP request "is" Op.
type opTransport struct {
	op   *Op
	resp func(*http.Request) *http.Response
}

func (t opTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := t.op.Call(); err != nil {
		return nil, err
	}
	return t.resp(req), nil
}

func okResponse(req *http.Request) *http.Response {
	return &http.Response{StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{}, Body: http.NoBody, Request: req}
}

const hcURL = "http://backoff.invalid/"

func newHCClient(rt http.RoundTripper, base, cap time.Duration, maxAttempts int) *retryablehttp.Client {
	return &retryablehttp.Client{
		HTTPClient:   &http.Client{Transport: rt},
		RetryWaitMin: base,
		RetryWaitMax: hcMax(cap),
		RetryMax:     maxAttempts - 1,
		CheckRetry:   retryablehttp.DefaultRetryPolicy,
		Backoff:      retryablehttp.DefaultBackoff,
	}
}

func hcDo(c *retryablehttp.Client, ctx context.Context) error {
	req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodGet, hcURL, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

func (hashicorp) NewRetrier(op *Op, base, cap time.Duration, maxAttempts int) func(context.Context) error {
	// One response reused: the retrier is used by one goroutine at a time.
	var resp *http.Response
	c := newHCClient(opTransport{op: op, resp: func(req *http.Request) *http.Response {
		if resp == nil {
			resp = okResponse(req)
		}
		resp.Request = req
		return resp
	}}, base, cap, maxAttempts)
	return func(ctx context.Context) error { return hcDo(c, ctx) }
}

func (hashicorp) NewShared(base, cap time.Duration) func(int) time.Duration {
	c := newHCClient(nil, base, cap, 10)
	return func(attempt int) time.Duration {
		return c.Backoff(c.RetryWaitMin, c.RetryWaitMax, attempt-1, nil)
	}
}

// sharedTransport dispatches to the Op carried in the request context.
type opKey struct{}

type ctxTransport struct{}

func (ctxTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := req.Context().Value(opKey{}).(*Op).Call(); err != nil {
		return nil, err
	}
	return okResponse(req), nil
}

func (hashicorp) NewSharedRetrier(base, cap time.Duration, maxAttempts int) func(context.Context, *Op) error {
	c := newHCClient(ctxTransport{}, base, cap, maxAttempts)
	return func(ctx context.Context, op *Op) error {
		return hcDo(c, context.WithValue(ctx, opKey{}, op))
	}
}
