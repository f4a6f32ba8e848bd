package backoff

import (
	"errors"
	"math"
	"strconv"
	"sync/atomic"
	"time"
)

// Budget limits retries to a ratio of calls, shared by every [Do] call (and
// every goroutine) that uses it, so that a fleet of correct retriers cannot
// multiply an outage: with the default ratio of 0.1, each layer of a call
// stack adds at most 10 % to the load it passes down, plus the reserve,
// instead of multiplying it by the number of attempts. At rates of calls
// well above Reserve/Ratio per second (100 with the defaults) the ratio
// sets the bound; below, the reserve does.
//
// The model is Finagle's RetryBudget, itself the retry budget of Google's SRE
// book ("Handling Overload"): every call deposits Ratio of a retry, every
// retry withdraws one whole retry and is refused when less than one is in
// store, and a reserve of Reserve retries per second accrues whatever the
// traffic, so a client that makes few calls can still retry now and then.
// What is in store never exceeds Burst retries, which bounds what a long
// healthy spell can save up for the next outage; a new Budget starts full.
// Over any interval of length T, a budget therefore allows at most
// Burst + Ratio·calls + Reserve·T retries. This model is chosen over gRPC's
// token bucket (gRFC A6), which is refilled only by successes and so never
// lets a client whose dependency stays down retry again, and over a pure
// ratio, which starves a quiet client.
//
// Only retries withdraw: first calls, and nothing else, deposit. Deposit and
// Withdraw take no lock and do not allocate: the whole state is one atomic
// word, the instant at which the store would be empty, on the budget's
// clock: time.Now unless BudgetConfig.Now says otherwise, so tests under
// testing/synctest see exact arithmetic. A Budget is safe for concurrent
// use; the bound holds exactly however many goroutines share it.
type Budget struct {
	empty    atomic.Int64 // ns since epoch at which the store is (or was) empty
	floor    atomic.Int64 // below this, Deposit clamps empty (see Deposit)
	clock    func() time.Time
	epoch    time.Time
	perRetry int64 // ns of reserve time that one retry is worth
	perCall  int64 // ns deposited per call: Ratio·perRetry
	full     int64 // ns in a full store: Burst·perRetry
	cfg      BudgetConfig
}

// BudgetConfig holds the parameters of a [Budget]. A zero field takes its
// default, so BudgetConfig{} is the recommended configuration.
type BudgetConfig struct {
	// Ratio is the share of a retry that each call earns: retries are
	// allowed while they stay within Ratio of the calls made. It must be
	// in (0, 1]; zero means 0.1, the SRE book's 10 %.
	Ratio float64

	// Reserve is the number of retries per second allowed whatever the
	// traffic. It must be in [0.001, 1e6]; zero means 10, Finagle's
	// default.
	Reserve float64

	// Burst is the most retries the budget holds in store, from deposits
	// and reserve together. It must be at least 1; zero means 100, ten
	// seconds of the default reserve (Finagle keeps deposits for 10 s).
	Burst int

	// Now, when not nil, is the budget's clock in place of time.Now, for a
	// simulation in virtual time. It must be safe for concurrent use and
	// should not go backwards: a clock that does only makes the budget
	// more cautious (a store read at an earlier time holds less). Tests
	// need no clock of their own: under testing/synctest, time.Now is the
	// bubble's fake clock.
	Now func() time.Time
}

// ErrBudget is the reason [Do] stops when a [Loop]'s [Budget] refuses a
// retry. The error Do returns matches it with errors.Is; the reason itself
// is a *[BudgetError] that says what was in store.
var ErrBudget = errors.New("backoff: retry budget exhausted")

// BudgetError is a [Budget]'s refusal of a retry.
type BudgetError struct {
	// Available is the part of a retry that was in store (less than 1).
	Available float64
	// Config is the budget's configuration, defaults filled in.
	Config BudgetConfig
}

// Is reports whether target is [ErrBudget].
func (e *BudgetError) Is(target error) bool { return target == ErrBudget }

