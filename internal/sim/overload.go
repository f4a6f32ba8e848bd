package sim

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/retryshare"
	"github.com/backoffgo/backoff/throttle"
)

// This file holds [Overload] (issue 30 §1): an open-loop server of limited
// capacity (slots, a bounded FIFO queue, client timeouts after which the
// server still does the work), a trigger that ends (a load spike, a
// capacity drop), and the retries of each client policy, to see which
// policies let the server recover when the trigger ends and which keep it
// collapsed (a metastable failure).

// OverloadTrigger is what pushes a row's server past its capacity.
type OverloadTrigger uint8

const (
	// NoTrigger: the base load throughout.
	NoTrigger OverloadTrigger = iota
	// Spike: arrivals at OverloadRow.Peak times the capacity for
	// OverloadConfig.Trigger.
	Spike
	// CapacityDrop: half the slots (rounded down, at least 1) for
	// OverloadConfig.Trigger.
	CapacityDrop
)

func (t OverloadTrigger) String() string {
	switch t {
	case Spike:
		return "spike"
	case CapacityDrop:
		return "capacity drop"
	}
	return "none"
}

// OverloadGuard is what a policy adds to its retry delays.
type OverloadGuard uint8

const (
	// GuardNone: the delays alone.
	GuardNone OverloadGuard = iota
	// GuardBudget: a [backoff.Budget] per client (OverloadConfig.Budget),
	// as a Retrier uses it: a deposit per request, a withdrawal per retry.
	GuardBudget
	// GuardShare: the server holds a [retryshare.Share]
	// (OverloadConfig.Share) and uses it as backoffhttp.Handler does: a
	// retry arriving that its Admit refuses is answered at once, "don't
	// retry", taking no slot nor queue place, and recorded as a request and
	// a retry; every other attempt is recorded when answered, and a failing
	// answer decided by Refuse. A client does not retry an answer that says
	// "don't retry".
	GuardShare
	// GuardThrottle: a [throttle.Throttle] per client
	// (OverloadConfig.Throttle), on the virtual clock: Allow before every
	// attempt (a rejection ends the request), Record of every attempt sent
	// once its client has its outcome: its answer (accepted unless the
	// overload signal; a plain failure is an accept) or its timeout (a
	// rejection), as backoffhttp records them.
	GuardThrottle
	// GuardAWS: the retry quota of AWS SDK for Go v2's standard retryer
	// (aws/retry/standard.go, v1.48.0), per client: 500 tokens; a retry
	// costs 14, 5 after a throttling answer (the server's overload
	// answer); a successful retry refunds its cost; a request that
	// succeeds at its first attempt adds 1; an empty quota stops the
	// request. Its delays are that retryer's: uniform in [0, min(20 s,
	// b·2^(n-1))] after the n-th attempt, b = 1 s after a throttling
	// answer and the policy's Base otherwise.
	GuardAWS
	// GuardBreaker: a consecutive-failure breaker per client, the default
	// rule of sony/gobreaker v2 (v2.4.0): it opens after more than 5
	// consecutive failed attempts, stays open 60 s, then lets one attempt
	// through (half-open) and closes at its success, opens again at its
	// failure. An attempt it refuses ends the request.
	GuardBreaker
)

// The breaker's and the AWS quota's constants, from their sources (see
// [GuardBreaker], [GuardAWS]).
const (
	breakerTrip     = 5 // opens when consecutive failures exceed it
	breakerOpen     = 60 * time.Second
	awsTokens       = 500
	awsRetryCost    = 14
	awsThrottleCost = 5
	awsThrottleBase = time.Second
	awsCap          = 20 * time.Second
)

// OverloadPolicy is one client policy of [Overload]: full jitter with
// Retry's parameters (MaxAttempts calls per request; 1: no retries) and a
// guard.
type OverloadPolicy struct {
	Name  string
	Retry backoff.Config
	Guard OverloadGuard
	// FirstTries sets throttle.Config.FirstTries for GuardThrottle: the
	// throttle gates first tries too, not only retries.
	FirstTries bool
	// ThrottleWindow, when not zero, replaces OverloadConfig.Throttle's
	// Window for GuardThrottle.
	ThrottleWindow time.Duration
}

// OverloadRow is one scenario of [Overload].
type OverloadRow struct {
	// Group labels the row in tables; the simulator does not read it.
	Group   string
	Trigger OverloadTrigger
	// Load is the base arrival rate over the capacity (Slots/Service), in
	// (0, 10]; Peak the rate during a spike over the capacity, in [Load,
	// 10] (unused otherwise).
	Load, Peak float64
	// Fail, in [0, 1), is the probability that the server fails an
	// attempt it serves (a plain, retryable failure).
	Fail float64
	// DropExpired makes the server drop, without serving it, a queued
	// attempt whose client has certainly timed out (it has waited Timeout).
	DropExpired bool
	// Clients, when not zero, replaces OverloadConfig.Clients, 1 to
	// MaxFleetClients.
	Clients int
}

