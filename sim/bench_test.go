package sim

import (
	"testing"
	"time"
)

// report reports events per second over the benchmark's elapsed time.
func report(b *testing.B, events int64, start time.Time) {
	b.ReportMetric(float64(events)/time.Since(start).Seconds(), "events/s")
}

func BenchmarkHerd(b *testing.B) {
	cfg := DefaultHerd()
	cfg.Clients, cfg.Runs = 100_000, 2
	var events int64
	start := time.Now()
	for b.Loop() {
		res, err := Herd(cfg, Builtins(), 1)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range res {
			events += r.Events
		}
	}
	report(b, events, start)
}

func BenchmarkOutage(b *testing.B) {
	var events int64
	start := time.Now()
	for b.Loop() {
		res, err := Outage(DefaultOutage(), Builtins(), 1)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range res {
			events += r.Events
		}
	}
	report(b, events, start)
}

func BenchmarkContention(b *testing.B) {
	cfg := DefaultContention()
	cfg.Clients = []int{100}
	var events int64
	start := time.Now()
	for b.Loop() {
		res, err := Contention(cfg, Brooker(), 1)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range res {
			events += r.Events
		}
	}
	report(b, events, start)
}

// BenchmarkContentionSweep is Brooker's default sweep: N = 10..190, 100 runs,
// five policies.
func BenchmarkContentionSweep(b *testing.B) {
	cfg := DefaultContention()
	cfg.Clients = Sweep(10, 190, 10)
	var events int64
	start := time.Now()
	for b.Loop() {
		res, err := Contention(cfg, Brooker(), 1)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range res {
			events += r.Events
		}
	}
	report(b, events, start)
}

func BenchmarkAmplification(b *testing.B) {
	var events int64
	start := time.Now()
	for b.Loop() {
		res, err := Amplification(DefaultAmplification(), Builtins(), 1)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range res {
			events += r.Events
		}
	}
	report(b, events, start)
}

func BenchmarkPeriodic(b *testing.B) {
	var events int64
	start := time.Now()
	for b.Loop() {
		res, err := Periodic(DefaultPeriodic(), Builtins(), 1)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range res {
			events += r.Events
		}
	}
	report(b, events, start)
}
