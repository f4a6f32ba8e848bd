package backoff

import (
	"errors"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Budget limits retries to a ratio of calls, shared by every [Do] call and
// goroutine that uses it: a call deposits Ratio of a retry, a retry
// withdraws a whole one or is refused, and Reserve retries per second accrue
// whatever the traffic, in a store of at most Burst that starts full. Over
// any interval of length T of the budget's time, it allows at most Burst +
// Ratio·calls + Reserve·T retries.
//
// The budget's time is the latest reading of its clock (time.Now, or
// BudgetConfig.Now) by any method, capped at about 146 years after
// NewBudget: an earlier reading gains nothing, and after one far ahead (the
// year 9999) the reserve accrues nothing until the clock catches up. A Budget is safe for concurrent use, the bound holds
// for any number of goroutines, and Deposit and Withdraw take no lock and
// do not allocate.
type Budget struct {
	empty    atomic.Int64 // budget time at which the store is, or was, empty (ns since epoch)
	latest   atomic.Int64 // the budget's time: its latest clock reading (ns since epoch)
	clock    func() time.Time
	epoch    time.Time
	perRetry int64 // ns of reserve time that one retry is worth
	perCall  int64 // ns deposited per call
	full     int64 // ns in a full store: Burst·perRetry
	cfg      BudgetConfig
}

// BudgetConfig holds the parameters of a [Budget]; a zero field takes its
// default, as recommended. Ratio and Reserve, read as the shortest decimals
// that print as them, are kept exactly when Ratio·1e9/Reserve and
// 1e9/Reserve are whole, and otherwise rounded down by less than 0.1 %.
type BudgetConfig struct {
	// Ratio is the share of a retry that each call earns. It must be in
	// (0, 1]; zero means 0.1. Ratio·1e9/Reserve, the nanoseconds of
	// reserve time a call earns, must be a whole number or at least 1000.
	Ratio float64

	// Reserve is the number of retries per second allowed whatever the
	// traffic. It must be in [0.001, 1e6]; zero means 10.
	Reserve float64

	// Burst is the most retries the store holds. It must be at least 1,
	// and Burst/Reserve at most 73 years; zero means 100.
	Burst int

	// Now, when not nil, is the budget's clock in place of time.Now. It
	// must be safe for concurrent use. Under testing/synctest, time.Now is
	// already the bubble's fake clock.
	Now func() time.Time
}

// ErrBudget matches a [Budget]'s refusal of a retry, with errors.Is.
var ErrBudget = errors.New("backoff: retry budget exhausted")

// budgetError is a Budget's refusal. Withdraw returns an element of
// refusals, so that a refusal does not allocate.
type budgetError struct {
	// Available is the part of a retry that was in store, truncated to
	// thousandths.
	Available float64
}

// refusals holds one refusal per thousandth of a retry in store.
var refusals = func() (r [1000]budgetError) {
	for i := range r {
		r[i].Available = float64(i) / 1000
	}
	return r
}()

func (e *budgetError) Is(target error) bool { return target == ErrBudget }

func (e *budgetError) Error() string {
	if e == nil {
		return ErrBudget.Error()
	}
	return ErrBudget.Error() + ": " + strconv.FormatFloat(e.Available, 'f', -1, 64) + " of the 1 retry needed in store"
}

// NewBudget returns a full Budget, or a *[ParamError] when a field of cfg is
// out of range.
func NewBudget(cfg BudgetConfig) (*Budget, error) {
	if cfg.Ratio == 0 {
		cfg.Ratio = 0.1
	}
	if cfg.Reserve == 0 {
		cfg.Reserve = 10
	}
	if cfg.Burst == 0 {
		cfg.Burst = 100
	}
	if !(cfg.Ratio > 0 && cfg.Ratio <= 1) { // ">= 0" is equivalent: a zero Ratio took the default
		return nil, &ParamError{Param: "Ratio", Value: cfg.Ratio, Reason: "must be in (0, 1]"}
	}
	if !(cfg.Reserve >= 1e-3 && cfg.Reserve <= 1e6) {
		return nil, &ParamError{Param: "Reserve", Value: cfg.Reserve, Reason: "must be in [0.001, 1e6] retries per second"}
	}
	// A retry is worth ⌈1e9/Reserve⌉ ns, at least 1000: rounding it up
	// slows the reserve by less than 0.1 %.
	m, e := decimal(cfg.Reserve)
	hi, lo := pow10(9 - e)
	perRetry, rem := bits.Div64(hi, lo, m)
	if rem != 0 {
		perRetry++
	}
	// A call earns ⌊Ratio·perRetry⌋ ns, which is Ratio·1e9/Reserve when
	// that is whole, and rounds down by less than 0.1 % when it is not, if
	// it is at least 1000.
	m, e = decimal(cfg.Ratio)
	hi, lo = bits.Mul64(m, perRetry)
	for ; e < 0; e++ {
		hi, lo, _ = div10(hi, lo)
	}
	perCall := int64(lo)
	if q, whole := earned(cfg.Ratio, cfg.Reserve); q < 1 {
		return nil, &ParamError{Param: "Ratio", Value: cfg.Ratio, Reason: "is too small for Reserve " + strconv.FormatFloat(cfg.Reserve, 'g', -1, 64) +
			": a call must earn at least 1 ns of reserve time (Ratio·1e9/Reserve at least 1)"}
	} else if !whole && q < 1000 {
		return nil, &ParamError{Param: "Ratio", Value: cfg.Ratio, Reason: "cannot be kept within 0.1 % at Reserve " + strconv.FormatFloat(cfg.Reserve, 'g', -1, 64) +
			": Ratio·1e9/Reserve, the ns of reserve time a call earns, must be a whole number or at least 1000"}
	}
	if cfg.Burst < 1 || int64(cfg.Burst) > math.MaxInt64/4/int64(perRetry) {
		return nil, &ParamError{Param: "Burst", Value: cfg.Burst, Reason: "must be at least 1 and Burst/Reserve at most 73 years"}
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	b := &Budget{clock: now, epoch: now(), perRetry: int64(perRetry), perCall: perCall, full: int64(cfg.Burst) * int64(perRetry), cfg: cfg}
	b.empty.Store(-b.full)
	return b, nil
}

// decimal returns m and e such that m·10^e is the shortest decimal that
// prints as x, a positive finite float64.
func decimal(x float64) (m uint64, e int) {
	mant, exp, _ := strings.Cut(strconv.FormatFloat(x, 'e', -1, 64), "e")
	digits := strings.Replace(mant, ".", "", 1)
	m, _ = strconv.ParseUint(digits, 10, 64)
	e, _ = strconv.Atoi(exp)
	return m, e - len(digits) + 1
}

// earned returns ⌊Ratio·1e9/Reserve⌋ (at most 1e12) and whether
// Ratio·1e9/Reserve is a whole number, computed exactly from the decimals
// of ratio, in (0, 1], and reserve, in [0.001, 1e6].
func earned(ratio, reserve float64) (q uint64, whole bool) {
	mr, er := decimal(ratio)
	ms, es := decimal(reserve)
	// Ratio·1e9/Reserve = mr·10^k/ms.
	k := er + 9 - es
	if k < 0 { // "k <= 0" is equivalent: at k = 0 both ways give mr/ms
		// d becomes ms·10^-k, unless it passes mr: the quotient is then 0.
		// ("d < mr" is equivalent: d = mr with k < 0 left gives 0 too.)
		d := ms
		for ; k < 0 && d <= mr; k++ {
			d *= 10 // at most mr·10 < 2^64
		}
		if k < 0 {
			return 0, false
		}
		return mr / d, mr%d == 0
	}
	hi, lo := pow10(k) // mr·10^k ≤ 1e12·ms < 2^97: the quotient fits
	hi, lo = hi*mr+mulHi(lo, mr), lo*mr
	q, rem := bits.Div64(hi%ms, lo, ms)
	return q, rem == 0
}

// mulHi returns the high 64 bits of a·b.
func mulHi(a, b uint64) uint64 {
	hi, _ := bits.Mul64(a, b)
	return hi
}

// pow10 returns 10^k, for k in [0, 38], as a 128-bit number.
func pow10(k int) (hi, lo uint64) {
	lo = 1
	for range k {
		h, l := bits.Mul64(lo, 10)
		hi, lo = hi*10+h, l
	}
	return hi, lo
}

// div10 divides the 128-bit number hi:lo by 10.
func div10(hi, lo uint64) (qhi, qlo, rem uint64) {
	qlo, rem = bits.Div64(hi%10, lo, 10)
	return hi / 10, qlo, rem
}

// clampMargin is how far beyond full the word may run before a deposit
// brings it back: far enough that the clamp, a CAS loop, is rare (over 10¹¹
// deposits apart with the defaults), near enough that the word cannot wrap.
const clampMargin = 1 << 60

// maxTime caps the budget's time (about 146 years), so that no sum of it
// and a store can wrap.
const maxTime = 1 << 62

// Config returns the budget's configuration, defaults filled in.
func (b *Budget) Config() BudgetConfig { return b.cfg }

// observe reads the clock and raises the budget's time to the reading.
func (b *Budget) observe() {
	r := min(int64(b.clock().Sub(b.epoch)), maxTime)
	for {
		t := b.latest.Load()
		if r <= t || b.latest.CompareAndSwap(t, r) { // "r < t" is equivalent: the CAS writes t again
			return
		}
	}
}

// Deposit records one call (not one attempt): it adds Ratio of a retry to
// the store, which keeps at most Burst. It does not read the clock.
func (b *Budget) Deposit() { b.add(b.perCall) }

// refund returns one retry that Withdraw granted and that was not made.
func (b *Budget) refund() { b.add(b.perRetry) }

// add adds n ns to the store. The word may run beyond full, which every
// reader caps at full; far beyond, add brings it back to exactly full at
// the budget's time, without reading the clock: a store full then is full
// at any later time.
func (b *Budget) add(n int64) {
	if b.empty.Add(-n) >= b.latest.Load()-b.full-clampMargin { // ">" is equivalent: the clamp writes full, which the word reads as already
		return
	}
	for {
		// The time is loaded after the word, as in Withdraw.
		old := b.empty.Load()
		full := b.latest.Load() - b.full
		if old >= full || b.empty.CompareAndSwap(old, full) { // "old > full" is equivalent: the CAS writes full again
			return
		}
	}
}

// Withdraw takes one retry from the store and returns nil, or returns an
// error matching [ErrBudget] and takes nothing when less than one retry is
// in store. The check and the withdrawal are one atomic step.
func (b *Budget) Withdraw() error {
	b.observe()
	for {
		// The word is loaded before the time, so that the time is at least
		// the one at which the word was written.
		old := b.empty.Load()
		now := b.latest.Load()
		stored := b.stored(now, old)
		if stored < b.perRetry {
			return &refusals[stored*1000/b.perRetry]
		}
		if b.empty.CompareAndSwap(old, now-stored+b.perRetry) {
			return nil
		}
	}
}

// Available returns the number of retries in store now, in [0, Burst].
func (b *Budget) Available() float64 {
	b.observe()
	old := b.empty.Load()
	return float64(b.stored(b.latest.Load(), old)) / float64(b.perRetry)
}

// stored returns what the store holds at now, in ns of reserve time, when
// the word says it is empty at empty: at most full, since a store fuller
// than full holds Burst. It is not negative: the word never exceeds the
// time at which it was written.
func (b *Budget) stored(now, empty int64) int64 {
	return now - max(empty, now-b.full)
}
