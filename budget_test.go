package backoff

import (
	"errors"
	"math"
	"math/big"
	"strconv"
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
		{BudgetConfig{Ratio: 5e-324}, "Ratio"},
		// Half a ns per call: refused, where it was rounded up to 1 ns
		// (1e6 calls granted 1000 retries; the bound is 500).
		{BudgetConfig{Ratio: 0.0005, Reserve: 1e6}, "Ratio"},
		// 1.5 ns per call would be kept as 1, a third less.
		{BudgetConfig{Ratio: 0.0015, Reserve: 1e6}, "Ratio"},
	}
	for _, tt := range tests {
		_, err := NewBudget(tt.cfg)
		var pe *ParamError
		if !errors.As(err, &pe) || pe.Param != tt.param || !strings.Contains(err.Error(), tt.param) {
			t.Errorf("NewBudget(%+v) = %v, want a ParamError naming %s", tt.cfg, err, tt.param)
		}
	}
	_, err := NewBudget(BudgetConfig{Ratio: 1e-10, Reserve: 2.5e5})
	if want := "backoff: invalid Ratio 1e-10: is too small for Reserve 250000: a call must earn at least 1 ns of reserve time (Ratio·1e9/Reserve at least 1)"; err == nil || err.Error() != want {
		t.Errorf("tiny ratio: %v, want %q", err, want)
	}
	_, err = NewBudget(BudgetConfig{Ratio: 0.0015, Reserve: 1e6})
	if want := "backoff: invalid Ratio 0.0015: cannot be kept within 0.1 % at Reserve 1e+06: Ratio·1e9/Reserve, the ns of reserve time a call earns, must be a whole number or at least 1000"; err == nil || err.Error() != want {
		t.Errorf("inexact ratio: %v, want %q", err, want)
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
	// smallest deposit there is. A third at the defaults is kept to
	// 33333333 ns of 1e8, within 0.1 %.
	for _, cfg := range []BudgetConfig{{}, {Ratio: 1, Reserve: 1e6, Burst: 1}, {Ratio: 1e-3, Reserve: 1e-3, Burst: 1 << 20}, {Ratio: 1e-3, Reserve: 1e6}, {Ratio: 1.0 / 3}, {Ratio: 1, Reserve: 999999}} {
		if _, err := NewBudget(cfg); err != nil {
			t.Errorf("NewBudget(%+v) = %v, want success", cfg, err)
		}
	}
}

// TestBudgetExactRates: the ratio and the reserve are kept as the decimals
// written, or rounded down, never up (they were rounded to whole ns).
func TestBudgetExactRates(t *testing.T) {
	virtual := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return virtual }
	for _, tt := range []struct {
		cfg   BudgetConfig
		calls int
		want  int
	}{
		{BudgetConfig{Ratio: 0.0005, Burst: 1000}, 1_000_000, 500}, // 1000 when rounded at Reserve 1e6
		{BudgetConfig{Ratio: 0.00075, Reserve: 1e4, Burst: 1000}, 1_000_000, 750},
		{BudgetConfig{Ratio: 0.0015, Reserve: 1e5, Burst: 2000}, 1_000_000, 1500},
		{BudgetConfig{Ratio: 0.3, Burst: 1000}, 10, 3}, // 0.3 is three tenths, not the float below it
		{BudgetConfig{Ratio: 1.0 / 3, Burst: 1000}, 3, 0},
		{BudgetConfig{Ratio: 1.0 / 3, Burst: 1000}, 4, 1},
	} {
		tt.cfg.Now = clock
		b := Must(NewBudget(tt.cfg))
		drain(b)
		for range tt.calls {
			b.Deposit()
		}
		if got := drain(b); got != tt.want {
			t.Errorf("%+v: %d calls granted %d retries, want %d", tt.cfg, tt.calls, got, tt.want)
		}
	}
	// Reserve 999500.25: a second grants at most 999500 (it granted 1e6);
	// a retry is worth 1001 ns, so 999000.999 accrue.
	b := Must(NewBudget(BudgetConfig{Ratio: 1, Reserve: 999500.25, Burst: 1 << 20, Now: clock}))
	drain(b)
	virtual = virtual.Add(time.Second)
	if got := drain(b); got != 999000 {
		t.Errorf("Reserve 999500.25 granted %d in a second, want 999000 (at most 999500)", got)
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
		b := Must(NewBudget(BudgetConfig{})) // Ratio 0.1, Reserve 10/s, Burst 100
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

func TestBudgetRefusal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := Must(NewBudget(BudgetConfig{Ratio: 0.25, Reserve: 2.5, Burst: 3}))
		drain(b)
		time.Sleep(300 * time.Millisecond) // 0.75 of a retry of reserve
		err := b.Withdraw()
		if be, ok := err.(*budgetError); !errors.Is(err, ErrBudget) || !ok || be.Available != 0.75 {
			t.Fatalf("Withdraw = %v, want a refusal with 0.75 available", err)
		}
		if want := "backoff: retry budget exhausted: 0.75 of the 1 retry needed in store"; err.Error() != want {
			t.Errorf("message %q,\nwant    %q", err, want)
		}
		if got := (*budgetError)(nil).Error(); got != ErrBudget.Error() {
			t.Errorf("nil refusal: %q", got)
		}
		b.Deposit() // 0.75 + 0.25 = 1
		if err := b.Withdraw(); err != nil {
			t.Errorf("a whole retry in store was refused: %v", err)
		}
	})
}

