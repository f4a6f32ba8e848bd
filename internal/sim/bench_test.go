package sim

import (
	"testing"
	"time"

	"github.com/backoffgo/backoff"
)

// benchWorkload runs one workload per iteration and reports the events it
// simulated per second of the benchmark's elapsed time.
func benchWorkload[R any](b *testing.B, run func() ([]R, error), events func(R) int64) {
	var total int64
	start := time.Now()
	for b.Loop() {
		res, err := run()
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range res {
			total += events(r)
		}
	}
	b.ReportMetric(float64(total)/time.Since(start).Seconds(), "events/s")
}

func BenchmarkHerd(b *testing.B) {
	cfg := DefaultHerd()
	cfg.Clients, cfg.Runs = 100_000, 2
	benchWorkload(b, func() ([]HerdResult, error) { return Herd(cfg, Builtins(), 1) },
		func(r HerdResult) int64 { return r.Events })
}

func BenchmarkOutage(b *testing.B) {
	benchWorkload(b, func() ([]OutageResult, error) { return Outage(DefaultOutage(), Builtins(), 1) },
		func(r OutageResult) int64 { return r.Events })
}

func BenchmarkContention(b *testing.B) {
	cfg := DefaultContention()
	cfg.Clients = []int{100}
	benchWorkload(b, func() ([]ContentionResult, error) { return Contention(cfg, Brooker(), 1) },
		func(r ContentionResult) int64 { return r.Events })
}

// BenchmarkContentionSweep is Brooker's default sweep: N = 10..190, 100 runs,
// five policies.
func BenchmarkContentionSweep(b *testing.B) {
	cfg := DefaultContention()
	cfg.Clients = backoff.Must(Sweep(10, 190, 10))
	benchWorkload(b, func() ([]ContentionResult, error) { return Contention(cfg, Brooker(), 1) },
		func(r ContentionResult) int64 { return r.Events })
}

func BenchmarkAmplification(b *testing.B) {
	benchWorkload(b, func() ([]AmplificationResult, error) { return Amplification(DefaultAmplification(), Builtins(), 1) },
		func(r AmplificationResult) int64 { return r.Events })
}

func BenchmarkPeriodic(b *testing.B) {
	benchWorkload(b, func() ([]PeriodicResult, error) { return Periodic(DefaultPeriodic(), Builtins(), 1) },
		func(r PeriodicResult) int64 { return r.Events })
}

func BenchmarkShareFleet(b *testing.B) {
	benchWorkload(b, func() ([]ShareFleetResult, error) {
		return ShareFleet(DefaultShareFleet(), []Contender{FullJitter()}, 1)
	},
		func(r ShareFleetResult) int64 { return r.Events })
}

// BenchmarkShareFleetReplicas is the costliest row found: the most
// replicas MaxFleetMemory allows at 0.2 requests/s each (every Share
// touched at random, out of cache).
func BenchmarkShareFleetReplicas(b *testing.B) {
	cfg := DefaultShareFleet()
	cfg.Rows = []FleetRow{{Clients: 10_000, Replicas: 5800, Rate: 0.2, Outage: true}}
	benchWorkload(b, func() ([]ShareFleetResult, error) { return ShareFleet(cfg, []Contender{FullJitter()}, 1) },
		func(r ShareFleetResult) int64 { return r.Events })
}
