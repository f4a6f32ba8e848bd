package backoffhttp

import (
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/backoffgo/backoff/internal/golden"
)

// A fleet over real HTTP on loopback: 100 clients, each with a Transport of
// its own (3 attempts), send requests at once through three services, each
// wrapped in Handler and calling the next through a Transport of 3 attempts
// (marking its give-ups with MarkFailure), over a bottom service that
// always fails (also wrapped in Handler, so that it counts the retries it
// receives). Without the count, a request at the top costs 3 at the bottom
// (one layer retries); with it, the bottom's answers say "don't retry" once
// retries pass 10 % of its requests.

const (
	fleetClients   = 100
	fleetPerClient = 20
)

// pool is the connection pool of every Transport of these tests, big enough
// for the fleet's concurrency, so that connections are reused instead of
// piling up in TIME_WAIT.
var pool = &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 256}

// wrapper wraps the fleet's services: counted, Handler with a Share of its
// own, or uncounted, Handler with a Share that is never over (without the
// count).
type wrapper func(http.Handler) http.Handler

func counted(h http.Handler) http.Handler   { return Handler(h, ServerConfig{}) }
func uncounted(h http.Handler) http.Handler { return Handler(h, ServerConfig{Share: neverOver()}) }

// failingBottom starts the bottom service: a handler that always answers
// 503, wrapped. It returns its URL and the count of its requests.
func failingBottom(t *testing.T, wrap wrapper) (string, *atomic.Int64) {
	var hits atomic.Int64
	srv := httptest.NewServer(wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	})))
	t.Cleanup(srv.Close)
	return srv.URL, &hits
}

// service starts a wrapped service that relays to next through a Transport
// of 3 attempts, on l when it is not nil, and returns its URL.
func service(t *testing.T, wrap wrapper, next string, l net.Listener) string {
	srv := httptest.NewUnstartedServer(wrap(relay(t, &Transport{Base: pool, Retrier: retrier(threeAttempts)}, http.MethodGet, next, true)))
	if l != nil {
		srv.Listener.Close()
		srv.Listener = l
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

// fleet sends fleetPerClient GETs from each of fleetClients clients to top
// and returns the number of requests sent.
func fleet(t *testing.T, top string) int64 {
	var wg sync.WaitGroup
	for range fleetClients {
		client := NewClient(&Transport{Base: pool, Retrier: retrier(threeAttempts)})
		wg.Go(func() {
			for range fleetPerClient {
				resp, err := client.Get(top)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	return fleetClients * fleetPerClient
}

// TestFleetOverHTTP: the fleet through three services directly: at most
// 1.25 requests at the bottom per request at the top (README quotes the
// figure measured), and 3 without the count.
func TestFleetOverHTTP(t *testing.T) {
	if testing.Short() {
		t.Skip("a fleet of 100 clients over loopback")
	}
	var ratios []float64
	for _, wrap := range []wrapper{counted, uncounted} {
		bottom, hits := failingBottom(t, wrap)
		top := service(t, wrap, service(t, wrap, service(t, wrap, bottom, nil), nil), nil)
		sent := fleet(t, top)
		ratios = append(ratios, float64(hits.Load())/float64(sent))
	}
	t.Logf("%d clients × %d requests through 3 services: %.2f requests at the bottom per request at the top, %.2f without the count", fleetClients, fleetPerClient, ratios[0], ratios[1])
	if ratios[0] > 1.25 || ratios[1] != 3 {
		t.Errorf("%.2f requests at the bottom per request at the top, %.2f without the count; want at most 1.25, and 3", ratios[0], ratios[1])
	}
	measured(t, "../README.md", "fleet-http", ratios, func(f []string) string {
		return fmt.Sprintf("Over real HTTP on loopback, %d clients (a `Transport` each, 3 attempts) sending at once through\n"+
			"three such services over a failing one (%d requests each) put **%s** requests at the bottom per request\n"+
			"at the top, **%s** without the count (`go test -v -run TestFleetOverHTTP ./backoffhttp` prints the\n"+
			"figures of each run).\n", fleetClients, fleetPerClient, f[0], f[1])
	})
}

// measured checks the block name of the file at path (README.md, or a
// page of docs/), render(figures): figures measured at each run are as the
// file states them when within 0.1 of them; -update writes those of this
// run.
func measured(t *testing.T, path, name string, ratios []float64, render func(figures []string) string) {
	t.Helper()
	stated := statedFigures(t, path, name)
	figures := make([]string, len(ratios))
	for i, r := range ratios {
		if i < len(stated) && math.Abs(stated[i]-r) <= 0.1 && !golden.Updating() {
			r = stated[i]
		}
		figures[i] = strconv.FormatFloat(r, 'f', 2, 64)
	}
	golden.CheckBlock(t, path, name, []byte(render(figures)))
}

// statedFigures returns the bold numbers of the block name of the file at
// path.
func statedFigures(t *testing.T, path, name string) []float64 {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "<!-- "+name+":begin")
	j := strings.Index(s, "<!-- "+name+":end")
	if i < 0 || j < i {
		return nil
	}
	var figures []float64
	for _, m := range regexp.MustCompile(`\*\*([0-9.]+)\*\*`).FindAllStringSubmatch(s[i:j], -1) {
		f, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		figures = append(figures, f)
	}
	return figures
}
