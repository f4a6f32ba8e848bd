// Command hedgebench measures hedged HTTP requests on loopback: backoffhttp's
// Transport.Hedging (fixed and adaptive delays, with and without a
// backoff.Budget) against no hedging, cristalhq/hedgedhttp and failsafe-go's
// hedgepolicy, on one tail workload, and prints a Markdown table.
//
// The server: 98 % of requests take a lognormal time (median 2 ms, sigma
// 0.5), 2 % are stragglers, uniform in [50 ms, 200 ms]; the handler stops as
// soon as the request's context ends (a cancelled copy costs no more). The
// client: 16 goroutines in a closed loop, each sending one GET, reading and
// closing its body, and sending the next. Every configuration keeps its own
// client (connection pool, adaptive delay, budget) for the whole run, as a
// long-lived service would, and is warmed up first (not measured);
// configurations then run in interleaved rounds, so that background load
// on the machine spreads over all of them alike.
//
// Extra requests = requests the server received / requests the clients
// completed − 1, counted per configuration by a header every copy carries.
// Allocations per request are the process's (client and server: one process)
// over a configuration's phase, divided by its completed requests.
//
// A second check sends 4 KiB POSTs with an Idempotency-Key through each
// configuration, to a handler that makes half the requests slow so that
// hedges go out, and counts the bodies the server received whole.
//
// A third, the brownout, has its own server: every request slow (lognormal,
// median 8 ms, sigma 0.25) once it has one of 12 slots, queued before that,
// so that 16 client goroutines saturate it; it runs no hedging, a fixed
// 10 ms delay and the adaptive one, each alone and with a Budget of 5 %,
// one phase each, and prints the hedges sent beside the Budget's exact
// allowance over the phase.
//
// It exits with status 1 when a request or a body sent without hedging or
// through backoffhttp was lost (the peers' losses are reported, not failed),
// or when a Budget let more hedges through than its allowance.
//
// Usage (from benchmarks/): go run ./cmd/hedgebench [-n 5000] [-rounds 3]
// [-brownout 20000] (about 2.5 minutes on 2 cores); benchmarks/run puts its table in
// docs/benchmarks.md.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/backoffhttp"
	"github.com/backoffgo/backoff/hedge"
	"github.com/cristalhq/hedgedhttp"
	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/failsafe-go/failsafe-go/hedgepolicy"
)

// configHeader carries the index of the configuration that sent a request,
// so that the server counts every copy for the right one.
const configHeader = "X-Hedgebench-Config"

// postSize is the body of the POST check.
const postSize = 4096

// config is one client under test.
type config struct {
	name   string
	client *http.Client
	base   *counting
	ours   bool            // this repository's, or no hedging at all
	budget *backoff.Budget // its Retrier's, if any
}

// counting is the base RoundTripper of every configuration: a fresh
// connection pool, the same for all, with enough idle connections for 16
// goroutines and their hedges; it counts the copies that the library hands
// it and those that fail other than by being cancelled.
type counting struct {
	http.RoundTripper
	sent, failed atomic.Int64
	firstErr     atomic.Value // string: the first such failure
}

func (c *counting) RoundTrip(req *http.Request) (*http.Response, error) {
	c.sent.Add(1)
	resp, err := c.RoundTripper.RoundTrip(req)
	if err != nil && req.Context().Err() == nil {
		c.failed.Add(1)
		c.firstErr.CompareAndSwap(nil, err.Error())
	}
	return resp, err
}

func newBase() *counting {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 256
	t.MaxIdleConnsPerHost = 256
	return &counting{RoundTripper: t}
}

func must[T any](v T, err error) T {
	if err != nil {
		fmt.Fprintln(os.Stderr, "hedgebench:", err)
		os.Exit(1)
	}
	return v
}

// backoffgo returns a backoffhttp client hedging with h, whose Retrier has
// the Budget b (nil for none).
func backoffgo(name string, h *backoffhttp.Hedging, b *backoff.Budget) config {
	r := backoffhttp.DefaultRetrier()
	r.Budget = b
	base := newBase()
	return config{name, backoffhttp.NewClient(&backoffhttp.Transport{Base: base, Retrier: r, Hedging: h}), base, true, b}
}

// peer returns the configuration of a client whose Transport wrap makes
// over the base.
func peer(name string, wrap func(http.RoundTripper) http.RoundTripper) config {
	base := newBase()
	return config{name, &http.Client{Transport: wrap(base)}, base, false, nil}
}

// adaptive returns a Hedging whose delay is the (1 − load) quantile of its
// recent first copies (hedge's other defaults: a 10 s window, 100 samples).
func adaptive(load float64) *backoffhttp.Hedging {
	return &backoffhttp.Hedging{Adaptive: must(hedge.NewDelay(hedge.Config{MaxExtraLoad: load}))}
}

