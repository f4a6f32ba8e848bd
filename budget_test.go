package backoff

import (
	"errors"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestNewBudgetRejectsBadParameters(t *testing.T) {
	tests := []struct {
		cfg   BudgetConfig
		param string
	}{
		{BudgetConfig{Ratio: -0.1}, "Ratio"},
		{BudgetConfig{Ratio: 1.5}, "Ratio"},
		{BudgetConfig{Ratio: math.NaN()}, "Ratio"},
		{BudgetConfig{Ratio: math.Inf(1)}, "Ratio"},
		{BudgetConfig{Reserve: -1}, "Reserve"},
		{BudgetConfig{Reserve: 2e6}, "Reserve"},
		{BudgetConfig{Reserve: 1e-4}, "Reserve"},
		{BudgetConfig{Reserve: math.NaN()}, "Reserve"},
		{BudgetConfig{Reserve: math.Inf(1)}, "Reserve"},
		{BudgetConfig{Burst: -1}, "Burst"},
		{BudgetConfig{Reserve: 0.001, Burst: math.MaxInt}, "Burst"},
		{BudgetConfig{Ratio: 1e-10, Reserve: 1e6}, "Ratio"},
	}
	for _, tt := range tests {
		_, err := NewBudget(tt.cfg)
		var pe *ParamError
		if !errors.As(err, &pe) || pe.Param != tt.param || !strings.Contains(err.Error(), tt.param) {
			t.Errorf("NewBudget(%+v) = %v, want a ParamError naming %s", tt.cfg, err, tt.param)
		}
	}
	_, err := NewBudget(BudgetConfig{Ratio: 1e-10, Reserve: 2.5e5})
	if want := "backoff: invalid Ratio 1e-10: is too small for Reserve 250000: Ratio/Reserve must be at least 1e-9 s"; err == nil || err.Error() != want {
		t.Errorf("tiny ratio: %v, want %q", err, want)
	}
	// The largest Burst: Burst/Reserve up to a quarter of int64's range in
	// ns; one more is refused.
	// (On 32-bit int every Burst fits at the default reserve.)
	var maxBurst int64 = math.MaxInt64 / 4 / int64(time.Second/10)
	if maxBurst < math.MaxInt {
		if _, err := NewBudget(BudgetConfig{Burst: int(maxBurst + 1)}); err == nil {
			t.Errorf("Burst %d accepted", maxBurst+1)
		}
		if _, err := NewBudget(BudgetConfig{Burst: int(maxBurst)}); err != nil {
			t.Errorf("Burst %d refused: %v", maxBurst, err)
		}
	}
	// Ratio 0.001 at Reserve 1e6 deposits exactly 1 ns a call: the
	// smallest deposit there is.
	for _, cfg := range []BudgetConfig{{}, {Ratio: 1, Reserve: 1e6, Burst: 1}, {Ratio: 1e-3, Reserve: 1e-3, Burst: 1 << 20}, {Ratio: 1e-3, Reserve: 1e6}} {
		if _, err := NewBudget(cfg); err != nil {
			t.Errorf("NewBudget(%+v) = %v, want success", cfg, err)
		}
	}
}

// drain withdraws until the budget refuses and returns the retries taken.
func drain(b *Budget) int {
	n := 0
	for b.Withdraw() == nil {
		n++
	}
	return n
}

// TestBudgetArithmetic follows a budget through a simulated minute under
// synctest, where time.Now is exact: every figure is the model's arithmetic.
func TestBudgetArithmetic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := Must2(NewBudget(BudgetConfig{})) // Ratio 0.1, Reserve 10/s, Burst 100
		if got := b.Available(); got != 100 {
			t.Fatalf("a new budget holds %v, want a full store of 100", got)
		}
		if c := b.Config(); c.Ratio != 0.1 || c.Reserve != 10 || c.Burst != 100 || c.Now != nil {
			t.Errorf("Config() = %+v, want the defaults filled in", c)
		}
		if got := drain(b); got != 100 {
			t.Fatalf("a new budget allowed %d retries, want 100", got)
		}
		time.Sleep(time.Second) // the reserve accrues 10 per second
		if got := drain(b); got != 10 {
			t.Errorf("after 1s: %d retries, want 10", got)
		}
		for range 50 { // 50 calls earn 5 retries
			b.Deposit()
		}
		if got := drain(b); got != 5 {
			t.Errorf("after 50 calls: %d retries, want 5", got)
		}
		// A minute of steady traffic: 100 calls a second with one retry
		// attempted per call. Each second earns 10 (reserve) + 10 (calls).
		allowed := 0
		for range 60 {
			for range 100 {
				b.Deposit()
				if b.Withdraw() == nil {
					allowed++
				}
			}
			time.Sleep(time.Second)
		}
		if allowed != 60*10+59*10 {
			// the calls of each second earn 10; the reserve of the 59 sleeps
			// between them earns 10 more each (the last sleep comes after)
			t.Errorf("a minute at 100 calls/s allowed %d retries, want %d", allowed, 60*10+59*10)
		}
		// The store fills up to Burst and no further.
		time.Sleep(time.Hour)
		for range 10000 {
			b.Deposit()
		}
		if got := b.Available(); got != 100 {
			t.Errorf("after an idle hour and 10000 calls the store holds %v, want Burst = 100", got)
		}
	})
}