func (e *BudgetError) Error() string {
	if e == nil {
		return ErrBudget.Error()
	}
	return ErrBudget.Error() + ": " + strconv.FormatFloat(e.Available, 'f', 2, 64) +
		" of the 1 retry needed in store (each call earns " + strconv.FormatFloat(e.Config.Ratio, 'g', -1, 64) +
		", " + strconv.FormatFloat(e.Config.Reserve, 'g', -1, 64) + " accrue per second, at most " +
		strconv.Itoa(e.Config.Burst) + " kept)"
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
	// (>= for > is an equivalent mutant: a zero Ratio took the default.)
	if !(cfg.Ratio > 0 && cfg.Ratio <= 1) {
		return nil, &ParamError{Param: "Ratio", Value: cfg.Ratio, Reason: "must be in (0, 1]"}
	}
	if !(cfg.Reserve >= 1e-3 && cfg.Reserve <= 1e6) {
		return nil, &ParamError{Param: "Reserve", Value: cfg.Reserve, Reason: "must be in [0.001, 1e6] retries per second"}
	}
	perRetry := int64(math.Round(float64(time.Second) / cfg.Reserve))
	perCall := int64(math.Round(cfg.Ratio * float64(perRetry)))
	if perCall < 1 {
		return nil, &ParamError{Param: "Ratio", Value: cfg.Ratio, Reason: "is too small for Reserve " + strconv.FormatFloat(cfg.Reserve, 'g', -1, 64) + ": Ratio/Reserve must be at least 1e-9 s"}
	}
	if cfg.Burst < 1 || int64(cfg.Burst) > math.MaxInt64/4/perRetry {
		return nil, &ParamError{Param: "Burst", Value: cfg.Burst, Reason: "must be at least 1 and Burst/Reserve at most 73 years"}
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	b := &Budget{clock: now, epoch: now(), perRetry: perRetry, perCall: perCall, full: int64(cfg.Burst) * perRetry, cfg: cfg}
	b.empty.Store(-b.full)
	b.floor.Store(-b.full - clampMargin)
	return b, nil
}

// clampMargin is how far below "full now" Deposit lets the word run before
// it clamps it back: far enough that the clamp, which reads the clock, is
// rare (over 10¹¹ deposits apart with the defaults), near enough that the
// word cannot wrap (the rest of int64's range is over 2⁶² ns).
const clampMargin = 1 << 60

// Config returns the budget's configuration, defaults filled in.
func (b *Budget) Config() BudgetConfig { return b.cfg }

// now returns the monotonic time since the budget was made, in ns.
func (b *Budget) now() int64 { return int64(b.clock().Sub(b.epoch)) }

// Deposit records one call: it adds Ratio of a retry to the store. [Do]
// calls it once per call given a [Loop] with this budget; a loop of the
// user's own calls it once per logical call, not per attempt.
func (b *Budget) Deposit() {
	// (> for >= is an equivalent mutant: it clamps one deposit sooner.)
	if b.empty.Add(-b.perCall) >= b.floor.Load() {
		return
	}
	// The store is far over full; bring the word back to "exactly full
	// now" before it could ever wrap.
	now := b.now()
	// Equivalent mutants here (a floor a few Burst higher or lower) only
	// change how often this clamp runs, not what the budget allows.
	b.floor.Store(now - b.full - clampMargin)
	for {
		// The first test only spares a CAS when another goroutine has
		// clamped already: mutants of it (> for >=, now+full) are
		// equivalent, since the CAS then writes the same value.
		old := b.empty.Load()
		if old >= now-b.full || b.empty.CompareAndSwap(old, now-b.full) {
			return
		}
	}
}

// Withdraw takes one retry from the store and returns nil, or returns a
// *[BudgetError] (matching [ErrBudget]) and takes nothing when less than one
// retry is in store. The check and the withdrawal are one atomic step.
func (b *Budget) Withdraw() error {
	now := b.now()
	for {
		old := b.empty.Load()
		stored := b.stored(now, old)
		if stored < b.perRetry {
			return &BudgetError{Available: float64(stored) / float64(b.perRetry), Config: b.cfg}
		}
		if b.empty.CompareAndSwap(old, now-stored+b.perRetry) {
			return nil
		}
	}
}

// Available returns the number of retries in store now, between 0 and
// Burst. It is a snapshot: another goroutine may change it at once.
func (b *Budget) Available() float64 {
	return float64(b.stored(b.now(), b.empty.Load())) / float64(b.perRetry)
}

// stored returns what the store holds at now, in ns of reserve time, when
// the word says it is empty at empty: between 0 and full, since a store
// fuller than full holds Burst.
func (b *Budget) stored(now, empty int64) int64 {
	return max(now-max(empty, now-b.full), 0)
}