// budget returns a Budget that allows 5 % extra requests (and backoff's
// defaults: 10 per second whatever the traffic, a store of 100).
func budget() *backoff.Budget {
	return must(backoff.NewBudget(backoff.BudgetConfig{Ratio: 0.05}))
}

func configs() []config {
	const delay = 10 * time.Millisecond
	none := peer("no hedging", func(b http.RoundTripper) http.RoundTripper { return b })
	none.ours = true
	return []config{
		none,
		backoffgo("backoffhttp Hedging, delay 10 ms", &backoffhttp.Hedging{Delay: delay}, nil),
		backoffgo("backoffhttp adaptive, MaxExtraLoad 0.05", adaptive(0.05), nil),
		backoffgo("backoffhttp adaptive 0.05 + Budget 5 %", adaptive(0.05), budget()),
		backoffgo("backoffhttp adaptive, MaxExtraLoad 0.03", adaptive(0.03), nil),
		backoffgo("backoffhttp adaptive 0.03 + Budget 5 %", adaptive(0.03), budget()),
		peer("cristalhq/hedgedhttp v0.9.2, delay 10 ms, upto 2", func(b http.RoundTripper) http.RoundTripper {
			return must(hedgedhttp.NewRoundTripper(delay, 2, b))
		}),
		peer("failsafe-go v0.9.8 hedgepolicy, delay 10 ms", func(b http.RoundTripper) http.RoundTripper {
			return failsafehttp.NewRoundTripper(b, hedgepolicy.NewWithDelay[*http.Response](delay))
		}),
	}
}

// brownoutConfigs are the clients of the brownout, each new.
func brownoutConfigs() []config {
	none := peer("no hedging", func(b http.RoundTripper) http.RoundTripper { return b })
	none.ours = true
	const delay = 10 * time.Millisecond // below every request's time here
	return []config{
		none,
		backoffgo("backoffhttp Hedging, delay 10 ms", &backoffhttp.Hedging{Delay: delay}, nil),
		backoffgo("backoffhttp Hedging, delay 10 ms + Budget 5 %", &backoffhttp.Hedging{Delay: delay}, budget()),
		backoffgo("backoffhttp adaptive, MaxExtraLoad 0.05", adaptive(0.05), nil),
		backoffgo("backoffhttp adaptive 0.05 + Budget 5 %", adaptive(0.05), budget()),
	}
}

// server is the loopback server and what it counts.
type server struct {
	*httptest.Server
	service  func() time.Duration // a request's time, once it has a slot
	slots    chan struct{}        // nil: as many as requests; else a request waits for one, in a queue
	requests []atomic.Int64       // per configuration
	inflight atomic.Int64
	// the POST check's, per configuration
	whole, short []atomic.Int64
}

func newServer(n int, service func() time.Duration, slots int) *server {
	s := &server{service: service, requests: make([]atomic.Int64, n), whole: make([]atomic.Int64, n), short: make([]atomic.Int64, n)}
	if slots > 0 {
		s.slots = make(chan struct{}, slots)
	}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// brownoutSlots and brownoutService make the brownout's server: every
// request slow (lognormal, median 8 ms, sigma 0.25), 12 at a time, the
// others queued: at most about 1,450 requests a second, which 16 client
// goroutines in a closed loop saturate.
const brownoutSlots = 12

func brownoutService() time.Duration {
	return time.Duration(8e6 * math.Exp(0.25*rand.NormFloat64()))
}

// tail draws one latency of the workload.
func tail() time.Duration {
	if rand.Float64() < 0.02 {
		return 50*time.Millisecond + rand.N(150*time.Millisecond)
	}
	return time.Duration(2e6 * math.Exp(0.5*rand.NormFloat64()))
}

func (s *server) serve(w http.ResponseWriter, r *http.Request) {
	s.inflight.Add(1)
	defer s.inflight.Add(-1)
	i, err := strconv.Atoi(r.Header.Get(configHeader))
	if err != nil || i < 0 || i >= len(s.requests) {
		http.Error(w, "no configuration", http.StatusBadRequest)
		return
	}
	s.requests[i].Add(1)
	if s.slots != nil {
		select {
		case s.slots <- struct{}{}:
			defer func() { <-s.slots }()
		case <-r.Context().Done(): // a cancelled copy leaves the queue
			return
		}
	}
	d := s.service()
	if r.Method == http.MethodPost {
		b, err := io.ReadAll(r.Body)
		if err == nil && len(b) == postSize && bytes.Equal(b, postBody) {
			s.whole[i].Add(1)
		} else {
			s.short[i].Add(1)
		}
		// Half the POSTs are slow, so that every client hedges some.
		if rand.N(2) == 0 {
			d = 30 * time.Millisecond
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		io.WriteString(w, "ok")
	case <-r.Context().Done():
	}
}

// drain waits until the server runs no handler (the losers' cancellations
// have arrived), for at most a second, so that a phase's load and
// allocations stay its own.
func (s *server) drain() {
	for end := time.Now().Add(time.Second); s.inflight.Load() > 0 && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
}

var postBody = bytes.Repeat([]byte("0123456789abcdef"), postSize/16)

// phase sends n GETs through c with conc goroutines and returns their
// latencies, the errors, and the process's allocations.
func phase(s *server, idx int, c *http.Client, n, conc int) (lat []time.Duration, errs int, mallocs uint64) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.Mallocs
	var next atomic.Int64
	var nerr atomic.Int64
	lats := make([][]time.Duration, conc)
	var wg sync.WaitGroup
	for g := range conc {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, s.URL, nil)
				req.Header.Set(configHeader, strconv.Itoa(idx))
				start := time.Now()
				resp, err := c.Do(req)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if err == nil && resp.StatusCode != http.StatusOK {
						err = fmt.Errorf("status %d", resp.StatusCode)
					}
				}
				lats[g] = append(lats[g], time.Since(start))
				if err != nil {
					nerr.Add(1)
				}
			}
		})
	}
	wg.Wait()
	s.drain()
	runtime.ReadMemStats(&ms)
	return slices.Concat(lats...), int(nerr.Load()), ms.Mallocs - before
}

