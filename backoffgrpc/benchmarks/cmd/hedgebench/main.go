// Command hedgebench measures hedged unary gRPC calls on loopback:
// backoffgrpc's ClientConfig.Hedging (a fixed and an adaptive delay, with
// and without a backoff.Budget) against the same Client without Hedging
// and failsafe-go v0.9.8's hedgepolicy through failsafegrpc, on one tail
// workload, and prints a Markdown table. It is the gRPC twin of the
// benchmarks module's cmd/hedgebench (HTTP), with the same workload.
//
// The server (grpc.health.v1 Check, one process, loopback TCP): 98 % of
// calls take a lognormal time (median 2 ms, sigma 0.5), 2 % are stragglers,
// uniform in [50 ms, 200 ms]; the handler stops as soon as the call's
// context ends. The client: 16 goroutines in a closed loop. Every
// configuration keeps its own connection (and adaptive delay, budget) for
// the whole run, is warmed up first (not measured), and the configurations
// run in interleaved rounds.
//
// Extra calls = calls the server received / calls completed − 1, counted
// per configuration by metadata every copy carries. Allocations per call
// are the process's (client and server) over a configuration's phase,
// divided by its completed calls.
//
// failsafe-go v0.9.8 passes the caller's one reply message to every copy,
// which the race detector reports: run this without -race.
//
// Usage (from backoffgrpc/benchmarks/): go run ./cmd/hedgebench [-n 5000] [-rounds 3]
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/backoffgrpc"
	"github.com/backoffgo/backoff/hedge"
	"github.com/failsafe-go/failsafe-go/failsafegrpc"
	"github.com/failsafe-go/failsafe-go/hedgepolicy"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
)

// configKey carries the index of the configuration that sent a call, so
// that the server counts every copy for the right one.
const configKey = "x-hedgebench-config"

func must[T any](v T, err error) T {
	if err != nil {
		fmt.Fprintln(os.Stderr, "hedgebench:", err)
		os.Exit(1)
	}
	return v
}

// config is one client under test: its dial options.
type config struct {
	name string
	opts []grpc.DialOption
}

// backoffgo returns a configuration of backoffgrpc's Client hedging by h
// (nil: not hedging), whose Retrier has the Budget b (nil for none).
func backoffgo(name string, h *backoffgrpc.Hedging, b *backoff.Budget) config {
	r := backoffgrpc.DefaultRetrier()
	r.Budget = b
	c := must(backoffgrpc.NewClient(backoffgrpc.ClientConfig{Retrier: r, Hedging: h}))
	return config{name, c.DialOptions()}
}

func configs() []config {
	const delay = 10 * time.Millisecond
	adaptive := func() *hedge.Delay { return must(hedge.NewDelay(hedge.Config{MaxExtraLoad: 0.05})) }
	return []config{
		backoffgo("no hedging (backoffgrpc Client)", nil, nil),
		backoffgo("backoffgrpc Hedging, delay 10 ms", &backoffgrpc.Hedging{Delay: delay}, nil),
		backoffgo("backoffgrpc adaptive, MaxExtraLoad 0.05", &backoffgrpc.Hedging{Adaptive: adaptive()}, nil),
		backoffgo("backoffgrpc adaptive 0.05 + Budget 5 %", &backoffgrpc.Hedging{Adaptive: adaptive()},
			must(backoff.NewBudget(backoff.BudgetConfig{Ratio: 0.05}))),
		{"failsafe-go v0.9.8 hedgepolicy, delay 10 ms", []grpc.DialOption{
			grpc.WithUnaryInterceptor(failsafegrpc.NewUnaryClientInterceptor[any](hedgepolicy.NewWithDelay[any](delay))),
		}},
	}
}

// server is the loopback server's health service and what it counts.
type server struct {
	healthpb.UnimplementedHealthServer
	calls    []atomic.Int64 // per configuration
	inflight atomic.Int64
}