// clients is the number of clients of r.
func (cfg OverloadConfig) clients(r OverloadRow) int { return cmp.Or(r.Clients, cfg.Clients) }

// OverloadConfig parameterises [Overload].
type OverloadConfig struct {
	// Slots is the attempts served at once, 1 to MaxOverloadSlots;
	// Service the mean service time, exponentially distributed, in
	// (0, 1m]; Queue the FIFO queue's capacity, 0 to MaxOverloadQueue: an
	// attempt that finds every slot busy and the queue full is answered at
	// once with an overload answer (a throttling error, retryable).
	Slots   int
	Service time.Duration
	Queue   int
	// Timeout is how long a client waits for an attempt's answer, in
	// (0, 1m]; then the attempt has failed (the server still serves it
	// when it reaches it, unless the row drops expired attempts).
	Timeout time.Duration
	// Clients send the requests (each request's client is drawn
	// uniformly), 1 to MaxFleetClients; every guard but the Share is per
	// client.
	Clients int
	// Warmup is the span before the trigger, Trigger its length, After the
	// span observed after it (arrivals stop then; the requests in flight
	// finish). Each in [1s, 1e5 s].
	Warmup, Trigger, After time.Duration
	// Window and Tolerance define recovery: the first whole second s after
	// the trigger from which, over [s, s+Window), the requests that
	// succeeded number at least 1−Tolerance times the requests that
	// arrived. Window in [1s, After], Tolerance in (0, 1).
	Window    time.Duration
	Tolerance float64
	// Budget configures GuardBudget's budgets, Share GuardShare's Share,
	// Throttle GuardThrottle's throttles (zero fields: the library's
	// defaults); Now must be nil in each.
	Budget   backoff.BudgetConfig
	Share    retryshare.Config
	Throttle throttle.Config
	// Policies are the contenders, Rows the scenarios, 1 to 100 each.
	Policies []OverloadPolicy
	Rows     []OverloadRow
	// Progress, if not nil, receives reports while the workload runs.
	Progress func(Progress)
}

// The limits of Overload, besides [MaxWork] and [MaxFleetClients].
const (
	MaxOverloadSlots = 100_000
	MaxOverloadQueue = 1_000_000
	// MaxOverloadMemory bounds the memory of one run by its estimate: a
	// request record and an event per attempt for every request it may
	// send, the queue, and each client's guard.
	MaxOverloadMemory = 256 << 20
)

// Memory estimates of Overload, in bytes.
const (
	overloadReqBytes = 40 // and a sequence for a Sequencer
	// overloadEventBytes is a pending event's share of the heap (an
	// fevent, and the slack of a slice that doubles): a request may have
	// an event pending for each of its attempts (a timeout outlives its
	// attempt's answer).
	overloadEventBytes  = 96
	overloadClientBytes = 1024 // a throttle with its one target: 790 measured, the largest guard
	overloadQueueBytes  = 24
	// overloadEvents is the estimate of events per attempt: its send or
	// arrival, its answer, its timeout.
	overloadEvents = 3
)

// DefaultOverloadPolicies returns the policies of issue 30 side by side:
// no retries; 3 retries of full jitter (base 100 ms, cap 10 s: what most
// libraries do); the same with each guard, the throttle also with a 10 s
// window (the SRE book's is 2 minutes); AWS SDK for Go v2's standard
// retryer (3 attempts, base 50 ms, cap 20 s, its quota); this library's
// defaults end to end, backoffhttp.DefaultRetrier's policy (full jitter,
// 200 ms to 10 s, 5 attempts, no budget) against a server behind
// backoffhttp.Handler's defaults (GuardShare); and that client policy
// alone and with the throttle.
func DefaultOverloadPolicies() []OverloadPolicy {
	naive := backoff.Config{Base: 100 * time.Millisecond, Cap: 10 * time.Second, MaxAttempts: 4}
	none := naive
	none.MaxAttempts = 1
	defaults := backoff.Config{Base: 200 * time.Millisecond, Cap: 10 * time.Second, MaxAttempts: 5}
	return []OverloadPolicy{
		{Name: "no retries", Retry: none},
		{Name: "3 retries, full jitter", Retry: naive},
		{Name: "3 retries + Budget", Retry: naive, Guard: GuardBudget},
		{Name: "3 retries + server Share", Retry: naive, Guard: GuardShare},
		{Name: "3 retries + throttle", Retry: naive, Guard: GuardThrottle},
		{Name: "3 retries + throttle, 10s window", Retry: naive, Guard: GuardThrottle, ThrottleWindow: 10 * time.Second},
		{Name: "3 retries + gobreaker", Retry: naive, Guard: GuardBreaker},
		{Name: "AWS SDK v2 standard", Retry: backoff.Config{Base: 50 * time.Millisecond, Cap: awsCap, MaxAttempts: 3}, Guard: GuardAWS},
		{Name: "library defaults", Retry: defaults, Guard: GuardShare},
		{Name: "client defaults alone", Retry: defaults},
		{Name: "client defaults + throttle", Retry: defaults, Guard: GuardThrottle},
		{Name: "client defaults + throttle, first tries", Retry: defaults, Guard: GuardThrottle, FirstTries: true},
	}
}