// post sends n 4 KiB POSTs with an Idempotency-Key through c, conc at a
// time, and returns how many failed at the client.
func post(s *server, idx int, c *http.Client, n, conc int) (errs int) {
	var next, nerr atomic.Int64
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for k := next.Add(1); k <= int64(n); k = next.Add(1) {
				// http.NewRequest sets GetBody for a *bytes.Reader.
				req, _ := http.NewRequest(http.MethodPost, s.URL, bytes.NewReader(postBody))
				req.Header.Set(configHeader, strconv.Itoa(idx))
				req.Header.Set("Idempotency-Key", fmt.Sprintf("%d-%d", idx, k))
				resp, err := c.Do(req)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				if err != nil || resp.StatusCode != http.StatusOK {
					nerr.Add(1)
				}
			}
		})
	}
	wg.Wait()
	s.drain()
	return int(nerr.Load())
}

// quantile returns the nearest-rank q quantile of sorted.
func quantile(sorted []time.Duration, q float64) time.Duration {
	k := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(k, 0)]
}

func ms(d time.Duration) string { return strconv.FormatFloat(d.Seconds()*1e3, 'f', 1, 64) }

func main() {
	n := flag.Int("n", 5000, "requests per configuration per round")
	rounds := flag.Int("rounds", 3, "interleaved rounds")
	conc := flag.Int("c", 16, "client goroutines")
	warm := flag.Int("warmup", 500, "requests per configuration before the first round, not measured")
	posts := flag.Int("posts", 200, "4 KiB POSTs per configuration in the body check")
	brown := flag.Int("brownout", 20000, "requests per configuration in the brownout")
	flag.Parse()

	cs := configs()
	s := newServer(len(cs), tail, 0)
	defer s.Close()

	lat := make([][]time.Duration, len(cs))
	errs := make([]int, len(cs))
	mallocs := make([]uint64, len(cs))
	for i, c := range cs {
		phase(s, i, c.client, *warm, *conc)
		s.requests[i].Store(0)
	}
	start := time.Now()
	for r := range *rounds {
		for k := range cs {
			i := (k + r) % len(cs) // each round starts one configuration later
			l, e, m := phase(s, i, cs[i].client, *n, *conc)
			lat[i] = append(lat[i], l...)
			errs[i] += e
			mallocs[i] += m
		}
	}
	took := time.Since(start)

	postErrs := make([]int, len(cs))
	postSent := make([]int64, len(cs))   // copies the library sent
	postFailed := make([]int64, len(cs)) // of which failed, not cancelled
	postAt := make([]int64, len(cs))     // copies at the server
	for i, c := range cs {
		before := s.requests[i].Load()
		sent, failed := c.base.sent.Load(), c.base.failed.Load()
		postErrs[i] = post(s, i, c.client, *posts, *conc)
		postAt[i] = s.requests[i].Load() - before
		postSent[i], postFailed[i] = c.base.sent.Load()-sent, c.base.failed.Load()-failed
		s.requests[i].Add(-postAt[i])
	}

	fmt.Printf("%d configurations × %d rounds × %d requests, %d client goroutines, %s, GOMAXPROCS %d; measured in %.0f s.\n\n",
		len(cs), *rounds, *n, *conc, runtime.Version(), runtime.GOMAXPROCS(0), took.Seconds())
	fmt.Println("| configuration | p50 ms | p99 ms | p99.9 ms | extra requests | allocs/request (client + server) | errors |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for i, c := range cs {
		l := lat[i]
		slices.Sort(l)
		done := float64(len(l))
		extra := float64(s.requests[i].Load())/done - 1
		fmt.Printf("| %s | %s | %s | %s | %.1f %% | %.0f | %d |\n", c.name,
			ms(quantile(l, 0.50)), ms(quantile(l, 0.99)), ms(quantile(l, 0.999)),
			100*extra, float64(mallocs[i])/done, errs[i])
	}
	fmt.Printf("\n%d POSTs of 4 KiB with an Idempotency-Key per configuration (half the server's answers take 30 ms):\n\n", *posts)
	fmt.Println("| configuration | copies sent | of which failed in the client's transport | copies at the server | whole bodies there | short bodies there | errors returned to the caller |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for i, c := range cs {
		fmt.Printf("| %s | %d | %d | %d | %d | %d | %d |\n", c.name, postSent[i], postFailed[i], postAt[i],
			s.whole[i].Load(), s.short[i].Load(), postErrs[i])
	}
	bad := brownout(*brown, *warm, *conc)
	for i, c := range cs {
		if e, ok := c.base.firstErr.Load().(string); ok {
			fmt.Printf("\n%s, first failure in the transport: `%s`\n", c.name, e)
		}
		// This repository's clients (and the bare one) must lose nothing:
		// the peers' failures are what the table reports.
		if !c.ours {
			continue
		}
		if errs[i] > 0 || postErrs[i] > 0 || postFailed[i] > 0 || s.short[i].Load() > 0 || c.base.failed.Load() > 0 {
			fmt.Fprintf(os.Stderr, "hedgebench: %s lost requests or bodies\n", c.name)
			bad = true
		}
	}
	if bad {
		os.Exit(1)
	}
}