// tail draws one latency of the workload.
func tail() time.Duration {
	if rand.Float64() < 0.02 {
		return 50*time.Millisecond + rand.N(150*time.Millisecond)
	}
	return time.Duration(2e6 * math.Exp(0.5*rand.NormFloat64()))
}

func (s *server) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	s.inflight.Add(1)
	defer s.inflight.Add(-1)
	if v := metadata.ValueFromIncomingContext(ctx, configKey); len(v) == 1 {
		if i, err := strconv.Atoi(v[0]); err == nil && i >= 0 && i < len(s.calls) {
			s.calls[i].Add(1)
		}
	}
	t := time.NewTimer(tail())
	defer t.Stop()
	select {
	case <-t.C:
		return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
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

// phase makes n calls through client with conc goroutines and returns
// their latencies, the errors (a reply not SERVING counts as one), and the
// process's allocations.
func phase(s *server, idx int, client healthpb.HealthClient, n, conc int) (lat []time.Duration, errs int, mallocs uint64) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.Mallocs
	var next, nerr atomic.Int64
	lats := make([][]time.Duration, conc)
	var wg sync.WaitGroup
	for g := range conc {
		wg.Go(func() {
			ctx := metadata.AppendToOutgoingContext(context.Background(), configKey, strconv.Itoa(idx))
			req := &healthpb.HealthCheckRequest{}
			for next.Add(1) <= int64(n) {
				start := time.Now()
				resp, err := client.Check(ctx, req)
				lats[g] = append(lats[g], time.Since(start))
				if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
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

// quantile returns the nearest-rank q quantile of sorted.
func quantile(sorted []time.Duration, q float64) time.Duration {
	k := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(k, 0)]
}

func ms(d time.Duration) string { return strconv.FormatFloat(d.Seconds()*1e3, 'f', 1, 64) }

func main() {
	n := flag.Int("n", 5000, "calls per configuration per round")
	rounds := flag.Int("rounds", 3, "interleaved rounds")
	conc := flag.Int("c", 16, "client goroutines")
	warm := flag.Int("warmup", 500, "calls per configuration before the first round, not measured")
	flag.Parse()

	cs := configs()
	s := &server{calls: make([]atomic.Int64, len(cs))}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, s)
	lis := must(net.Listen("tcp", "127.0.0.1:0"))
	go srv.Serve(lis)
	defer srv.Stop()

	clients := make([]healthpb.HealthClient, len(cs))
	for i, c := range cs {
		cc := must(grpc.NewClient(lis.Addr().String(), append(c.opts, grpc.WithTransportCredentials(insecure.NewCredentials()))...))
		defer cc.Close()
		clients[i] = healthpb.NewHealthClient(cc)
		phase(s, i, clients[i], *warm, *conc)
		s.calls[i].Store(0)
	}
	lat := make([][]time.Duration, len(cs))
	errs := make([]int, len(cs))
	mallocs := make([]uint64, len(cs))
	start := time.Now()
	for r := range *rounds {
		for k := range cs {
			i := (k + r) % len(cs) // each round starts one configuration later
			l, e, m := phase(s, i, clients[i], *n, *conc)
			lat[i] = append(lat[i], l...)
			errs[i] += e
			mallocs[i] += m
		}
	}
	fmt.Printf("%d configurations × %d rounds × %d calls, %d client goroutines, %s, GOMAXPROCS %d; measured in %.0f s.\n\n",
		len(cs), *rounds, *n, *conc, runtime.Version(), runtime.GOMAXPROCS(0), time.Since(start).Seconds())
	fmt.Println("| configuration | p50 ms | p99 ms | p99.9 ms | extra calls | allocs/call (client + server) | errors |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for i, c := range cs {
		l := lat[i]
		slices.Sort(l)
		done := float64(len(l))
		fmt.Printf("| %s | %s | %s | %s | %.1f %% | %.0f | %d |\n", c.name,
			ms(quantile(l, 0.50)), ms(quantile(l, 0.99)), ms(quantile(l, 0.999)),
			100*(float64(s.calls[i].Load())/done-1), float64(mallocs[i])/done, errs[i])
	}
}
