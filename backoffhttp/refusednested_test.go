package backoffhttp

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
)

// TestRefusalSeenUnderNestedLoops: net/http's refusal to send a request is
// found in an error's chain as errors.As finds it, also two
// *backoff.Errors deep, where *backoff.Error.Unwrap shows the inner loop's
// *backoff.Error through a view: a Transport whose Base is a Transport
// whose Base is a Transport must not retry a request that the innermost
// one's http.Transport refused.
func TestRefusalSeenUnderNestedLoops(t *testing.T) {
	once := backoff.Must(backoff.NewExponential(backoff.Config{Base: time.Millisecond, Cap: time.Millisecond, MaxAttempts: 1}))
	refusal := errors.New(`net/http: invalid header field name "X Bad"`)
	oneDeep := backoff.Do(context.Background(), func(context.Context) error { return refusal }, once)
	twoDeep := backoff.Do(context.Background(), func(context.Context) error { return oneDeep }, once)
	for _, err := range []error{oneDeep, twoDeep} {
		if !errors.Is(err, refusal) {
			t.Fatalf("errors.Is finds no refusal in %v", err)
		}
		if DefaultShouldRetry(nil, err) {
			t.Errorf("DefaultShouldRetry(nil, %v) = true; want false: net/http's refusal is in its chain", err)
		}
	}

	req := must(http.NewRequest("GET", "http://example.invalid/", nil))
	req.Header["X Bad"] = []string{"1"} // refused by http.Transport before it dials
	attempts := 0
	inner := &Transport{Base: &http.Transport{}, Retrier: retrier(fast)}
	middle := &Transport{Base: inner, Retrier: retrier(fast)}
	outer := &Transport{Base: middle, Retrier: &backoff.Retrier{Policy: fast, OnDone: func(_ context.Context, n int, _ error) { attempts = n }}}
	_, err := outer.RoundTrip(req)
	if !errors.Is(err, backoff.ErrPermanent) || attempts != 1 {
		t.Errorf("RoundTrip = %v after %d attempts; want the refusal, permanent, at the first attempt", err, attempts)
	}
}