// DefaultOverload returns issue 30's server: 50 slots, 100 ms mean
// service time (a capacity of 500 requests/s), a queue of 1,000 (2 s of
// work), a 1 s client timeout, 10,000 clients; 20 s of warm-up, a 10 s
// trigger, 120 s observed after it; recovered at 95 % of the offered
// requests over 5 s. Rows: a spike to 1.5 times the capacity and a
// capacity drop at 70 % load; the same at 20 %; the spike at 70 % with
// the server dropping expired attempts; 10 % random failures at 70 %
// without a trigger.
func DefaultOverload() OverloadConfig {
	return OverloadConfig{
		Slots: 20, Service: 100 * time.Millisecond, Queue: 400, Timeout: time.Second, Clients: 10_000,
		Warmup: 20 * time.Second, Trigger: 10 * time.Second, After: 120 * time.Second,
		Window: 5 * time.Second, Tolerance: 0.05,
		Policies: DefaultOverloadPolicies(),
		Rows: []OverloadRow{
			{Group: "high load", Trigger: Spike, Load: 0.7, Peak: 1.5},
			{Group: "high load", Trigger: CapacityDrop, Load: 0.7},
			{Group: "the line", Trigger: Spike, Load: 0.3, Peak: 1.5},
			{Group: "the line", Trigger: Spike, Load: 0.2, Peak: 1.5},
			{Group: "10 clients", Trigger: Spike, Load: 0.7, Peak: 1.5, Clients: 10},
			{Group: "drop expired", Trigger: Spike, Load: 0.7, Peak: 1.5, DropExpired: true},
			{Group: "failures", Load: 0.7, Fail: 0.1},
		},
	}
}

// OverloadRun is the outcome of one policy on one row. Goodput counts the
// requests that succeeded by when their answer reached the client (a
// request counts once, whichever attempt succeeded); offered the
// requests that arrived. A share with nothing to count is NaN.
type OverloadRun struct {
	// Recovered says whether goodput came back after the trigger (see
	// OverloadConfig.Window); Recovery is when, after the trigger's end,
	// in whole seconds (-1 if not; 0 for a row without a trigger).
	Recovered bool
	Recovery  time.Duration
	// During and After are goodput over offered during the trigger and
	// over the span observed after it (for a row without a trigger, NaN and
	// from the warm-up's end); After may pass 1, as the backlog succeeds.
	During, After float64
	// Success is the share of the requests arriving after the warm-up
	// that succeeded.
	Success float64
	// PeakLoad is the most attempts that reached the server in one second
	// after the warm-up over the requests that arrived in it.
	PeakLoad float64
	// Wasted is the share of the server's busy time spent on attempts
	// whose client had timed out.
	Wasted float64
	// Requests is the requests that arrived; Refused those a guard
	// stopped (a local refusal, an empty budget or quota, an open breaker,
	// a "don't retry").
	Requests, Refused int64
	// Goodput and Offered are per second from 0 to the end of After.
	Goodput, Offered []int32
}

// OverloadResult is the outcome of [Overload] for one policy.
type OverloadResult struct {
	Policy OverloadPolicy
	// Runs holds one run per row, in the order of OverloadConfig.Rows.
	Runs   []OverloadRun
	Events int64
}

// Capacity is the server's requests per second: Slots / Service.
func (cfg OverloadConfig) Capacity() float64 { return float64(cfg.Slots) / cfg.Service.Seconds() }

// end is when arrivals stop.
func (cfg OverloadConfig) end() time.Duration { return cfg.Warmup + cfg.Trigger + cfg.After }

// requests bounds a row's requests: the mean plus ten standard
// deviations, and 10.
func (cfg OverloadConfig) requests(r OverloadRow) float64 {
	m := cfg.Capacity() * (r.Load*(cfg.Warmup+cfg.After).Seconds() + max(r.Load, r.Peak)*cfg.Trigger.Seconds())
	return m + 10*math.Sqrt(m) + 10
}

