package backoffhttp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
)

// wrapBodies is a middleware between a client and its transport that
// wraps every response body, as tracing and metrics middleware do.
type wrapBodies struct{ base http.RoundTripper }

type wrappedBody struct{ io.ReadCloser }

func (w wrapBodies) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := w.base.RoundTrip(req)
	if resp != nil {
		resp.Body = wrappedBody{resp.Body}
	}
	return resp, err
}

// TestLoopAroundTransportStandsBackThroughWrappers: a 3-attempt loop
// around CheckResponse, around a client whose Transport gave up after 3
// attempts, stands back however the body is wrapped on the way: by
// http.Client's Timeout, or by a middleware between the client and the
// Transport. 3 requests reach the server, not 9, which they did when the
// mark was the body's type.
func TestLoopAroundTransportStandsBackThroughWrappers(t *testing.T) {
	url, hits := unavailable(t)
	tr := &Transport{Retrier: retrier(threeAttempts)}
	for _, tt := range []struct {
		name   string
		client *http.Client
	}{
		{"http.Client.Timeout", &http.Client{Transport: tr, Timeout: time.Minute}},
		{"a body-wrapping RoundTripper", &http.Client{Transport: wrapBodies{tr}}},
		{"both", &http.Client{Transport: wrapBodies{tr}, Timeout: time.Minute}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			hits.Store(0)
			var gaveUp *backoff.Error
			err := backoff.Do(context.Background(), func(ctx context.Context) error {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
				resp, err := tt.client.Do(req)
				if err != nil {
					return err
				}
				resp.Body.Close()
				gaveUp = GaveUp(resp)
				return CheckResponse(resp)
			}, threeAttempts)
			if hits.Load() != 3 || !errors.Is(err, backoff.ErrRetriedBelow) {
				t.Errorf("%d requests, %v; want 3 and ErrRetriedBelow", hits.Load(), err)
			}
			if gaveUp == nil || gaveUp.Attempts != 3 || !errors.Is(gaveUp, backoff.ErrExhausted) {
				t.Errorf("GaveUp = %v; want 3 attempts exhausted", gaveUp)
			}
		})
	}
}

// TestGaveUp: GaveUp returns the error OnDone received for a response the
// Transport gave up on, for every reason, and nil for any other response;
// a request made later with the same context, or a copy of a response
// that keeps its Request, are not confused.
func TestGaveUp(t *testing.T) {
	if GaveUp(nil) != nil || GaveUp(&http.Response{}) != nil {
		t.Error("GaveUp of a nil response, or one without a Request, is not nil")
	}
	budget := backoff.Must(backoff.NewBudget(backoff.BudgetConfig{Ratio: 0.1, Reserve: 0.001, Burst: 1}))
	var n atomic.Int32
	for _, tt := range []struct {
		name  string
		codes []int
		tr    *Transport
		want  error // nil: GaveUp is nil
	}{
		{"success", []int{200}, &Transport{Retrier: retrier(threeAttempts)}, nil},
		{"success after retries", []int{503, 503, 200}, &Transport{Retrier: retrier(threeAttempts)}, nil},
		{"a status not retried", []int{404}, &Transport{Retrier: retrier(threeAttempts)}, nil},
		{"a status after retries", []int{503, 404}, &Transport{Retrier: retrier(threeAttempts)}, nil},
		{"exhausted", []int{503}, &Transport{Retrier: retrier(threeAttempts)}, backoff.ErrExhausted},
		{"deadline", []int{503}, &Transport{Retrier: retrier(minute), MaxRetryAfter: time.Hour}, backoff.ErrDeadline},
		{"budget", []int{503}, &Transport{Retrier: &backoff.Retrier{Policy: threeAttempts, Budget: budget}}, backoff.ErrBudget},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n.Store(0)
			var doneErr error
			tt.tr.Base = nilBodies(&n, tt.codes...)
			tt.tr.Retrier.OnDone = func(_ context.Context, _ int, err error) { doneErr = err }
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", "http://example.test/", nil)
			resp, err := tt.tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			got := GaveUp(resp)
			if tt.want == nil {
				if got != nil {
					t.Errorf("GaveUp = %v; want nil", got)
				}
				return
			}
			if got == nil || error(got) != doneErr || !errors.Is(got, tt.want) {
				t.Fatalf("GaveUp = %v; want OnDone's %v, matching %v", got, doneErr, tt.want)
			}
			if resp.Request.Context().Err() != nil || resp.Request.URL != req.URL {
				t.Errorf("resp.Request: %v, %v; want the request sent, its context live", resp.Request.URL, resp.Request.Context().Err())
			}
			copied := *resp
			if GaveUp(&copied) != got {
				t.Error("GaveUp of a copy of the response differs")
			}
			later, _ := http.NewRequestWithContext(resp.Request.Context(), "GET", "http://example.test/", nil)
			if GaveUp(&http.Response{Request: later}) != nil {
				t.Error("GaveUp of a later request's response, made with the same context, is not nil")
			}
		})
	}
}

// TestGaveUpKeepsTheRequestSent: the response's Request stays the one its
// base transport reported (the request sent), with the reason in its
// context; when the base reported none, it is the caller's.
func TestGaveUpKeepsTheRequestSent(t *testing.T) {
	for _, reported := range []bool{true, false} {
		var n atomic.Int32
		base := roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := nilBodies(&n, 503).RoundTrip(req)
			resp.Request = nil
			if reported {
				resp.Request = req.Clone(req.Context())
				resp.Request.Header.Set("X-Sent", "yes")
			}
			return resp, err
		})
		req, _ := http.NewRequest("GET", "http://example.test/", nil)
		resp, err := (&Transport{Base: base, Retrier: retrier(threeAttempts)}).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		if GaveUp(resp) == nil || resp.Request.URL.String() != req.URL.String() || (resp.Request.Header.Get("X-Sent") == "yes") != reported {
			t.Errorf("reported %v: GaveUp %v, Request %v %v; want the reason and the request sent", reported, GaveUp(resp), resp.Request.URL, resp.Request.Header)
		}
	}
}