// TestBudgetRefusalTruncates: 0.99999999 of a retry is not a whole one, and
// must not read as one (it read "1.00 of the 1 retry needed").
func TestBudgetRefusalTruncates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := Must(NewBudget(BudgetConfig{})) // a retry is 100 ms of reserve
		drain(b)
		time.Sleep(100*time.Millisecond - 1)
		err := b.Withdraw()
		if err == nil || strings.Contains(err.Error(), " 1 of") || !strings.Contains(err.Error(), ": 0.999 of the 1 retry needed") {
			t.Errorf("0.99999999 of a retry in store: %v", err)
		}
		time.Sleep(time.Nanosecond)
		if err := b.Withdraw(); err != nil {
			t.Errorf("one whole retry refused: %v", err)
		}
	})
}

// TestBudgetRefusalDoesNotAllocate: Deposit and Withdraw do not allocate,
// a refusal included.
func TestBudgetRefusalDoesNotAllocate(t *testing.T) {
	b := Must(NewBudget(BudgetConfig{Reserve: 0.001, Burst: 1}))
	drain(b)
	if n := testing.AllocsPerRun(100, func() {
		if b.Withdraw() == nil {
			t.Fatal("granted")
		}
	}); n != 0 {
		t.Errorf("a refused Withdraw allocates %v times", n)
	}
	if n := testing.AllocsPerRun(100, b.Deposit); n != 0 {
		t.Errorf("Deposit allocates %v times", n)
	}
}

// TestBudgetBoundUnderContention: 64 goroutines deposit and withdraw at once;
// the budget must allow exactly what was deposited, never a retry more.
func TestBudgetBoundUnderContention(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { // time stands still: no reserve accrues
		b := Must(NewBudget(BudgetConfig{Ratio: 0.1, Reserve: 1, Burst: 1000}))
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
		b := Must(NewBudget(BudgetConfig{Ratio: 1, Reserve: 1e-3, Burst: 1}))
		for i := range 3_000_000 {
			b.Deposit()
			if i%1_000_000 == 0 {
				time.Sleep(time.Hour)
			}
		}
		if b.Available() != 1 || b.empty.Load() < b.latest.Load()-b.full-clampMargin-b.perCall {
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
	b := Must(NewBudget(BudgetConfig{Now: func() time.Time { return virtual }}))
	if got := drain(b); got != 100 {
		t.Fatalf("drained %d, want 100", got)
	}
	virtual = virtual.Add(3 * time.Second) // 30 retries of reserve
	if got := drain(b); got != 30 {
		t.Errorf("after 3 virtual seconds: %d retries, want 30", got)
	}
	virtual = virtual.Add(-time.Hour) // a reading back counts as the latest
	if got := b.Available(); got != 0 {
		t.Errorf("after the clock went back: %v available, want 0", got)
	}
	virtual = virtual.Add(time.Hour + time.Second) // one second past the latest
	if got := drain(b); got != 10 {
		t.Errorf("a second after the latest reading: %d retries, want 10", got)
	}
}

// clockOf returns a clock that returns each of readings in turn, offsets
// from start, then the last forever.
func clockOf(start time.Time, readings ...time.Duration) func() time.Time {
	var mu sync.Mutex
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		r := readings[0]
		if len(readings) > 1 {
			readings = readings[1:]
		}
		return start.Add(r)
	}
}

// TestBudgetFarPastReading: a reading far before the budget was made (a
// zero time.Time) counts as the latest reading; it made an empty store read
// full forever (withdrawals cycled 4, 3, 2, 1, 5, 4, ...).
func TestBudgetFarPastReading(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	zero := time.Time{}.Sub(start)
	b := Must(NewBudget(BudgetConfig{Reserve: 0.001, Burst: 5, Now: clockOf(start, 0, zero)}))
	allowed := 0
	for range 100 {
		if b.Withdraw() == nil {
			allowed++
		}
	}
	if allowed != 5 || b.Available() != 0 {
		t.Errorf("100 withdrawals at the zero time allowed %d (available %v), want Burst = 5, then none", allowed, b.Available())
	}
}

// TestBudgetFarFutureReading: one reading in the year 9999 moves the
// budget's time there; it can then refill the store once (a wait that long
// would), and calls keep earning retries afterwards, while the reserve
// waits for the clock to pass it. Before, the store read 0 until 9999,
// calls or not.
func TestBudgetFarFutureReading(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	virtual := start
	b := Must(NewBudget(BudgetConfig{Now: func() time.Time { return virtual }}))
	if got := drain(b); got != 100 {
		t.Fatalf("drained %d, want 100", got)
	}
	virtual = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC) // Sub saturates
	if got := drain(b); got != 100 {
		t.Fatalf("at the far reading: %d, want a full store of 100", got)
	}
	virtual = start.Add(time.Second)
	for range 10 {
		b.Deposit()
	}
	if got := drain(b); got != 1 {
		t.Errorf("10 calls after the far reading allowed %d, want 1", got)
	}
	virtual = start.Add(time.Hour)
	if got := drain(b); got != 0 {
		t.Errorf("an hour later (before the far reading) %d more, want 0", got)
	}
}

