package sim

import (
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/backoffgo/backoff/internal/race"

	"github.com/backoffgo/backoff"
)

// FuzzWorkloads runs every workload on small configurations built from the
// fuzzer's numbers and checks that it either refuses them with an error or
// returns results whose invariants hold.
func FuzzWorkloads(f *testing.F) {
	f.Add(uint8(0), int64(3), int64(2), int64(int64(time.Millisecond)), int64(int64(10*time.Millisecond)), int64(4), int64(1))
	f.Add(uint8(1), int64(5), int64(1), int64(1), int64(1), int64(-1), int64(0))
	f.Add(uint8(2), int64(4), int64(2), int64(int64(time.Millisecond)), int64(int64(time.Second)), int64(-1), int64(3))
	f.Add(uint8(3), int64(2), int64(3), int64(0), int64(1<<62), int64(2), int64(2))
	f.Add(uint8(4), int64(7), int64(1), int64(int64(time.Second)), int64(int64(time.Minute)), int64(1), int64(1))
	f.Fuzz(func(t *testing.T, kind uint8, a, b, base, cap, attempts, extra int64) {
		small := func(v int64, hi int64) int { return int(v % hi) } // may be negative: the workload must refuse it
		pol := backoff.Config{Base: time.Duration(base), Cap: time.Duration(cap), MaxAttempts: small(attempts, 12)}
		cs := All()
		switch kind % 5 {
		case 0:
			cfg := HerdConfig{Clients: small(a, 50), Runs: small(b, 4), Window: time.Duration(extra) * time.Millisecond, Policy: pol}
			res, err := Herd(cfg, cs, uint64(extra))
			if err != nil {
				return
			}
			for _, r := range res {
				if r.PeakShare < 0 || r.PeakShare > 1 || r.Retries < 0 || r.Events < int64(cfg.Clients*cfg.Runs) {
					t.Errorf("herd %+v: %s: share %v, retries %v, events %d", cfg, r.Policy, r.PeakShare, r.Retries, r.Events)
				}
				var sum int64
				for _, n := range r.Series {
					sum += n
				}
				if len(r.PeakShares) != cfg.Runs || (cfg.Runs == 1 && float64(sum) != r.Retries) {
					t.Errorf("herd %+v: %s: %d shares, series sum %d, retries %v", cfg, r.Policy, len(r.PeakShares), sum, r.Retries)
				}
			}
		case 1:
			cfg := OutageConfig{Clients: small(a, 50), Runs: small(b, 4), Outage: time.Duration(extra), Policy: pol}
			res, err := Outage(cfg, cs, 1)
			if err != nil {
				return
			}
			for _, r := range res {
				if r.SuccessRate < 0 || r.SuccessRate > 1 || r.CallsPerClient < 1 || r.Events < int64(cfg.Clients*cfg.Runs) {
					t.Errorf("outage %+v: %s: rate %v, calls/client %v", cfg, r.Policy, r.SuccessRate, r.CallsPerClient)
				}
			}
		case 2:
			cfg := ContentionConfig{Clients: []int{small(a, 30), small(extra, 30)}, Runs: small(b, 3), NetMean: time.Duration(base % int64(time.Second)), NetSD: time.Duration(extra), Policy: pol}
			res, err := Contention(cfg, cs, 1)
			if err != nil {
				return
			}
			for _, r := range res {
				for _, p := range r.Points {
					if p.Time < 0 || p.Calls < float64(p.Clients)-p.GaveUp || p.GaveUp < 0 || p.GaveUp > float64(p.Clients) {
						t.Errorf("contention %+v: %s: %+v", cfg, r.Policy, p)
					}
				}
			}
		case 3:
			cfg := AmplificationConfig{Layers: small(a, 6), Requests: small(b, 4), RetryLayer: small(extra, 6), CallLatency: time.Duration(extra), Policy: pol}
			res, err := Amplification(cfg, cs, 1)
			if err != nil {
				return
			}
			for _, r := range res {
				if r.EveryLayer.BottomCalls < 1 || r.OneLayer.BottomCalls < 1 || r.EveryLayer.TotalCalls < float64(cfg.Layers+1) ||
					r.EveryLayer.TimeToFail < 0 || r.OneLayer.TimeToFail < 0 || r.EveryLayer.BottomCalls < r.OneLayer.BottomCalls {
					t.Errorf("amplification %+v: %s: %+v", cfg, r.Policy, r)
				}
			}
		case 4:
			cfg := PeriodicConfig{Jobs: small(a, 50), Runs: small(b, 3), Interval: time.Duration(base), Horizon: time.Duration(cap), Bucket: time.Duration(extra)}
			res, err := Periodic(cfg, cs, 1)
			if err != nil {
				return
			}
			for _, r := range res {
				if r.Peak < 1 || r.Peak > float64(cfg.Jobs)*float64(cfg.executions()) || r.Events != int64(cfg.Jobs)*cfg.executions()*int64(cfg.Runs) {
					t.Errorf("periodic %+v: %s: %+v", cfg, r.Policy, r)
				}
			}
		}
	})
}