// Validate checks cfg for [Overload] without running anything: every
// parameter in range, the Budget and Share configurations accepted by
// the library, each run's memory estimate within [MaxOverloadMemory] and
// the work estimate (every request making all its policy's attempts)
// within [MaxWork]. The contenders are ignored: the policies are cfg's.
func (cfg OverloadConfig) Validate(_ []Contender) error {
	const w = "overload"
	span := func(name string, d, lo, hi time.Duration) error {
		if d < lo || d > hi {
			return cfgErr(w, name, "%v: want %v to %v", d, lo, hi)
		}
		return nil
	}
	for _, c := range []struct {
		name   string
		v, max int
	}{{"Slots", cfg.Slots, MaxOverloadSlots}, {"Clients", cfg.Clients, MaxFleetClients}} {
		if c.v < 1 || c.v > c.max {
			return cfgErr(w, c.name, "%d: want 1 to %d", c.v, c.max)
		}
	}
	if cfg.Queue < 0 || cfg.Queue > MaxOverloadQueue {
		return cfgErr(w, "Queue", "%d: want 0 to %d", cfg.Queue, MaxOverloadQueue)
	}
	const long = 1e5 * time.Second
	for _, s := range []struct {
		name      string
		d, lo, hi time.Duration
	}{
		{"Service", cfg.Service, 1, time.Minute}, {"Timeout", cfg.Timeout, 1, time.Minute},
		{"Warmup", cfg.Warmup, time.Second, long}, {"Trigger", cfg.Trigger, time.Second, long}, {"After", cfg.After, time.Second, long},
		{"Window", cfg.Window, time.Second, cfg.After},
	} {
		if err := span(s.name, s.d, s.lo, s.hi); err != nil {
			return err
		}
		if s.lo == time.Second && s.d%time.Second != 0 {
			return cfgErr(w, s.name, "%v: want whole seconds", s.d)
		}
	}
	if !(cfg.Tolerance > 0 && cfg.Tolerance < 1) {
		return cfgErr(w, "Tolerance", "%v: want in (0, 1)", cfg.Tolerance)
	}
	if err := checkBudget(w, cfg.Budget); err != nil {
		return err
	}
	if err := checkShare(w, cfg.Share); err != nil {
		return err
	}
	if cfg.Throttle.Now != nil {
		return cfgErr(w, "Throttle.Now", "set: want nil, the simulator runs the throttles on its virtual clock")
	}
	if _, err := throttle.New(cfg.Throttle, backoff.RuntimeRng{}); err != nil {
		return cfgErr(w, "Throttle", "%v", err)
	}
	if len(cfg.Policies) == 0 || len(cfg.Policies) > 100 {
		return cfgErr(w, "Policies", "%d policies: want 1 to 100", len(cfg.Policies))
	}
	attempts, most := 0, 0
	names := map[string]bool{}
	for _, p := range cfg.Policies {
		if names[p.Name] {
			return cfgErr(w, "Policies.Name", "%q twice", p.Name)
		}
		names[p.Name] = true
		if err := checkPolicy(w, p.Retry, false); err != nil {
			return err
		}
		if p.ThrottleWindow != 0 {
			tc := cfg.Throttle
			tc.Window = p.ThrottleWindow
			if _, err := throttle.New(tc, backoff.RuntimeRng{}); err != nil {
				return cfgErr(w, "Policies.ThrottleWindow", "%v", err)
			}
		}
		if p.Retry.MaxAttempts > 100 {
			return cfgErr(w, "Policy.MaxAttempts", "%d: want at most 100", p.Retry.MaxAttempts)
		}
		if p.Guard > GuardBreaker {
			return cfgErr(w, "Policies.Guard", "%d: not a guard", p.Guard)
		}
		attempts += p.Retry.MaxAttempts
		most = max(most, p.Retry.MaxAttempts)
	}
	if len(cfg.Rows) == 0 || len(cfg.Rows) > 100 {
		return cfgErr(w, "Rows", "%d rows: want 1 to 100", len(cfg.Rows))
	}
	var events float64
	for _, r := range cfg.Rows {
		switch {
		case r.Trigger > CapacityDrop:
			return cfgErr(w, "Rows.Trigger", "%d: not a trigger", r.Trigger)
		case !(r.Load > 0 && r.Load <= 10):
			return cfgErr(w, "Rows.Load", "%v: want in (0, 10]", r.Load)
		case r.Trigger == Spike && !(r.Peak >= r.Load && r.Peak <= 10):
			return cfgErr(w, "Rows.Peak", "%v: want from Load %v to 10", r.Peak, r.Load)
		case !(r.Fail >= 0 && r.Fail < 1):
			return cfgErr(w, "Rows.Fail", "%v: want in [0, 1)", r.Fail)
		case r.Clients < 0 || r.Clients > MaxFleetClients:
			return cfgErr(w, "Rows.Clients", "%d: want 0 to %d", r.Clients, MaxFleetClients)
		}
		n := cfg.requests(r)
		mem := n*(overloadReqBytes+float64(most)*overloadEventBytes) + float64(cfg.Queue)*overloadQueueBytes + float64(cfg.clients(r))*overloadClientBytes
		if mem > MaxOverloadMemory {
			return limitErr(w, "Slots", []string{"Service", "Warmup", "Trigger", "After", "Rows.Load", "Queue", "Clients"},
				"a run of up to %.0f requests, a queue of %d and %d clients: about %.0f MiB, above the limit MaxOverloadMemory = %d MiB",
				n, cfg.Queue, cfg.clients(r), mem/(1<<20), MaxOverloadMemory>>20)
		}
		events += n * (1 + overloadEvents*float64(attempts))
	}
	return checkEvents(w, "Slots", []string{"Service", "Warmup", "Trigger", "After", "Rows", "Policies"}, int64(min(events, math.MaxInt64/2)), EventCost[w],
		"the rows' requests × the policies' attempts × 3 events")
}