// brownout runs each of brownoutConfigs, after a warm-up of warm requests,
// for one phase of n requests against the brownout's server, prints its
// table, and reports whether a request sent without hedging or through
// backoffhttp failed. A Budget's allowance over the phase is exact: the
// store at its start (Budget.Available), plus Ratio per request (each
// deposits once), plus Reserve per second of the phase; hedges sent are
// the copies the client's transport got beyond one per request, and more
// than the allowance is a failure too.
func brownout(n, warm, conc int) (bad bool) {
	cs := brownoutConfigs()
	s := newServer(len(cs), brownoutService, brownoutSlots)
	defer s.Close()
	fmt.Printf("\nBrownout: every request slow (lognormal, median 8 ms, sigma 0.25), %d served at a time and the rest queued; %d requests per configuration in one phase, %d client goroutines:\n\n", brownoutSlots, n, conc)
	fmt.Println("| configuration | p50 ms | p99 ms | p99.9 ms | extra requests at the server | hedges sent | the Budget's allowance: store at start + Ratio·requests + Reserve·seconds | errors |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for i, c := range cs {
		phase(s, i, c.client, warm, conc)
		s.requests[i].Store(0)
		sent := c.base.sent.Load()
		var store float64
		if c.budget != nil {
			store = c.budget.Available()
		}
		start := time.Now()
		l, errs, _ := phase(s, i, c.client, n, conc)
		took := time.Since(start)
		hedges := c.base.sent.Load() - sent - int64(n)
		slices.Sort(l)
		allowance := "none"
		if b := c.budget; b != nil {
			cfg := b.Config()
			total := store + cfg.Ratio*float64(n) + cfg.Reserve*took.Seconds()
			allowance = fmt.Sprintf("%.0f + %.0f + %.0f = %.0f (%.1f %%)", store, cfg.Ratio*float64(n), cfg.Reserve*took.Seconds(), total, 100*total/float64(n))
			if float64(hedges) > total {
				fmt.Fprintf(os.Stderr, "hedgebench: %s sent %d hedges, over its Budget's allowance %.0f\n", c.name, hedges, total)
				bad = true
			}
		}
		fmt.Printf("| %s | %s | %s | %s | %.1f %% | %d (%.1f %%) | %s | %d |\n", c.name,
			ms(quantile(l, 0.50)), ms(quantile(l, 0.99)), ms(quantile(l, 0.999)),
			100*(float64(s.requests[i].Load())/float64(n)-1), hedges, 100*float64(hedges)/float64(n), allowance, errs)
		if c.ours && (errs > 0 || c.base.failed.Load() > 0) {
			fmt.Fprintf(os.Stderr, "hedgebench: %s lost requests in the brownout\n", c.name)
			bad = true
		}
	}
	return bad
}
