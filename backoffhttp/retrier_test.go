package backoffhttp

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
)

// TestTransportHooksSeeTheFailure checks what the Retrier's hooks receive:
// the request's context (for per-host counts, say), and in OnRetry an
// *StatusError for a status with its Retry-After, the transport's own error
// otherwise.
func TestTransportHooksSeeTheFailure(t *testing.T) {
	srv := newServer(t, status(503, "Retry-After", "3"), resetMidResponse, ok("hi"))
	type hostKey struct{}
	host := strings.TrimPrefix(srv.URL, "http://")
	var hosts []any
	var errs []error
	var delays []time.Duration
	tr := &Transport{Base: srv.Client().Transport, MaxRetryAfter: 2 * time.Millisecond, ClampRetryAfter: true,
		Retrier: &backoff.Retrier{Policy: fast,
			OnRetry: func(ctx context.Context, attempt int, err error, delay time.Duration) {
				hosts = append(hosts, ctx.Value(hostKey{}))
				errs = append(errs, err)
				delays = append(delays, delay)
			},
			OnDone: func(ctx context.Context, _ int, _ error) { hosts = append(hosts, ctx.Value(hostKey{})) },
		}}
	req, _ := http.NewRequestWithContext(context.WithValue(context.Background(), hostKey{}, host), "GET", srv.URL, nil)
	resp, err := NewClient(tr).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(errs) != 2 {
		t.Fatalf("OnRetry saw %v", errs)
	}
	var he *StatusError
	if !errors.As(errs[0], &he) || he.StatusCode != 503 || he.RetryAfter() != 3*time.Second || delays[0] != 2*time.Millisecond {
		t.Errorf("first retry: %#v after %v; want a 503 hinting 3s, clamped to 2ms", errs[0], delays[0])
	}
	if errors.As(errs[1], &he) || !strings.Contains(errs[1].Error(), "malformed MIME header") {
		t.Errorf("second retry: %v; want the transport's error on the cut headers", errs[1])
	}
	if !slices.Equal(hosts, []any{host, host, host}) {
		t.Errorf("the hooks' contexts said %v; want %s thrice (the request's context)", hosts, host)
	}
}

// TestTransportBudget: a shared budget stops the retries of a storm.
func TestTransportBudget(t *testing.T) {
	srv := newServer(t, status(503))
	budget, err := backoff.NewBudget(backoff.BudgetConfig{Ratio: 0.01, Reserve: 0.01, Burst: 2})
	if err != nil {
		t.Fatal(err)
	}
	tr := &Transport{Base: srv.Client().Transport, Retrier: &backoff.Retrier{Policy: fast, Budget: budget}}
	var attempts []int
	for range 3 {
		req, _ := http.NewRequest("GET", srv.URL, nil)
		r := roundTrip(t, tr, req)
		if r.err != nil || r.resp.StatusCode != 503 {
			t.Fatalf("RoundTrip = %v, %v; want the 503", r.resp, r.err)
		}
		attempts = append(attempts, r.attempts)
		if len(attempts) > 1 && !errors.Is(r.doneErr, backoff.ErrBudget) {
			t.Errorf("OnDone got %v; want ErrBudget", r.doneErr)
		}
	}
	// The full budget pays two retries of the first call, then refuses.
	if !slices.Equal(attempts, []int{3, 1, 1}) {
		t.Errorf("attempts per request: %v; want [3 1 1]", attempts)
	}
}

