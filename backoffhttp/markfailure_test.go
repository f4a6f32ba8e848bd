package backoffhttp

import (
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/backoffgo/backoff"
)

// TestMarkFailureKinds: MarkFailure marks, through a real server, the
// failures that are or wrap the give-up of a Transport's loop that retried
// (or, as backoff.Error.RetriedBelow says, was refused by its budget), and
// no failure of a loop that stopped after its first attempt for any other
// reason, nor a nil error, nor one set after the status was written.
func TestMarkFailureKinds(t *testing.T) {
	down, _ := unavailable(t)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + lis.Addr().String()
	lis.Close()
	status := func(code int, header ...string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			for i := 0; i < len(header); i += 2 {
				w.Header().Set(header[i], header[i+1])
			}
			w.WriteHeader(code)
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	cutter := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close() // the request was read: its outcome is unknown
		}
	}))
	t.Cleanup(cutter.Close)
	cut := cutter.URL
	notFound, hint := status(http.StatusNotFound), status(http.StatusServiceUnavailable, "Retry-After", "3600")
	spent := backoff.Must(backoff.NewBudget(backoff.BudgetConfig{Burst: 1, Reserve: 0.001, Ratio: 0.001}))
	spent.Withdraw()
	three := NewClient(&Transport{Policy: threeAttempts})
	budgeted := NewClient(&Transport{Policy: threeAttempts, Budget: spent})
	// do sends method to url with c on r's context and returns the error
	// MarkFailure is given: the Transport's, or CheckResponse's.
	do := func(c *http.Client, r *http.Request, method, url string) error {
		req, _ := http.NewRequestWithContext(r.Context(), method, url, strings.NewReader("x"))
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		return CheckResponse(resp)
	}
	for _, tt := range []struct {
		name   string
		fail   func(r *http.Request) error
		marked bool
	}{
		{"a Transport's error after retrying", func(r *http.Request) error { return do(three, r, http.MethodGet, refused) }, true},
		{"a Transport's give-up response after retrying", func(r *http.Request) error { return do(three, r, http.MethodGet, down) }, true},
		{"that give-up joined with another error", func(r *http.Request) error {
			return errors.Join(errors.New("cache down"), do(three, r, http.MethodGet, down))
		}, true},
		{"a Transport refused by its budget at the first retry", func(r *http.Request) error { return do(budgeted, r, http.MethodGet, down) }, true},
		{"a status not retried", func(r *http.Request) error { return do(three, r, http.MethodGet, notFound) }, false},
		{"a POST's status, not repeatable", func(r *http.Request) error { return do(three, r, http.MethodPost, down) }, false},
		{"a POST's refused connections, retried (nothing was sent)", func(r *http.Request) error { return do(three, r, http.MethodPost, refused) }, true},
		{"a POST's connection cut, not repeatable", func(r *http.Request) error { return do(three, r, http.MethodPost, cut) }, false},
		{"a Retry-After too long at the first attempt", func(r *http.Request) error { return do(three, r, http.MethodGet, hint) }, false},
		{"nil", func(*http.Request) error { return nil }, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, late := range []bool{false, true} {
				srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					err := tt.fail(r)
					if late {
						w.WriteHeader(http.StatusBadGateway)
					}
					MarkFailure(w, err)
					w.WriteHeader(http.StatusBadGateway)
				}))
				srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the late case's second WriteHeader
				srv.Start()
				resp, err := http.Get(srv.URL)
				srv.Close()
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if got := saysTrue(resp.Header[DontRetryHeader]); got != (tt.marked && !late) {
					t.Errorf("MarkFailure after the status: %v; %s %q, want marked %v", late, DontRetryHeader, resp.Header[DontRetryHeader], tt.marked && !late)
				}
			}
		})
	}
}
