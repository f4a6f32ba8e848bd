package backoffhttp

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"testing"
)

// TestDefaultShouldRetryJoinedRefusal: a refusal of net/http's Transport is
// seen in every branch of an errors.Join, as errors.As would find it, not
// only along Unwrap() error: a RoundTripper that joins it with its own
// error (a log line, a metric's failure) must not make it retried.
func TestDefaultShouldRetryJoinedRefusal(t *testing.T) {
	req, err := http.NewRequest(http.MethodGet, "ftp://example.com/x", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, refusal := http.DefaultTransport.RoundTrip(req) // refused before dialing
	if refusal == nil || DefaultShouldRetry(nil, refusal) {
		t.Fatalf("net/http's refusal %v: want an error DefaultShouldRetry stops at", refusal)
	}
	other := errors.New("audit log: write failed")
	for _, err := range []error{
		errors.Join(other, refusal),
		errors.Join(refusal, other),
		fmt.Errorf("proxy: %w", errors.Join(other, &url.Error{Op: "Get", URL: "ftp://example.com/x", Err: refusal})),
		fmt.Errorf("%w; %w", other, refusal),
	} {
		if DefaultShouldRetry(nil, err) {
			t.Errorf("DefaultShouldRetry(nil, %q) = true, want false: the refusal is in its chain", err)
		}
	}
	if !DefaultShouldRetry(nil, errors.Join(other, errors.New("read: connection reset by peer"))) {
		t.Error("DefaultShouldRetry of a joined reset = false")
	}
}