// Overload runs every row for every policy of cfg, with the library's own
// code: each request is a retry sequence of full jitter (NextDelay), with
// a [backoff.Budget] and a [retryshare.Share] on the virtual clock for the
// guards that use them, honouring "don't retry" as a [backoff.Retrier]
// does. Requests arrive as a Poisson process (its rate changes at the
// trigger's ends); an attempt reaches the server at once, is served by a
// free slot or waits in the FIFO queue, or is answered "overloaded" when
// the queue is full; it fails for its client Timeout after it was sent,
// and the server, unless the row drops expired attempts, still serves it
// when its turn comes. Events are processed in virtual-time order, ties in
// the order they were scheduled. Every policy of a row sees the same
// arrivals (times and clients); service times, failures and policy draws
// come from streams of their own. It refuses cfg as Validate does, and
// reports a policy that does not stop at its MaxAttempts as an error.
func Overload(cfg OverloadConfig, _ []Contender, seed uint64) ([]OverloadResult, error) {
	if err := cfg.Validate(nil); err != nil {
		return nil, err
	}
	cs := make([]Contender, len(cfg.Policies))
	for i, p := range cfg.Policies {
		cs[i] = overloadContender(p)
	}
	n := cfg.Clients
	for _, r := range cfg.Rows {
		n = max(n, cfg.clients(r))
	}
	keys := callerKeys([]FleetRow{{Clients: n}})
	type runOut struct {
		run    OverloadRun
		events int64
	}
	p := plan[struct{}, runOut]{
		workload: "overload", contenders: cs, runs: len(cfg.Rows), seed: seed, progress: cfg.Progress,
		coords: func(r int) []uint64 { return []uint64{30, uint64(r)} },
		weight: func(r int) int64 { return int64(cfg.requests(cfg.Rows[r])) },
		run: func(u *unit, _ *struct{}) (runOut, error) {
			s := newOverloadRun(cfg, cfg.Policies[slices.IndexFunc(cs, func(c Contender) bool { return c.Name == u.c.Name })], cfg.Rows[u.r], u, keys)
			run, err := s.simulate()
			return runOut{run, s.events}, err
		},
	}
	out, err := p.execute()
	if err != nil {
		return nil, err
	}
	res := make([]OverloadResult, len(cs))
	for ci := range cs {
		res[ci].Policy = cfg.Policies[ci]
		for _, o := range out[ci] {
			res[ci].Runs = append(res[ci].Runs, o.run)
			res[ci].Events += o.events
		}
	}
	return res, nil
}

// errOverloaded is the server's overload answer, a throttling error;
// errFailed a plain failure; errTimeout a client's timeout.
var (
	errOverloaded = errors.New("sim: the server is overloaded")
	errTimeout    = errors.New("sim: the attempt timed out")
)

// overloadContender builds p's delays for one run: full jitter, and for
// the AWS retryer its base of 1 s after a throttling answer.
func overloadContender(p OverloadPolicy) Contender {
	return Contender{Name: p.Name, New: func(_ backoff.Config, rng backoff.Rng) (backoff.Policy, error) {
		pol, err := backoff.NewFullJitter(p.Retry, rng)
		if err != nil || p.Guard != GuardAWS {
			return pol, err
		}
		t := p.Retry
		t.Base = awsThrottleBase
		throttled, err := backoff.NewFullJitter(t, rng)
		if err != nil {
			return nil, err
		}
		return backoff.PolicyFunc(func(attempt int, err error) (time.Duration, error) {
			if errors.Is(err, errOverloaded) {
				return throttled.NextDelay(attempt, err)
			}
			return pol.NextDelay(attempt, err)
		}), nil
	}}
}

// Event kinds of an overload run (in fevent.kind; fevent.seq is the
// request, fevent.attempt its attempt).
const (
	okArrive  uint8 = iota // the next request arrives (or the rate changes: seq -1)
	okSend                 // a client sends a retry
	okDone                 // a slot finishes serving an attempt
	okTimeout              // a client's wait for an attempt ends
	okSlots                // the number of slots changes
)

// oreq is a request.
type oreq struct {
	born    time.Duration
	client  int32
	attempt int32 // attempts sent
	pending bool  // the client waits for the answer to its last attempt
	cost    uint8 // AWS: the last retry's cost, refunded at its success
	bgen    uint32
}

// queued is an attempt in the server's queue.
type queued struct {
	req, attempt int32
	at           time.Duration
}

// breaker is a client's consecutive-failure breaker.
type breaker struct {
	state    uint8 // closed, open, half-open
	gen      uint32
	failures int32
	probing  bool // half-open: its one attempt is out
	until    time.Duration
}

const (
	brClosed uint8 = iota
	brOpen
	brHalf
)

