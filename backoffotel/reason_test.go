package backoffotel_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/backoffhttp"
	"github.com/backoffgo/backoff/backoffotel"
	"github.com/backoffgo/backoff/throttle"
)

// TestReason: each stop reason of a real loop has its name.
func TestReason(t *testing.T) {
	fail := errors.New("down")
	two := constant(time.Nanosecond, 2)
	hour := constant(time.Hour, 2)
	soon, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done, stop := context.WithCancel(context.Background())
	stop()
	for _, tt := range []struct {
		name string
		err  error
	}{
		{"", backoff.Do(context.Background(), func(context.Context) error { return nil }, two)},
		{"exhausted", backoff.Do(context.Background(), func(context.Context) error { return fail }, two)},
		{"permanent", backoff.Do(context.Background(), func(context.Context) error { return backoff.Permanent(fail) }, two)},
		{"deadline", backoff.Do(soon, func(context.Context) error { return fail }, hour)},
		{"canceled", backoff.Do(done, func(context.Context) error { return fail }, two)},
		{"retried_below", backoff.Do(context.Background(), func(context.Context) error { return backoff.ErrRetriedBelow }, two)},
		{"other", fail},
		{"other", backoff.Do(context.Background(), func(context.Context) error { return fail }, backoff.PolicyFunc(func(int, error) (time.Duration, error) { return 0, fail }))},
	} {
		if got := backoffotel.Reason(tt.err); got != tt.name {
			t.Errorf("Reason(%v) = %q, want %q", tt.err, got, tt.name)
		}
	}
}

// TestReasonNotRepeatable: a backoffhttp.Transport that may not resend a
// refused request, its body not rewindable, stops with "not_repeatable".
func TestReasonNotRepeatable(t *testing.T) {
	req, _ := http.NewRequest(http.MethodPut, "http://"+deadAddr(t), io.NopCloser(strings.NewReader("body")))
	_, err := (&backoffhttp.Transport{}).RoundTrip(req)
	if got := backoffotel.Reason(err); got != "not_repeatable" {
		t.Errorf("Reason(%v) = %q, want not_repeatable", err, got)
	}
}

// TestReasonThrottled: a backoffhttp.Transport whose Throttle refuses the
// request stops with "throttled".
func TestReasonThrottled(t *testing.T) {
	th := backoff.Must(throttle.New(throttle.Config{FirstTries: true}, backoff.NewSeededRng(1)))
	for range 10000 { // the host rejected 10,000 requests: p ≈ 1 − 1e-4
		th.Record("backend.example", false)
	}
	req, _ := http.NewRequest(http.MethodGet, "http://backend.example/", nil)
	_, err := (&backoffhttp.Transport{Throttle: th}).RoundTrip(req)
	if got := backoffotel.Reason(err); got != "throttled" {
		t.Errorf("Reason(%v) = %q, want throttled", err, got)
	}
}