// Must2 is Must for any type, for test setup.
func Must2[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestBudgetRefusal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := Must2(NewBudget(BudgetConfig{Ratio: 0.25, Reserve: 2.5, Burst: 3}))
		drain(b)
		time.Sleep(300 * time.Millisecond) // 0.75 of a retry of reserve
		err := b.Withdraw()
		var be *BudgetError
		if !errors.Is(err, ErrBudget) || !errors.As(err, &be) || be.Available != 0.75 {
			t.Fatalf("Withdraw = %v, want a BudgetError with 0.75 available", err)
		}
		want := "backoff: retry budget exhausted: 0.75 of the 1 retry needed in store (each call earns 0.25, 2.5 accrue per second, at most 3 kept)"
		if err.Error() != want {
			t.Errorf("message %q,\nwant    %q", err, want)
		}
		b.Deposit() // 0.75 + 0.25 = 1
		if err := b.Withdraw(); err != nil {
			t.Errorf("a whole retry in store was refused: %v", err)
		}
	})
}

// TestBudgetBoundUnderContention: 64 goroutines deposit and withdraw at once;
// the budget must allow exactly what was deposited, never a retry more.
func TestBudgetBoundUnderContention(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { // time stands still: no reserve accrues
		b := Must2(NewBudget(BudgetConfig{Ratio: 0.1, Reserve: 1, Burst: 1000}))
		drain(b)
		const goroutines, callsEach = 64, 1000
		var allowed atomic.Int64
		var wg sync.WaitGroup
		for range goroutines {
			wg.Go(func() {
				for range callsEach {
					b.Deposit()
					for range 3 { // three retries attempted per call
						if b.Withdraw() == nil {
							allowed.Add(1)
						}
					}
				}
			})
		}
		wg.Wait()
		allowed.Add(int64(drain(b)))
		if want := int64(goroutines * callsEach / 10); allowed.Load() != want {
			t.Errorf("%d calls at ratio 0.1 allowed %d retries, want exactly %d", goroutines*callsEach, allowed.Load(), want)
		}
	})
}

// TestBudgetDepositsNeverWrap: a client that never retries deposits forever;
// the word must be clamped back long before it could wrap.
func TestBudgetDepositsNeverWrap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 10¹² ns per call: the clamp margin (2⁶⁰ ns) is passed every
		// 1.15M deposits.
		b := Must2(NewBudget(BudgetConfig{Ratio: 1, Reserve: 1e-3, Burst: 1}))
		for i := range 3_000_000 {
			b.Deposit()
			if i%1_000_000 == 0 {
				time.Sleep(time.Hour)
			}
		}
		if now := b.now(); b.empty.Load() < now-b.full-clampMargin-b.perCall || b.Available() != 1 {
			t.Errorf("after 3M deposits: word %d, available %v; want a full store of 1", b.empty.Load(), b.Available())
		}
		if got := drain(b); got != 1 {
			t.Errorf("drain after 3M deposits allowed %d, want Burst = 1", got)
		}
	})
}

// TestBudgetClock drives a budget by a clock of the caller's, as a
// simulation in virtual time does.
func TestBudgetClock(t *testing.T) {
	virtual := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b := Must2(NewBudget(BudgetConfig{Now: func() time.Time { return virtual }}))
	if got := drain(b); got != 100 {
		t.Fatalf("drained %d, want 100", got)
	}
	virtual = virtual.Add(3 * time.Second) // 30 retries of reserve
	if got := drain(b); got != 30 {
		t.Errorf("after 3 virtual seconds: %d retries, want 30", got)
	}
	virtual = virtual.Add(-time.Hour) // a clock going back only holds less
	if got := b.Available(); got != 0 {
		t.Errorf("after the clock went back: %v available, want 0", got)
	}
}

// TestBudgetDepositReadsNoClock: a deposit is one atomic add; the clock is
// read only by Withdraw, Available and the rare clamp.
func TestBudgetDepositReadsNoClock(t *testing.T) {
	reads := 0
	virtual := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { reads++; return virtual }
	b := Must2(NewBudget(BudgetConfig{Ratio: 1, Reserve: 1e-3, Burst: 1, Now: clock}))
	reads = 0
	for range 1000 {
		b.Deposit()
	}
	if reads != 0 {
		t.Errorf("1000 deposits read the clock %d times, want 0", reads)
	}
	// 10¹² ns a deposit: 2⁶⁰ ns of margin are passed after 1.15M of them,
	// and the clamp then reads the clock once.
	deposits := 1000
	for reads == 0 && deposits < 2_000_000 {
		b.Deposit()
		deposits++
	}
	if margin := int(clampMargin / b.perCall); reads != 1 || deposits < margin || deposits > margin+2 {
		t.Errorf("the clock was first read after %d deposits (%d reads), want once after about %d", deposits, reads, margin)
	}
	if got := b.Available(); got != 1 { // right after the clamp, no deposit since
		t.Errorf("after the clamp the store holds %v, want it full (Burst 1)", got)
	}
	reads--
	for range 1000 {
		b.Deposit()
	}
	if reads != 1 {
		t.Errorf("1000 deposits after the clamp read the clock %d more times, want 0", reads-1)
	}
}
