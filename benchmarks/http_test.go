package benchmarks

// HTTP benchmarks: one request through a real local server (httptest), sent
// by a bare net/http client, by a client with backoffgo's retrying
// Transport (backoffhttp), and by hashicorp/go-retryablehttp's Client.
// Every client has its own clone of http.DefaultTransport, so connection
// pools start alike; every iteration builds its request, as a caller does,
// and reads and closes the body.

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/backoffhttp"
	retryablehttp "github.com/hashicorp/go-retryablehttp"
)

// httpClient sends one GET and returns the body it read.
type httpClient struct {
	name string
	get  func(ctx context.Context, url string) (string, error)
}

func readBody(resp *http.Response, err error) (string, error) {
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func newBase() http.RoundTripper { return http.DefaultTransport.(*http.Transport).Clone() }

// httpPolicy is backoffgo's policy in these benchmarks: waits of base=cap=1ns
// (full jitter then draws 0 or 1 ns), at most 5 attempts.
var httpPolicy = backoff.Must(backoff.NewFullJitter(backoff.Config{Base: tiny, Cap: tiny, MaxAttempts: 5}, backoff.RuntimeRng{}))

// newRetryableClient returns a retryablehttp.Client over base that matches
// httpPolicy: waits of 1ns, at most 4 retries, and no logging (its default
// logs every request).
func newRetryableClient(base http.RoundTripper) *retryablehttp.Client {
	c := retryablehttp.NewClient()
	c.HTTPClient = &http.Client{Transport: base}
	c.Logger = nil
	c.RetryWaitMin, c.RetryWaitMax, c.RetryMax = tiny, tiny, 4
	return c
}

// httpClients returns the three clients, each over its own newBase(). Retrying ones wait base=cap=1ns
// between attempts (backoffgo's full jitter then draws 0 or 1 ns), at most
// 5 attempts. bareRetries is how many failures the bare client gets past by
// hand, as the least a retry costs: it sends the request again at once,
// after draining and closing the failed response's body.
func httpClients(bareRetries int, newBase func() http.RoundTripper) []httpClient {
	bare := &http.Client{Transport: newBase()}
	ours := backoffhttp.NewClient(&backoffhttp.Transport{Base: newBase(), Retrier: &backoff.Retrier{Policy: httpPolicy}})
	hc := newRetryableClient(newBase())
	return []httpClient{
		{"bare", func(ctx context.Context, url string) (string, error) {
			for i := 0; ; i++ {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
				if err != nil {
					return "", err
				}
				resp, err := bare.Do(req)
				if err == nil && resp.StatusCode == http.StatusServiceUnavailable && i < bareRetries {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					continue
				}
				return readBody(resp, err)
			}
		}},
		{"backoffgo", func(ctx context.Context, url string) (string, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return "", err
			}
			return readBody(ours.Do(req))
		}},
		{"retryablehttp", func(ctx context.Context, url string) (string, error) {
			req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return "", err
			}
			return readBody(hc.Do(req))
		}},
	}
}

// benchHTTP runs every client against a server that answers 503 to the
// first failFirst requests of each group of failFirst+1, and "ok" to the
// last one.
func benchHTTP(b *testing.B, failFirst int) {
	var n atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%int64(failFirst+1) != 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok")
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.Start()
	defer srv.Close()
	ctx := context.Background()
	for _, c := range httpClients(failFirst, newBase) {
		b.Run("lib="+c.name, func(b *testing.B) {
			b.ReportAllocs()
			n.Store(0)
			for b.Loop() {
				body, err := c.get(ctx, srv.URL)
				if err != nil || body != "ok" {
					b.Fatalf("%q, %v", body, err)
				}
			}
		})
	}
}

// BenchmarkHTTPSuccess: a GET answered 200 at once. allocs/op counts the
// server's allocations too (it runs in the same process), alike for all.
func BenchmarkHTTPSuccess(b *testing.B) { benchHTTP(b, 0) }

// BenchmarkHTTP503Then200: a GET answered 503 (no Retry-After), then 200:
// one retry, after a wait of at most 1 ns.
func BenchmarkHTTP503Then200(b *testing.B) { benchHTTP(b, 1) }

// TestHTTPClients checks that the benchmarks' clients do what they are
// measured for: each gets past one 503 with exactly one more request.
func TestHTTPClients(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%2 == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, c := range httpClients(1, newBase) {
		n.Store(0)
		for range 3 {
			if body, err := c.get(ctx, srv.URL); err != nil || body != "ok" {
				t.Errorf("%s: %q, %v", c.name, body, err)
			}
		}
		if n.Load() != 6 {
			t.Errorf("%s: %d requests served for 3 calls; want 6", c.name, n.Load())
		}
	}
}