// TestNilRetrierPolicy pins the policy of a Transport whose Retrier is nil,
// as documented: DefaultRetrier's full jitter, Base 200ms, Cap 10s,
// MaxAttempts 5, and a Retry-After over DefaultMaxRetryAfter gives up.
func TestNilRetrierPolicy(t *testing.T) {
	tr := &Transport{}
	if err := tr.init(); err != nil {
		t.Fatal(err)
	}
	fail := errors.New("fail")
	for attempt := 1; attempt <= 4; attempt++ {
		ceiling := min(10*time.Second, 200*time.Millisecond<<(attempt-1))
		var largest time.Duration
		for range 2000 {
			d, err := tr.retrier.Policy.NextDelay(attempt, fail)
			if err != nil || d < 0 || d > ceiling {
				t.Fatalf("attempt %d: %v, %v; want a delay in [0, %v]", attempt, d, err, ceiling)
			}
			largest = max(largest, d)
		}
		if largest < ceiling*9/10 {
			t.Errorf("attempt %d: largest of 2000 delays %v, far below %v: not full jitter", attempt, largest, ceiling)
		}
	}
	if _, err := tr.retrier.Policy.NextDelay(5, fail); !errors.Is(err, backoff.ErrExhausted) {
		t.Errorf("attempt 5: %v; want ErrExhausted", err)
	}
	hinted := backoff.WithRetryAfter(fail, time.Hour)
	if _, err := tr.retrier.Policy.NextDelay(1, hinted); !errors.Is(err, backoff.ErrHintTooLong) {
		t.Errorf("an hour's hint: %v; want ErrHintTooLong", err)
	}
	if d, err := tr.retrier.Policy.NextDelay(1, backoff.WithRetryAfter(fail, DefaultMaxRetryAfter)); err != nil || d != DefaultMaxRetryAfter {
		t.Errorf("a hint of DefaultMaxRetryAfter: %v, %v; want it waited", d, err)
	}
}

// TestDefaultRetrier: DefaultRetrier returns a new Retrier at each call,
// with nothing set but the policy of a Transport whose Retrier is nil
// (which TestNilRetrierPolicy pins), shared by all.
func TestDefaultRetrier(t *testing.T) {
	a, b := DefaultRetrier(), DefaultRetrier()
	for _, r := range []*backoff.Retrier{a, b} {
		if r.Policy != defaultPolicy || r.Budget != nil || r.MaxElapsed != 0 || r.RetryInner || r.OnRetry != nil || r.OnDone != nil {
			t.Errorf("DefaultRetrier() = %+v; want defaultPolicy and nothing else", r)
		}
	}
	if a == b {
		t.Error("DefaultRetrier returned the same Retrier twice")
	}
}

// TestTransportMaxElapsed: the Retrier's MaxElapsed bounds the time from
// the start of the first attempt to the start of the last retry, the
// attempts' own time included: with waits of a minute and MaxElapsed
// 2m30s, a 503 every time is returned after 3 attempts, at 2m, and
// attempts that each run out of an AttemptTimeout of 20 s stop after 2, at
// 1m40s; both stop with ErrDeadline.
func TestTransportMaxElapsed(t *testing.T) {
	always := backoff.PolicyFunc(func(int, error) (time.Duration, error) { return time.Minute, nil })
	for _, tt := range []struct {
		name     string
		fault    fault
		timeout  time.Duration
		status   int // 0: an error
		attempts int
		elapsed  time.Duration
	}{
		{"503", status(503), 0, 503, 3, 2 * time.Minute},
		{"attempts timing out", slow(time.Hour), 20 * time.Second, 0, 2, time.Minute + 40*time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var n atomic.Int32
			inBubble(t, playFaults(&n, tt.fault), func(t *testing.T, base *http.Transport) {
				req, _ := http.NewRequest("GET", "http://pipe/", nil)
				tr := &Transport{Base: base, AttemptTimeout: tt.timeout,
					Retrier: &backoff.Retrier{Policy: always, MaxElapsed: 2*time.Minute + 30*time.Second}}
				start := time.Now()
				r := roundTrip(t, tr, req)
				elapsed := time.Since(start)
				if (r.resp != nil && r.resp.StatusCode == tt.status) != (tt.status != 0) || (r.err == nil) != (tt.status != 0) {
					t.Errorf("RoundTrip = %v, %v; want status %d (0: an error)", r.resp, r.err, tt.status)
				}
				if !errors.Is(r.doneErr, backoff.ErrDeadline) || r.attempts != tt.attempts || int(n.Load()) != tt.attempts || elapsed != tt.elapsed {
					t.Errorf("OnDone %v after %d attempts (%d served) in %v; want ErrDeadline after %d in %v", r.doneErr, r.attempts, n.Load(), elapsed, tt.attempts, tt.elapsed)
				}
			})
		})
	}
}