// TestBudgetBackwardReadings: once the budget has read 10 s, readings of
// 5 s count as 10 s: a full store of 100 (no calls) grants 100 in all,
// whatever the order of the readings (it granted 150 when the readings of
// 5 s came first, as if 10 s had not been seen).
func TestBudgetBackwardReadings(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, order := range []string{"5s first", "alternating"} {
		readings := []time.Duration{0, 10 * time.Second} // NewBudget, Available
		for i := range 2000 {
			r := 5 * time.Second
			if order == "5s first" && i >= 1000 || order == "alternating" && i%2 == 0 {
				r = 10 * time.Second
			}
			readings = append(readings, r)
		}
		b := Must(NewBudget(BudgetConfig{Now: clockOf(start, readings...)}))
		b.Available()
		allowed := 0
		for range 2000 {
			if b.Withdraw() == nil {
				allowed++
			}
		}
		if allowed != 100 {
			t.Errorf("%s: readings of 10 s and 5 s granted %d, want Burst = 100", order, allowed)
		}
	}
}

// TestBudgetStaleReading: a goroutine reads the clock at 0 s, and acts only
// after another goroutine has read 100 s: it acts at 100 s, and the store
// of 10 grants 10 at that instant in all (it granted 11: the stale one's
// withdrawal was taken from a store that was full again at 100 s).
func TestBudgetStaleReading(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	virtual := start
	var b *Budget
	stale := false
	clock := func() time.Time {
		if !stale {
			return virtual
		}
		stale = false
		virtual = start.Add(100 * time.Second)
		b.Available() // another goroutine reads 100 s meanwhile
		return start
	}
	b = Must(NewBudget(BudgetConfig{Reserve: 10, Burst: 10, Now: clock}))
	stale = true
	allowed := 0
	if b.Withdraw() == nil {
		allowed++
	}
	allowed += drain(b)
	if allowed != 10 {
		t.Errorf("a stale reading and a drain at 100 s granted %d, want Burst = 10", allowed)
	}
}