// overloadRun runs one policy on one row.
type overloadRun struct {
	cfg   OverloadConfig
	pol   OverloadPolicy
	row   OverloadRow
	u     *unit
	keys  []string
	clock *virtualClock
	fqueue
	events int64
	// Streams: arrivals (times, clients), service times and failures.
	arr, svc *rand.Rand
	reqs     []oreq
	seqs     []backoff.Policy // per request for a Sequencer, else nil
	queue    []queued         // ring of cfg.Queue
	qhead    int
	qlen     int
	busy     int
	slots    int
	// Trigger bounds and rates.
	from, to   time.Duration
	base, peak float64 // arrivals per second
	// Guards, per client (created at first use).
	clients   int
	budgets   []*backoff.Budget
	throttles []*throttle.Throttle
	trng      *rand.Rand
	tokens    []int32 // AWS: tokens spent below the full 500
	breakers  []breaker
	share     *retryshare.Share
	// Measures.
	goodput, offered, attempts []int32
	busyTime, wasted           time.Duration
	born, ok, refused          int64
	ticked, weight             int64
	progress                   counter
}

func newOverloadRun(cfg OverloadConfig, pol OverloadPolicy, row OverloadRow, u *unit, keys []string) *overloadRun {
	s := &overloadRun{cfg: cfg, pol: pol, row: row, u: u, keys: keys, clock: &virtualClock{}, slots: cfg.Slots, clients: cfg.clients(row), progress: counter{u: u}}
	s.arr = rand.New(rand.NewPCG(u.env.Uint64(), u.env.Uint64()))
	s.svc = rand.New(rand.NewPCG(u.env.Uint64(), u.env.Uint64()))
	s.trng = rand.New(rand.NewPCG(u.env.Uint64(), u.env.Uint64()))
	s.queue = make([]queued, cfg.Queue)
	s.from, s.to = cfg.Warmup, cfg.Warmup+cfg.Trigger
	s.base = row.Load * cfg.Capacity()
	s.peak = s.base
	if row.Trigger == Spike {
		s.peak = row.Peak * cfg.Capacity()
	}
	s.weight = int64(cfg.requests(row))
	n := bin(cfg.end())
	s.goodput, s.offered, s.attempts = make([]int32, n), make([]int32, n), make([]int32, n)
	switch pol.Guard {
	case GuardBudget:
		s.budgets = make([]*backoff.Budget, s.clients)
	case GuardThrottle:
		s.throttles = make([]*throttle.Throttle, s.clients)
	case GuardAWS:
		s.tokens = make([]int32, s.clients)
	case GuardBreaker:
		s.breakers = make([]breaker, s.clients)
	case GuardShare:
		sc := cfg.Share
		sc.Now = s.clock.now
		s.share = backoff.Must(retryshare.New(sc)) // Validate built one
	}
	return s
}

func (s *overloadRun) now() time.Duration { return s.clock.t }

// rate is the arrival rate at t.
func (s *overloadRun) rate(t time.Duration) float64 {
	if t >= s.from && t < s.to {
		return s.peak
	}
	return s.base
}

// nextArrival schedules the arrival after t, or the rate's change if that
// comes first (the process is memoryless: it draws again from there).
func (s *overloadRun) nextArrival(t time.Duration) {
	next := t + satDuration(s.arr.ExpFloat64()/s.rate(t)*float64(time.Second))
	for _, b := range []time.Duration{s.from, s.to} {
		if t < b && next >= b && s.rate(b) != s.rate(t) {
			s.schedule(fevent{kind: okArrive, seq: -1}, b)
			return
		}
	}
	if next < s.cfg.end() {
		s.schedule(fevent{kind: okArrive}, next)
	}
}

// bin is the second of t.
func bin(t time.Duration) int { return int(t / time.Second) }

func (s *overloadRun) simulate() (OverloadRun, error) {
	s.nextArrival(0)
	if s.row.Trigger == CapacityDrop {
		s.schedule(fevent{kind: okSlots, attempt: int32(max(s.cfg.Slots/2, 1))}, s.from)
		s.schedule(fevent{kind: okSlots, attempt: int32(s.cfg.Slots)}, s.to)
	}
	for len(s.heap) > 0 {
		e := s.heap[0]
		s.heap.pop()
		s.clock.t = e.t
		s.events++
		var err error
		switch e.kind {
		case okArrive:
			if e.seq >= 0 {
				s.arrive()
			}
			s.nextArrival(e.t)
		case okSend:
			err = s.send(e.seq)
		case okDone:
			err = s.done(e)
		case okTimeout:
			if r := &s.reqs[e.seq]; r.pending && r.attempt == e.attempt {
				if s.throttles != nil {
					s.throttle(r.client).Record(overloadRoute, false) // no answer in time
				}
				err = s.failed(e.seq, errTimeout, false)
			}
		case okSlots:
			s.slots = int(e.attempt)
			s.serve()
		}
		if err != nil {
			return OverloadRun{}, err
		}
	}
	s.progress.flush()
	s.u.advance(s.weight - s.ticked)
	return s.measure(), nil
}