// TestMemoryBound checks the package doc's memory bound for Herd: the
// bytes allocated do not grow with clients or runs, beyond a little per
// run, because only the first run's series is kept.
func TestMemoryBound(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector allocates on its own")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	alloc := func(clients, runs int) uint64 {
		cfg := DefaultHerd()
		cfg.Clients, cfg.Runs, cfg.Window = clients, runs, time.Millisecond // 12,710 windows of 8 bytes for exponential
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if _, err := Herd(cfg, []Contender{Exponential(), NoBackoff()}, 1); err != nil { // series lengths that do not depend on the draws
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	// Two runs: each policy's reported series, and the worker's scratch.
	base := alloc(10, 2)
	const perRun = 2048 // streams, policy, closures: far below one series
	for _, tt := range []struct{ clients, runs int }{{10_000, 2}, {10, 50}, {2_000, 50}} {
		got := alloc(tt.clients, tt.runs)
		if limit := base + uint64(tt.runs)*2*perRun; got > limit {
			t.Errorf("%d clients, %d runs: %d bytes allocated, want at most %d (%d at 10 clients, 2 runs)", tt.clients, tt.runs, got, limit, base)
		}
	}
	if base < 12_710*8 {
		t.Errorf("%d bytes allocated for one run: less than its series; the test measures nothing", base)
	}
}

// TestProgress checks the progress reports under a fake clock: a policy
// that sleeps makes the workload run for virtual seconds, during which
// reports arrive about every ProgressInterval, Done never decreases, the
// last report has Done == Total, and none arrives after the workload
// returned.
func TestProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow := policyOf("slow", func(attempt int, _ error) (time.Duration, error) {
			time.Sleep(100 * time.Millisecond)
			if attempt >= 4 {
				return 0, backoff.ErrExhausted
			}
			return time.Millisecond, nil
		})
		var mu sync.Mutex
		var reports []Progress
		returned := false
		cfg := DefaultHerd()
		cfg.Clients, cfg.Runs = 10, 3
		cfg.Policy.MaxAttempts = 4
		cfg.Progress = func(p Progress) {
			mu.Lock()
			defer mu.Unlock()
			if returned {
				t.Error("progress reported after Herd returned")
			}
			reports = append(reports, p)
		}
		start := time.Now()
		if _, err := Herd(cfg, []Contender{slow, FullJitter()}, 1); err != nil {
			t.Fatal(err)
		}
		elapsed := time.Since(start)
		mu.Lock()
		returned = true
		got := reports
		mu.Unlock()
		synctest.Wait()
		if len(got) < 2 {
			t.Fatalf("%d reports over %v", len(got), elapsed)
		}
		if want := int(elapsed/ProgressInterval) + 1; len(got) < want-1 || len(got) > want+1 {
			t.Errorf("%d reports over %v, want about %d", len(got), elapsed, want)
		}
		total := int64(2 * 10 * 3)
		for i, p := range got {
			if p.Workload != "herd" || p.Total != total || p.Done < 0 || p.Done > total || (i > 0 && p.Done < got[i-1].Done) {
				t.Errorf("report %d: %+v", i, p)
			}
			if p.Policy != "slow" && p.Policy != "full-jitter" {
				t.Errorf("report %d names policy %q", i, p.Policy)
			}
		}
		if last := got[len(got)-1]; last.Done != total {
			t.Errorf("last report %+v, want Done == Total", last)
		}
		if mid := got[len(got)/2]; mid.Done == 0 || mid.Done == total {
			t.Errorf("a report half-way through: %+v, want part done", mid)
		}
	})
}

// TestProgressTotals checks every workload's last report: Done, which the
// runs advance as they go, adds up to Total, the work in the workload's
// units.
func TestProgressTotals(t *testing.T) {
	h, o, c, a, p := small()
	cs := []Contender{FullJitter(), NoBackoff()}
	var last Progress
	n := 0
	rec := func(r Progress) { last = r; n++ }
	h.Clients = 3000 // more than one chunk of progress
	h.Progress, o.Progress, c.Progress, a.Progress, p.Progress = rec, rec, rec, rec, rec
	p.Jobs = 700
	r := DefaultRecovery()
	r.Clients, r.Runs, r.Progress = 1500, 2, rec
	b := DefaultBudgetAmplification()
	b.Rates, b.Progress = []float64{1, 2}, rec // 80 and 160 requests over Warmup+Span = 80 s
	ob := DefaultOutageBudget()
	ob.Clients, ob.Runs, ob.Progress = 20, 2, rec
	ss := smallShare()
	ss.Progress = rec
	ov := smallOverload()
	ov.Progress = rec
	var ovTotal int64 // the requests each row's estimate bounds, per policy
	for _, r := range ov.Rows {
		ovTotal += int64(ov.requests(r)) * int64(len(ov.Policies))
	}
	tests := []struct {
		cfg   any
		total int64
	}{
		{h, 2 * 3000 * 2},
		{o, 2 * 20 * 2},
		{c, 2 * (10*10 + 30*30) * 2},
		{a, 2 * 5 * 2}, // 3 simulated stacks and 2 of the library's nested Do
		{p, 2 * 700 * 2},
		{r, 2 * 1500 * 2},
		{b, 2 * 4 * (80 + 160)}, // 4 variants
		{ob, 2 * 20 * 2},
		{ss, 2 * 2 * ((100 + 40) + (102 + 60))}, // both variants; the healthy span a whole number per client
		{ov, ovTotal},
	}
	for _, tt := range tests {
		n = 0
		if err := runAny(tt.cfg, cs); err != nil {
			t.Fatal(err)
		}
		if n == 0 || last.Done != tt.total || last.Total != tt.total {
			t.Errorf("%T: %d reports, last %+v; want Done = Total = %d", tt.cfg, n, last, tt.total)
		}
	}
}