// memTransport is an in-memory base RoundTripper (no network, no server):
// it answers 503 to the first failFirst requests of each group of
// failFirst+1 and 200 to the last, each time with a new response without a
// body. It is used by one goroutine at a time.
type memTransport struct {
	n, failFirst int
}

func (m *memTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	m.n++
	resp := &http.Response{StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Body: http.NoBody, Request: req}
	if m.n%(m.failFirst+1) != 0 {
		resp.StatusCode, resp.Status = 503, "503 Service Unavailable"
	}
	return resp, nil
}

// benchMem runs every client over a memTransport of its own: what remains
// is the cost of each client's own code, its retry loop included.
func benchMem(b *testing.B, failFirst int) {
	var bases []*memTransport
	clients := httpClients(failFirst, func() http.RoundTripper {
		m := &memTransport{failFirst: failFirst}
		bases = append(bases, m)
		return m
	})
	ctx := context.Background()
	for i, c := range clients {
		b.Run("lib="+c.name, func(b *testing.B) {
			b.ReportAllocs()
			bases[i].n = 0
			for b.Loop() {
				if body, err := c.get(ctx, "http://backoff.invalid/"); err != nil || body != "" {
					b.Fatalf("%q, %v", body, err)
				}
			}
			if want := b.N * (failFirst + 1); bases[i].n != want {
				b.Fatalf("%d requests for %d calls; want %d", bases[i].n, b.N, want)
			}
		})
	}
}

// BenchmarkHTTPMemSuccess: BenchmarkHTTPSuccess over an in-memory base.
func BenchmarkHTTPMemSuccess(b *testing.B) { benchMem(b, 0) }

// BenchmarkHTTPMem503Then200: BenchmarkHTTP503Then200 over an in-memory base.
func BenchmarkHTTPMem503Then200(b *testing.B) { benchMem(b, 1) }

// staticTransport answers from two fixed responses without allocating: 503
// to the first failFirst requests of each group of failFirst+1, 200 to the
// last. It is used by one goroutine at a time.
type staticTransport struct {
	n, failFirst int
	ok, fail     http.Response
}

func newStaticTransport(failFirst int) *staticTransport {
	s := &staticTransport{failFirst: failFirst}
	s.ok = http.Response{StatusCode: 200, Status: "200 OK", ProtoMajor: 1, ProtoMinor: 1, Body: http.NoBody}
	s.fail = http.Response{StatusCode: 503, Status: "503 Service Unavailable", ProtoMajor: 1, ProtoMinor: 1, Body: http.NoBody}
	return s
}

func (s *staticTransport) RoundTrip(*http.Request) (*http.Response, error) {
	s.n++
	if s.n%(s.failFirst+1) != 0 {
		return &s.fail, nil
	}
	return &s.ok, nil
}

// benchRoundTrip measures RoundTrip alone, over a staticTransport, with one
// request built up front: bare is the base itself, the others wrap it
// (retryablehttp in its own RoundTripper type). What is left is each
// wrapper's own cost per call; the bare base retries nothing, so in the
// 503-then-200 case it is called twice per iteration.
func benchRoundTrip(b *testing.B, failFirst int) {
	wrappers := []struct {
		name string
		wrap func(http.RoundTripper) http.RoundTripper
	}{
		{"bare", func(base http.RoundTripper) http.RoundTripper { return base }},
		{"backoffgo", func(base http.RoundTripper) http.RoundTripper {
			return &backoffhttp.Transport{Base: base, Retrier: &backoff.Retrier{Policy: httpPolicy}}
		}},
		{"retryablehttp", func(base http.RoundTripper) http.RoundTripper {
			return &retryablehttp.RoundTripper{Client: newRetryableClient(base)}
		}},
	}
	req, err := http.NewRequest(http.MethodGet, "http://backoff.invalid/", nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, w := range wrappers {
		b.Run("lib="+w.name, func(b *testing.B) {
			b.ReportAllocs()
			base := newStaticTransport(failFirst)
			rt := w.wrap(base)
			calls := 1
			if w.name == "bare" {
				calls = failFirst + 1
			}
			for b.Loop() {
				for range calls {
					resp, err := rt.RoundTrip(req)
					if err != nil {
						b.Fatal(err)
					}
					resp.Body.Close()
				}
			}
			if base.n != b.N*(failFirst+1) {
				b.Fatalf("%d requests for %d calls", base.n, b.N)
			}
		})
	}
}

// BenchmarkHTTPRoundTripSuccess: RoundTrip of a request answered 200.
func BenchmarkHTTPRoundTripSuccess(b *testing.B) { benchRoundTrip(b, 0) }

// BenchmarkHTTPRoundTrip503Then200: RoundTrip of a request answered 503,
// then 200.
func BenchmarkHTTPRoundTrip503Then200(b *testing.B) { benchRoundTrip(b, 1) }