// arrive starts a new request.
func (s *overloadRun) arrive() {
	if s.ticked < s.weight {
		s.ticked++
		s.progress.tick()
	}
	t := s.now()
	i := int32(len(s.reqs))
	s.reqs = append(s.reqs, oreq{born: t, client: int32(s.arr.IntN(s.clients))})
	s.offered[bin(t)]++
	if t >= s.cfg.Warmup {
		s.born++
	}
	if _, ok := s.u.pol.(backoff.Sequencer); ok {
		for len(s.seqs) < len(s.reqs) {
			s.seqs = append(s.seqs, nil)
		}
		s.seqs[i] = startSequence(s.u.pol)
	}
	if s.budgets != nil {
		s.budget(s.reqs[i].client).Deposit()
	}
	_ = s.send(i) // the first attempt: no limit to pass
}

// throttle returns client c's throttle.
func (s *overloadRun) throttle(c int32) *throttle.Throttle {
	if s.throttles[c] == nil {
		tc := s.cfg.Throttle
		tc.Now, tc.FirstTries, tc.Window = s.clock.now, s.pol.FirstTries, cmp.Or(s.pol.ThrottleWindow, tc.Window)
		s.throttles[c] = backoff.Must(throttle.New(tc, s.trng)) // Validate built one
	}
	return s.throttles[c]
}

// budget returns client c's budget.
func (s *overloadRun) budget(c int32) *backoff.Budget {
	if s.budgets[c] == nil {
		s.budgets[c] = backoff.Must(newBudget(s.cfg.Budget, s.clock)) // Validate built one
	}
	return s.budgets[c]
}

// send sends the request's next attempt, unless its client's breaker
// refuses it.
func (s *overloadRun) send(i int32) error {
	r := &s.reqs[i]
	if int(r.attempt) >= s.pol.Retry.MaxAttempts {
		return fmt.Errorf("did not give up after Retry.MaxAttempts = %d calls", s.pol.Retry.MaxAttempts)
	}
	if s.breakers != nil {
		b := &s.breakers[r.client]
		if !s.allow(b) {
			s.end(i, true)
			return nil
		}
		r.bgen = b.gen
	}
	if s.throttles != nil && s.throttle(r.client).Allow(overloadRoute, r.attempt > 0) != nil {
		s.end(i, true)
		return nil
	}
	r.attempt++
	r.pending = true
	t := s.now()
	if b := bin(t); b < len(s.attempts) {
		s.attempts[b]++
	}
	if s.share != nil && r.attempt > 1 && !admit(s.share, overloadRoute, s.keys[r.client]) {
		return s.failed(i, errOverloaded, true) // refused as it arrives
	}
	q := queued{req: i, attempt: r.attempt, at: t}
	switch {
	case s.busy < s.slots:
		s.start(q)
	case s.qlen < len(s.queue):
		s.queue[(s.qhead+s.qlen)%len(s.queue)] = q
		s.qlen++
	default:
		return s.answer(i, r.attempt, errOverloaded)
	}
	s.schedule(fevent{kind: okTimeout, seq: i, attempt: r.attempt}, t+s.cfg.Timeout)
	return nil
}

// start serves an attempt in a free slot. Its work is wasted if its
// client no longer waits, or will not when it ends (the timeout, scheduled
// first, comes first at a tie).
func (s *overloadRun) start(q queued) {
	s.busy++
	d := satDuration(s.svc.ExpFloat64() * float64(s.cfg.Service))
	s.busyTime += d
	if r := &s.reqs[q.req]; !r.pending || r.attempt != q.attempt || q.at+s.cfg.Timeout <= s.now()+d {
		s.wasted += d
	}
	s.schedule(fevent{kind: okDone, seq: q.req, attempt: q.attempt}, s.now()+d)
}

// serve starts queued attempts while a slot is free, dropping those whose
// client has certainly timed out if the row says so.
func (s *overloadRun) serve() {
	for s.busy < s.slots && s.qlen > 0 {
		q := s.queue[s.qhead]
		s.qhead = (s.qhead + 1) % len(s.queue)
		s.qlen--
		if s.row.DropExpired && s.now()-q.at >= s.cfg.Timeout {
			continue
		}
		s.start(q)
	}
}

// done ends a service: the slot is free, and the attempt is answered.
func (s *overloadRun) done(e fevent) error {
	s.busy--
	s.serve()
	var err error
	if s.row.Fail > 0 && s.svc.Float64() < s.row.Fail {
		err = errFailed
	}
	return s.answer(e.seq, e.attempt, err)
}

// answer is the server's answer to an attempt (nil: success), recorded in
// the Share if there is one, and what its client does with it if it still
// waits for it.
func (s *overloadRun) answer(i, attempt int32, err error) error {
	dont := false
	if s.share != nil {
		key := s.keys[s.reqs[i].client]
		record(s.share, overloadRoute, key, attempt > 1)
		dont = err != nil && decide(s.share, overloadRoute, key)
	}
	r := &s.reqs[i]
	if !r.pending || r.attempt != attempt {
		return nil // the client timed out: nobody reads it
	}
	if s.throttles != nil {
		s.throttle(r.client).Record(overloadRoute, !errors.Is(err, errOverloaded))
	}
	if err == nil {
		s.succeeded(i)
		return nil
	}
	return s.failed(i, err, dont)
}

// overloadRoute is the server's one route, for its Share.
const overloadRoute = "GET /work"