// TestBudgetBoundUnderAnyClock: goroutines whose readings jump back and
// forth at random within [0, T] never get more than
// Burst + Ratio·calls + Reserve·T retries.
func TestBudgetBoundUnderAnyClock(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const span = 10 * time.Second
	var seq atomic.Uint64
	clock := func() time.Time {
		x := seq.Add(0x9e3779b97f4a7c15)
		x ^= x >> 29
		x *= 0xbf58476d1ce4e5b9
		x ^= x >> 32
		return start.Add(time.Duration(x % uint64(span+1)))
	}
	b := Must(NewBudget(BudgetConfig{Ratio: 0.1, Reserve: 10, Burst: 20, Now: clock}))
	const goroutines, callsEach = 8, 2000
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for i := range callsEach {
				if i%4 == 0 {
					b.Deposit()
				}
				if b.Withdraw() == nil {
					allowed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	bound := int64(20 + goroutines*callsEach/4/10 + 10*span/time.Second)
	if allowed.Load() > bound {
		t.Errorf("granted %d, more than the bound %d", allowed.Load(), bound)
	}
}

// TestBudgetDepositReadsNoClock: a deposit is one atomic add, and the
// clamp that brings a word far beyond full back to full reads no clock
// either (it read it at deposit 1,152,922 here).
func TestBudgetDepositReadsNoClock(t *testing.T) {
	reads := 0
	virtual := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { reads++; return virtual }
	b := Must(NewBudget(BudgetConfig{Ratio: 1, Reserve: 1e-3, Burst: 1, Now: clock}))
	reads = 0
	// 10¹² ns a deposit: the word passes 2⁶⁰ ns of margin at deposit
	// ⌊2⁶⁰/10¹²⌋ + 1, the clamp sets it to exactly full, and the 9 deposits
	// after it leave it 9 deposits beyond.
	for range clampMargin/b.perCall + 10 {
		b.Deposit()
	}
	if reads != 0 {
		t.Errorf("%d deposits, past the clamp, read the clock %d times, want 0", clampMargin/b.perCall+10, reads)
	}
	if got, want := b.empty.Load(), b.latest.Load()-b.full-9*b.perCall; got != want {
		t.Errorf("after the clamp the word is %d, want %d: full, and 9 deposits", got, want)
	}
	if got := b.Available(); got != 1 {
		t.Errorf("after the clamp the store holds %v, want it full (Burst 1)", got)
	}
}

// TestBudgetDepositsAtLargestBurstReadNoClock: at the largest Burst, a full
// store far from its clamp margin; deposits still read no clock (a floor
// computed as latest+full would clamp, and read the clock, every time).
func TestBudgetDepositsAtLargestBurstReadNoClock(t *testing.T) {
	reads := 0
	virtual := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { reads++; return virtual }
	largest := min(math.MaxInt64/4/int64(time.Second/10), int64(math.MaxInt)) // an int's limit on 32-bit
	b := Must(NewBudget(BudgetConfig{Burst: int(largest), Now: clock}))
	reads = 0
	for range 1000 {
		b.Deposit()
	}
	if reads != 0 {
		t.Errorf("1000 deposits at the largest Burst read the clock %d times, want 0", reads)
	}
}

// TestBudgetRefund: a refunded retry is back in store, and a refund never
// fills the store beyond Burst.
func TestBudgetRefund(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := Must(NewBudget(BudgetConfig{Reserve: 1, Burst: 3}))
		if first, second := b.Withdraw(), b.Withdraw(); first != nil || second != nil {
			t.Fatal("refused")
		}
		b.refund()
		if got := b.Available(); got != 2 {
			t.Errorf("after 2 withdrawals and a refund: %v, want 2", got)
		}
		time.Sleep(time.Hour) // full again
		b.refund()
		b.refund()
		if got := b.Available(); got != 3 {
			t.Errorf("refunds into a full store: %v, want Burst = 3", got)
		}
		if got := drain(b); got != 3 {
			t.Errorf("drain after refunds into a full store: %d, want 3", got)
		}
		b.refund()
		if got := drain(b); got != 1 {
			t.Errorf("drain after a refund into an empty store: %d, want 1", got)
		}
	})
}

