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
				gaveUp = gaveUpOf(resp)
				return CheckResponse(resp)
			}, threeAttempts)
			if hits.Load() != 3 || !errors.Is(err, backoff.ErrRetriedBelow) {
				t.Errorf("%d requests, %v; want 3 and ErrRetriedBelow", hits.Load(), err)
			}
			if gaveUp == nil || gaveUp.Attempts != 3 || !errors.Is(gaveUp, backoff.ErrExhausted) {
				t.Errorf("CheckResponse = %v; want 3 attempts exhausted", gaveUp)
			}
		})
	}
}

// TestCheckResponseGaveUp: CheckResponse returns the error OnDone received
// for a response the Transport gave up on, for every reason, with the
// response's *StatusError inside, and no *backoff.Error for any other
// response; a request made later with the same context, or a copy of a
// response that keeps its Request, are not confused.
func TestCheckResponseGaveUp(t *testing.T) {
	var pe *backoff.ParamError
	if err := CheckResponse(nil); !errors.As(err, &pe) || pe.Param != "resp" {
		t.Errorf("CheckResponse(nil) = %v; want a *backoff.ParamError naming resp", err)
	}
	if err := CheckResponse(&http.Response{StatusCode: 200}); err != nil {
		t.Errorf("CheckResponse of a 200 without a Request = %v; want nil", err)
	}
	budget := backoff.Must(backoff.NewBudget(backoff.BudgetConfig{Ratio: 0.1, Reserve: 0.001, Burst: 1}))
	var n atomic.Int32
	for _, tt := range []struct {
		name  string
		codes []int
		tr    *Transport
		want  error // nil: CheckResponse is no give-up
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
			got := gaveUpOf(resp)
			if tt.want == nil {
				if got != nil {
					t.Errorf("CheckResponse = %v; want no give-up", got)
				}
				return
			}
			var se *StatusError
			if got == nil || error(got) != doneErr || !errors.Is(got, tt.want) || !errors.As(got, &se) || se.StatusCode != 503 {
				t.Fatalf("CheckResponse = %v; want OnDone's %v, matching %v, with the 503's *StatusError", got, doneErr, tt.want)
			}
			if resp.Request.Context().Err() != nil || resp.Request.URL != req.URL {
				t.Errorf("resp.Request: %v, %v; want the request sent, its context live", resp.Request.URL, resp.Request.Context().Err())
			}
			copied := *resp
			if gaveUpOf(&copied) != got {
				t.Error("CheckResponse of a copy of the response differs")
			}
			later, _ := http.NewRequestWithContext(resp.Request.Context(), "GET", "http://example.test/", nil)
			if gaveUpOf(&http.Response{Request: later}) != nil {
				t.Error("CheckResponse of a later request's response, made with the same context, is a give-up")
			}
		})
	}
}

// TestCheckResponseKeepsTheRequestSent: the response's Request stays the one its
// base transport reported (the request sent), with the reason in its
// context; when the base reported none, it is the caller's.
func TestCheckResponseKeepsTheRequestSent(t *testing.T) {
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
		if gaveUpOf(resp) == nil || resp.Request.URL.String() != req.URL.String() || (resp.Request.Header.Get("X-Sent") == "yes") != reported {
			t.Errorf("reported %v: CheckResponse %v, Request %v %v; want the reason and the request sent", reported, gaveUpOf(resp), resp.Request.URL, resp.Request.Header)
		}
	}
}

// gaveUpOf returns CheckResponse(resp) when it is the *backoff.Error of a
// Transport that gave up on resp, and nil otherwise.
func gaveUpOf(resp *http.Response) *backoff.Error {
	if resp == nil {
		return nil
	}
	e, _ := CheckResponse(resp).(*backoff.Error)
	return e
}