// succeeded ends a request that succeeded, and credits its guards.
func (s *overloadRun) succeeded(i int32) {
	r := &s.reqs[i]
	r.pending = false
	if s.tokens != nil {
		refund := int32(r.cost)
		if r.attempt == 1 {
			refund = 1
		}
		s.tokens[r.client] = max(s.tokens[r.client]-refund, 0)
	}
	if s.breakers != nil {
		s.record(&s.breakers[r.client], r.bgen, true)
	}
	if b := bin(s.now()); b < len(s.goodput) {
		s.goodput[b]++
	}
	if r.born >= s.cfg.Warmup {
		s.ok++
	}
	s.end(i, false)
}

// failed is a failed attempt: a retry after the policy's delay, or the
// request's end.
func (s *overloadRun) failed(i int32, err error, dont bool) error {
	r := &s.reqs[i]
	r.pending = false
	if s.breakers != nil {
		s.record(&s.breakers[r.client], r.bgen, false)
	}
	if dont {
		err = errDontRetry
	}
	if backoff.Retried(err) {
		s.end(i, true)
		return nil
	}
	seq := s.u.pol
	if s.seqs != nil {
		seq = s.seqs[i]
	}
	d, stop := seq.NextDelay(int(r.attempt), err)
	if stop != nil {
		s.end(i, false)
		return nil
	}
	switch {
	case s.budgets != nil && s.budget(r.client).Withdraw() != nil:
		s.end(i, true)
		return nil
	case s.tokens != nil:
		cost := int32(awsRetryCost)
		if errors.Is(err, errOverloaded) {
			cost = awsThrottleCost
		}
		if awsTokens-s.tokens[r.client] < cost {
			s.end(i, true)
			return nil
		}
		s.tokens[r.client] += cost
		r.cost = uint8(cost)
	}
	s.schedule(fevent{kind: okSend, seq: i}, s.now()+max(d, 0))
	return nil
}

// end ends a request.
func (s *overloadRun) end(i int32, refused bool) {
	if refused {
		s.refused++
	}
	if s.seqs != nil {
		s.seqs[i] = nil
	}
}

// allow is gobreaker's check before an attempt.
func (s *overloadRun) allow(b *breaker) bool {
	s.current(b)
	switch {
	case b.state == brOpen:
		return false
	case b.state == brHalf && b.probing:
		return false
	case b.state == brHalf:
		b.probing = true
	}
	return true
}

// current moves an open breaker whose time is up to half-open.
func (s *overloadRun) current(b *breaker) {
	if b.state == brOpen && b.until < s.now() {
		s.set(b, brHalf)
	}
}

func (s *overloadRun) set(b *breaker, state uint8) {
	b.state, b.gen, b.failures, b.probing = state, b.gen+1, 0, false
	if state == brOpen {
		b.until = s.now() + breakerOpen
	}
}

// record is gobreaker's count of an attempt's outcome, ignored when the
// breaker changed state since the attempt was let through.
func (s *overloadRun) record(b *breaker, gen uint32, success bool) {
	s.current(b)
	if b.gen != gen {
		return
	}
	switch {
	case success && b.state == brHalf:
		s.set(b, brClosed)
	case success:
		b.failures = 0
	case b.state == brHalf:
		s.set(b, brOpen)
	default:
		b.failures++
		if b.failures > breakerTrip {
			s.set(b, brOpen)
		}
	}
}

// ratio32 is the sum of a over the sum of b over [from, to) seconds.
func ratio32(a, b []int32, from, to int) float64 {
	var x, y int64
	for i := max(from, 0); i < min(to, len(a)); i++ {
		x += int64(a[i])
		y += int64(b[i])
	}
	return ratio(x, y)
}

func (s *overloadRun) measure() OverloadRun {
	w, from, to, end := bin(s.cfg.Window), bin(s.from), bin(s.to), len(s.goodput)
	o := OverloadRun{Recovery: -1, Success: ratio(s.ok, s.born), Requests: int64(len(s.reqs)), Refused: s.refused,
		Wasted: ratio(int64(s.wasted), int64(s.busyTime)), Goodput: s.goodput[:end], Offered: s.offered[:end]}
	if s.row.Trigger == NoTrigger {
		o.During, o.After = math.NaN(), ratio32(s.goodput, s.offered, bin(s.cfg.Warmup), end)
		o.Recovered, o.Recovery = true, 0
	} else {
		o.During, o.After = ratio32(s.goodput, s.offered, from, to), ratio32(s.goodput, s.offered, to, end)
		for t := to; t+w <= end; t++ {
			if ratio32(s.goodput, s.offered, t, t+w) >= 1-s.cfg.Tolerance {
				o.Recovered, o.Recovery = true, time.Duration(t-to)*time.Second
				break
			}
		}
	}
	for t := bin(s.cfg.Warmup); t < end; t++ {
		if s.offered[t] > 0 {
			o.PeakLoad = max(o.PeakLoad, float64(s.attempts[t])/float64(s.offered[t]))
		}
	}
	return o
}