// TestBudgetRuleAgreesWithNewBudget: NewBudget accepts a Ratio and a
// Reserve exactly when Ratio·1e9/Reserve, computed here in exact rationals
// from the decimals written, is at least 1 and a whole number or at least
// 1000. It refused {0.03, 3e5}, {0.07, 7e5} and {0.06, 6e5}, whole (100),
// while quoting the rule.
func TestBudgetRuleAgreesWithNewBudget(t *testing.T) {
	reserves := []float64{1e-3, 0.003, 0.7, 1, 3, 7, 10, 30, 333, 999, 3e3, 7e3, 1e4, 3e4, 6e4, 3e5, 6e5, 7e5, 999001, 999500.25, 1e6,
		// Many digits: 10^20 and more in the product.
		0.00100000000000001, 0.001000000001, 0.0012345678901234567, 1.00000000001, 123456.789012345}
	var ratios []float64
	for k := 1; k <= 1000; k++ {
		ratios = append(ratios, float64(k)/1000)
	}
	ratios = append(ratios, 1e-9, 1.0/3, 0.10001, 0.998004, 0.9995, 0.0005, 0.0015)
	for _, reserve := range reserves {
		for _, ratio := range ratios {
			q, _ := new(big.Rat).SetString(strconv.FormatFloat(ratio, 'g', -1, 64))
			r, _ := new(big.Rat).SetString(strconv.FormatFloat(reserve, 'g', -1, 64))
			q.Mul(q, big.NewRat(1e9, 1)).Quo(q, r)
			floor := new(big.Int).Quo(q.Num(), q.Denom())
			if got, whole := earned(ratio, reserve); !floor.IsUint64() || got != floor.Uint64() || whole != q.IsInt() {
				t.Fatalf("earned(%v, %v) = %d, %v; want ⌊%s⌋ = %s, %v", ratio, reserve, got, whole, q.FloatString(3), floor, q.IsInt())
			}
			rule := q.Cmp(big.NewRat(1, 1)) >= 0 && (q.IsInt() || q.Cmp(big.NewRat(1000, 1)) >= 0)
			b, err := NewBudget(BudgetConfig{Ratio: ratio, Reserve: reserve})
			if (err == nil) != rule {
				t.Fatalf("Ratio %v, Reserve %v (Ratio·1e9/Reserve = %s): NewBudget = %v, the rule says accept %v", ratio, reserve, q.FloatString(3), err, rule)
			}
			if err != nil {
				continue
			}
			// Kept exactly, or rounded down by less than 0.1 %: the ratio
			// as perCall/perRetry, the reserve as 1e9/perRetry.
			kept := big.NewRat(b.perCall, b.perRetry)
			want, _ := new(big.Rat).SetString(strconv.FormatFloat(ratio, 'g', -1, 64))
			if low := new(big.Rat).Quo(kept, want); low.Cmp(big.NewRat(1, 1)) > 0 || low.Cmp(big.NewRat(999, 1000)) <= 0 {
				t.Fatalf("Ratio %v, Reserve %v: kept as %s, %s of it", ratio, reserve, kept.FloatString(9), low.FloatString(6))
			}
			keptReserve := big.NewRat(1e9, b.perRetry)
			if low := new(big.Rat).Quo(keptReserve, r); low.Cmp(big.NewRat(1, 1)) > 0 || low.Cmp(big.NewRat(999, 1000)) <= 0 {
				t.Fatalf("Ratio %v, Reserve %v: Reserve kept as %s", ratio, reserve, keptReserve.FloatString(6))
			}
		}
	}
	for _, cfg := range []BudgetConfig{{Ratio: 0.03, Reserve: 3e5}, {Ratio: 0.07, Reserve: 7e5}, {Ratio: 0.06, Reserve: 6e5}} {
		if b, err := NewBudget(cfg); err != nil || b.perCall != 100 {
			t.Errorf("NewBudget(%+v) = %v; want a budget whose calls earn 100 ns", cfg, err)
		}
	}
}

// TestBudgetArithmeticEdges pins NewBudget's exact arithmetic where its
// limits lie: a call that earns exactly 1000 ns, inexactly, is accepted
// (the bound of the 0.1 % rule); the refusal below it says why in full; and
// a Reserve with many decimals (10^20 and more in the division) still gives
// a retry its exact worth.
func TestBudgetArithmeticEdges(t *testing.T) {
	b, err := NewBudget(BudgetConfig{Ratio: 0.10001, Reserve: 1e5}) // 0.10001 × 10000 ns = 1000.1 ns
	if err != nil || b.perCall != 1000 || b.perRetry != 10000 {
		t.Errorf("Ratio 0.10001 at Reserve 1e5: %v; want a budget whose calls earn 1000 ns", err)
	}
	_, err = NewBudget(BudgetConfig{Ratio: 0.1, Reserve: 999500.25})
	want := "backoff: invalid Ratio 0.1: cannot be kept within 0.1 % at Reserve 999500.25: Ratio·1e9/Reserve, the ns of reserve time a call earns, must be a whole number or at least 1000"
	if err == nil || err.Error() != want {
		t.Errorf("Ratio 0.1 at Reserve 999500.25: %v\nwant %s", err, want)
	}
	for _, tt := range []struct {
		reserve  float64
		perRetry int64
	}{
		{1.00000000001, 1e9},        // ⌈1e9/1.00000000001⌉: 10^20 in the division
		{0.00100000000000001, 1e12}, // ⌈1e12/1.00000000000001⌉, 10^26 in the division
		{3, 333333334},
	} {
		b, err := NewBudget(BudgetConfig{Reserve: tt.reserve, Ratio: 1})
		if err != nil || b.perRetry != tt.perRetry {
			t.Errorf("Reserve %v: %v, a retry worth %d ns; want %d", tt.reserve, err, b.perRetry, tt.perRetry)
		}
	}
}
