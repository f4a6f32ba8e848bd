package backoffhttp

import (
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/retryshare"
)

// The share on loopback: real servers, real Transports, the Handler's
// default route (the ServeMux pattern) and caller (the connection).

// threeQuick is a policy of 3 attempts, full jitter of at most 1 ms.
var threeQuick = backoff.Must(backoff.NewFullJitter(backoff.Config{Base: time.Millisecond, Cap: time.Millisecond, MaxAttempts: 3}, backoff.RuntimeRng{}))

// get sends a GET of url through rt and returns the response's status and
// whether it says not to retry.
func get(t *testing.T, rt http.RoundTripper, url string, header ...string) (int, bool) {
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Error(err)
		return 0, false
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Error(err)
		return 0, false
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, saysTrue(resp.Header[DontRetryHeader])
}

// TestShareRoutesLoopback: one Handler around a ServeMux whose /ok is busy
// and healthy (100 requests for each of /fail) and whose /fail always
// fails, through a Transport of 3 attempts: /fail's retries are counted in
// a window of its own, so it makes about 1/(1-Threshold) calls per request
// (with one window for the whole mux, /fail's retries were under 2 % of
// its requests: 3 calls).
func TestShareRoutesLoopback(t *testing.T) {
	const goroutines, rounds, okPerFail = 4, 50, 100
	share := backoff.Must(retryshare.New(retryshare.Config{Window: 5 * time.Second}))
	var okCalls, failCalls atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ok", func(w http.ResponseWriter, r *http.Request) { okCalls.Add(1) })
	mux.HandleFunc("GET /fail", func(w http.ResponseWriter, r *http.Request) {
		failCalls.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	srv := httptest.NewServer(Handler(mux, ServerConfig{Share: share}))
	defer srv.Close()
	tr := &Transport{Base: &http.Transport{MaxIdleConnsPerHost: goroutines}, Retrier: retrier(threeQuick)}
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range rounds {
				for range okPerFail {
					get(t, tr, srv.URL+"/ok")
				}
				get(t, tr, srv.URL+"/fail")
			}
		})
	}
	wg.Wait()
	requests := goroutines * rounds
	perRequest := float64(failCalls.Load()) / float64(requests)
	t.Logf("routes: %d requests to /fail beside %d to /ok: %.3f calls per /fail request", requests, okCalls.Load(), perRequest)
	if perRequest > 1.3 {
		t.Errorf("%.3f calls per /fail request, want about 1.1, at most 1.3", perRequest)
	}
}

// TestShareHerdLoopback: 3 bursts of 500 simultaneous requests through a
// Transport (3 attempts, full jitter of 100 ms base) to a Handler that
// always fails, each burst a window after the last: every failing answer
// of a burst is sent before its retries arrive, and is counted as a retry
// on its way, so that about Threshold of them are retried.
func TestShareHerdLoopback(t *testing.T) {
	const bursts, size, window = 3, 500, time.Second
	share := backoff.Must(retryshare.New(retryshare.Config{Window: window}))
	var calls atomic.Int64
	srv := httptest.NewServer(Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}), ServerConfig{Share: share}))
	defer srv.Close()
	jitter := backoff.Must(backoff.NewFullJitter(backoff.Config{Base: 100 * time.Millisecond, Cap: time.Second, MaxAttempts: 3}, backoff.RuntimeRng{}))
	base := &http.Transport{MaxIdleConns: 2 * size, MaxIdleConnsPerHost: 2 * size}
	defer base.CloseIdleConnections()
	tr := &Transport{Base: base, Retrier: retrier(jitter)}
	for b := range bursts {
		if b > 0 {
			time.Sleep(window + window/10) // the last burst's answers have left the window
		}
		start := make(chan struct{})
		var wg sync.WaitGroup
		for range size {
			wg.Go(func() {
				<-start
				get(t, tr, srv.URL)
			})
		}
		close(start)
		wg.Wait()
	}
	perRequest := float64(calls.Load()) / (bursts * size)
	t.Logf("herd: %d bursts of %d requests: %.3f calls per request", bursts, size, perRequest)
	if perRequest > 1.2 {
		t.Errorf("%.3f calls per request, want at most 1.2", perRequest)
	}
}

// TestShareLiarLoopback: honest callers, through a Transport of 3
// attempts, meet 5 % of random 503s, which they retry; a liar, on a
// connection of its own, sends plain GETs saying X-Envoy-Attempt-Count: 2,
// 35 % of the requests. The route is over by its retries, but only the
// liar's slots are: its "retries" are refused as they arrive and its
// failing answers say not to retry, the honest callers' do not, and they
// keep at least 99.9 % of successes.
func TestShareLiarLoopback(t *testing.T) {
	const jobs, workers, failRate = 20000, 4, 0.05
	share := backoff.Must(retryshare.New(retryshare.Config{Window: 5 * time.Second}))
	var arrived, served atomic.Int64
	handler := Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		if rand.Float64() < failRate {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}), ServerConfig{Share: share})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Add(1)
		handler.ServeHTTP(w, r)
	}))
	defer srv.Close()
	honestBase := &http.Transport{MaxConnsPerHost: 2, MaxIdleConnsPerHost: 2}
	liar := &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1}
	defer honestBase.CloseIdleConnections()
	defer liar.CloseIdleConnections()
	honest := &Transport{Base: honestBase, Retrier: retrier(threeQuick)}
	var honestN, honestOK, honestRefused, liarN, liarFailed, liarRefused atomic.Int64
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				if i%20 < 7 { // 35 %
					liarN.Add(1)
					code, refused := get(t, liar, srv.URL, AttemptCountHeader, "2")
					if code != http.StatusOK {
						liarFailed.Add(1)
						if refused {
							liarRefused.Add(1)
						}
					}
					continue
				}
				honestN.Add(1)
				switch code, refused := get(t, honest, srv.URL); {
				case code == http.StatusOK:
					honestOK.Add(1)
				case refused:
					honestRefused.Add(1)
				}
			}
		})
	}
	for i := range jobs {
		next <- i
	}
	close(next)
	wg.Wait()
	success := float64(honestOK.Load()) / float64(honestN.Load())
	liarShare := float64(liarN.Load()) / float64(arrived.Load())
	refused := float64(liarRefused.Load()) / float64(liarFailed.Load())
	shed := arrived.Load() - served.Load()
	t.Logf("liar: %.1f %% of %d requests arrived, %d refused at arrival; honest success %.4f %% of %d requests (%d failures told not to retry); the liar's failing answers refused: %d of %d",
		100*liarShare, arrived.Load(), shed, 100*success, honestN.Load(), honestRefused.Load(), liarRefused.Load(), liarFailed.Load())
	if shed > liarN.Load() || shed < liarN.Load()*9/10 {
		t.Errorf("%d requests refused at arrival, want at least 90 %% of the liar's %d and no more", shed, liarN.Load())
	}
	if success < 0.999 {
		t.Errorf("honest callers succeeded on %.4f %% of their requests, want at least 99.9 %%", 100*success)
	}
	if liarShare < 0.3 || liarShare > 0.4 {
		t.Errorf("the liar sent %.1f %% of the requests, want about 35 %%", 100*liarShare)
	}
	if liarFailed.Load() < 10 || refused < 0.9 {
		t.Errorf("%d of the liar's %d failing answers said not to retry, want at least 90 %%", liarRefused.Load(), liarFailed.Load())
	}
}
