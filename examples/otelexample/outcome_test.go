package otelexample

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/backoffhttp"
)

// TestOutcome: each stop reason of a real loop has its name.
func TestOutcome(t *testing.T) {
	fail := errors.New("down")
	two := backoff.Must(backoff.NewExponential(backoff.Config{Base: time.Nanosecond, Cap: time.Nanosecond, MaxAttempts: 2}))
	hour := backoff.Must(backoff.NewExponential(backoff.Config{Base: time.Hour, Cap: time.Hour, MaxAttempts: 2}))
	soon, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done, stop := context.WithCancel(context.Background())
	stop()
	do := func(ctx context.Context, p backoff.Policy, err error) (int, error) {
		n := 0
		e := backoff.Do(ctx, func(context.Context) error { n++; return err }, p)
		return n, e
	}
	for _, tt := range []struct {
		name string
		run  func() (int, error)
	}{
		{"success", func() (int, error) { return do(context.Background(), two, nil) }},
		{"exhausted", func() (int, error) { return do(context.Background(), two, fail) }},
		{"permanent", func() (int, error) { return do(context.Background(), two, backoff.Permanent(fail)) }},
		{"deadline", func() (int, error) { return do(soon, hour, fail) }},
		{"canceled", func() (int, error) { return do(done, two, fail) }},
		{"retried_below", func() (int, error) { return do(context.Background(), two, backoff.ErrRetriedBelow) }},
		{"other", func() (int, error) { return 1, fail }},
	} {
		if n, err := tt.run(); Outcome(n, err) != tt.name {
			t.Errorf("Outcome(%d, %v) = %q, want %q", n, err, Outcome(n, err), tt.name)
		}
	}
	if got := Outcome(3, nil); got != "success_after_retry" {
		t.Errorf("Outcome(3, nil) = %q", got)
	}
}

// TestOutcomeNotRepeatable: a backoffhttp.Transport that may not resend a
// refused request, its body not rewindable, stops with "not_repeatable".
func TestOutcomeNotRepeatable(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + lis.Addr().String()
	lis.Close()
	var got string
	tr := &backoffhttp.Transport{OnDone: func(_ *http.Request, attempts int, err error) { got = Outcome(attempts, err) }}
	req, _ := http.NewRequest(http.MethodPut, url, io.NopCloser(strings.NewReader("body")))
	if _, err := tr.RoundTrip(req); !errors.Is(err, backoffhttp.ErrNotRepeatable) {
		t.Fatalf("RoundTrip = %v, want ErrNotRepeatable", err)
	}
	if got != "not_repeatable" {
		t.Errorf("Outcome = %q, want not_repeatable", got)
	}
}
