package sim

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/backoffgo/backoff"
)

// This file holds the workloads that give retries a [backoff.Budget]:
// [BudgetAmplification] and [OutageBudget]. A budget couples the calls
// that share it, so these workloads process every deposit and withdrawal in
// virtual-time order, and the budget's clock (BudgetConfig.Now) returns the
// virtual time of the event being processed.

// MaxRate bounds each rate of BudgetAmplificationConfig.Rates, in requests
// per second.
const MaxRate = 1e6

// MaxBudgetClients bounds OutageBudgetConfig.Clients: OutageBudget keeps
// one retry sequence and one pending event per client.
const MaxBudgetClients = 1 << 20

// virtualClock is a budget's clock in virtual time: Now returns the epoch
// plus the time of the event being processed. It is used by one goroutine.
type virtualClock struct{ t time.Duration }

var clockEpoch = time.Unix(0, 0)

func (c *virtualClock) now() time.Time { return clockEpoch.Add(c.t) }

// newBudget returns a full budget of cfg on the clock c.
func newBudget(cfg backoff.BudgetConfig, c *virtualClock) (*backoff.Budget, error) {
	cfg.Now = c.now
	return backoff.NewBudget(cfg)
}

// checkBudget checks a budget configuration by building one, and refuses a
// clock of the caller's own.
func checkBudget(workload string, cfg backoff.BudgetConfig) error {
	if cfg.Now != nil {
		return cfgErr(workload, "Budget.Now", "set: want nil, the simulator runs the budget on its virtual clock")
	}
	if _, err := newBudget(cfg, &virtualClock{}); err != nil {
		return cfgErr(workload, "Budget", "%v", err)
	}
	return nil
}

// checkStack checks what the budget workload's stack and the server-share
// chains have in common: the contenders, the number of layers, the policy
// of every layer and the budget of each.
func checkStack(w string, contenders []Contender, layers int, policy backoff.Config, budget backoff.BudgetConfig) error {
	if err := checkContenders(w, contenders); err != nil {
		return err
	}
	if layers < 1 || layers > MaxLayers {
		return cfgErr(w, "Layers", "%d: want 1 to MaxLayers = %d", layers, MaxLayers)
	}
	if err := checkPolicy(w, policy, false); err != nil {
		return err
	}
	return checkBudget(w, budget)
}

// BudgetPoint is the outcome of [BudgetAmplification] at one request rate.
type BudgetPoint struct {
	// Rate is the top-level request rate, in requests per second.
	Rate float64
	// PerLayer is the load at the dependency per top-level request when
	// every layer retries with a budget of its own, shared by all the calls
	// that layer serves.
	PerLayer float64
	// Shared is the same load when every layer draws on one budget.
	Shared float64
	// Outermost and Innermost are the same load, a budget per layer, when
	// only the top layer retries (the outermost loop owns the retries) or
	// only the innermost (the rest stand back, as the library does); the
	// other layers make one attempt per call.
	Outermost, Innermost float64
	// PerLayerRetries and SharedRetries are the retries each layer made per
	// top-level request (index 0 is the top layer), in either variant.
	// These figures are per request measured: NaN, undefined, at a rate so
	// low that no request arrives in [Warmup, Warmup+Span).
	PerLayerRetries, SharedRetries []float64
}

// BudgetAmplificationResult is the outcome of [BudgetAmplification] for one
// policy.
type BudgetAmplificationResult struct {
	// Policy is the contender's name.
	Policy string
	// Points holds one point per rate, in the order of
	// BudgetAmplificationConfig.Rates.
	Points []BudgetPoint
	// Events is the number of calls simulated over every rate and both
	// variants, warm-up included.
	Events int64
}

// requests is the number of requests simulated at rate r.
func (cfg BudgetAmplificationConfig) requests(r float64) int64 {
	return int64(math.Ceil(r * (cfg.Warmup + cfg.Span).Seconds()))
}

// Validate checks cfg for [BudgetAmplification] with the given contenders,
// without running anything: every parameter in range, the budget
// configuration accepted by backoff.NewBudget, and a work estimate within
// [MaxWork]: at every rate, per contender, the calls of the four variants
// that the budgets' bound allows (see budgetCalls).
func (cfg BudgetAmplificationConfig) Validate(contenders []Contender) error {
	const w = "budget-amplification"
	if err := checkStack(w, contenders, cfg.Layers, cfg.Policy, cfg.Budget); err != nil {
		return err
	}
	if len(cfg.Rates) == 0 || len(cfg.Rates) > MaxSweep {
		return cfgErr(w, "Rates", "%d rates: want 1 to MaxSweep = %d", len(cfg.Rates), MaxSweep)
	}
	for _, r := range cfg.Rates {
		if !(r > 0 && r <= MaxRate) {
			return cfgErr(w, "Rates", "%v: want in (0, MaxRate = %g] requests per second", r, MaxRate)
		}
	}
	if cfg.Warmup < 0 {
		return cfgErr(w, "Warmup", "%v: want >= 0", cfg.Warmup)
	}
	if cfg.Span <= 0 {
		return cfgErr(w, "Span", "%v: want > 0", cfg.Span)
	}
	if _, ok := addTime(cfg.Warmup, cfg.Span); !ok || cfg.Warmup+cfg.Span > 1e6*time.Second {
		return cfgErr(w, "Span", "Warmup %v + Span %v: want at most 1e6 s", cfg.Warmup, cfg.Span)
	}
	b := BudgetDefaults(cfg.Budget)
	var events int64
	for _, r := range cfg.Rates {
		events = addSat(events, cfg.budgetCalls(b, r))
	}
	events = mulSat(events, int64(len(contenders)))
	return checkEvents(w, "Rates", []string{"Layers", "Policy.MaxAttempts", "Warmup", "Span", "contenders"}, events, EventCost[w], fmt.Sprintf("requests at %d rates over Warmup+Span %v × the calls of %d layers of Policy.MaxAttempts %d that the budget allows × 4 variants × %d policies",
		len(cfg.Rates), cfg.Warmup+cfg.Span, cfg.Layers, cfg.Policy.MaxAttempts, len(contenders)))
}

// BudgetDefaults returns cfg with its zero fields filled in, as
// backoff.NewBudget fills them (from the library, the one home of the
// defaults); an invalid cfg is returned as it is.
func BudgetDefaults(cfg backoff.BudgetConfig) backoff.BudgetConfig {
	b, err := newBudget(cfg, &virtualClock{})
	if err != nil {
		return cfg
	}
	return b.Config()
}

// budgetCalls bounds the calls of the four variants at rate r, saturating,
// with the budget's bound: a budget over time T grants at most Burst +
// Ratio·deposits + Reserve·T retries, and a layer at most
// (MaxAttempts-1)·calls it serves. With a budget per layer, layer k serving
// D calls passes down at most D + min((A-1)·D, Burst + Ratio·D +
// Reserve·T); a single retrying layer does the same once. With one shared
// budget, the retries R of all layers satisfy R <= Burst + Ratio·L·(N + R)
// + Reserve·T, every layer serving at most N + R calls; when Ratio·L >= 1
// that gives no bound and the whole tree counts.
func (cfg BudgetAmplificationConfig) budgetCalls(b backoff.BudgetConfig, r float64) int64 {
	n := float64(cfg.requests(r))
	t := (cfg.Warmup + cfg.Span).Seconds()
	down := func(d float64) float64 { return budgetDown(d, t, cfg.Policy.MaxAttempts, b) }
	l := float64(cfg.Layers)
	// A budget per layer.
	total := budgetTree(n, t, cfg.Policy.MaxAttempts, cfg.Layers, b)
	// Only the top layer retries; only the innermost.
	total += n + l*down(n)
	total += l*n + down(n)
	// One shared budget.
	tree := float64(AmplificationConfig{Layers: cfg.Layers, Policy: cfg.Policy}.everyLayer()) * n
	shared := tree
	if rl := b.Ratio * l; rl < 1 {
		retries := (float64(b.Burst) + rl*n + b.Reserve*t) / (1 - rl)
		shared = min(tree, (l+1)*(n+retries))
	}
	total += shared
	if total >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(math.Ceil(total))
}

// budgetDown bounds the calls that a layer serving d calls over t seconds
// passes down, retrying up to attempts calls each with a budget b of its
// own: d + min((attempts-1)·d, Burst + Ratio·d + Reserve·t).
func budgetDown(d, t float64, attempts int, b backoff.BudgetConfig) float64 {
	return d + min(float64(attempts-1)*d, float64(b.Burst)+b.Ratio*d+b.Reserve*t)
}

// budgetTree bounds the calls of a stack of layers, each with a budget b of
// its own, that serves n requests over t seconds, the dependency's
// included.
func budgetTree(n, t float64, attempts, layers int, b backoff.BudgetConfig) float64 {
	total, d := 0.0, n
	for range layers {
		total += d
		d = budgetDown(d, t, attempts, b)
	}
	return total + d
}

// BudgetAmplification simulates the call stack of [Amplification] over a
// dependency that always fails, with every layer retrying up to
// Policy.MaxAttempts calls per call it serves, each retry first withdrawn
// from a [backoff.Budget] and each call a layer serves deposited in it, as
// [backoff.Do] does with a budget. Top-level requests arrive at a
// fixed rate; delays are not simulated (each request's call tree happens
// at its arrival instant), because what a budget allows depends on how many
// calls and retries it sees per second, not on how they are spaced within
// a request. Two variants: every layer has a budget of its own, shared by
// all the calls it serves; one budget is shared by every layer. Both start
// full at t = 0; the load is measured over the requests that arrive in
// [Warmup, Warmup+Span), after the initial store (Burst retries) has been
// spent.
//
// It refuses cfg as [BudgetAmplificationConfig.Validate] does. A policy
// that has not given up after Policy.MaxAttempts calls is reported as an
// error.
func BudgetAmplification(cfg BudgetAmplificationConfig, contenders []Contender, seed uint64) ([]BudgetAmplificationResult, error) {
	if err := cfg.Validate(contenders); err != nil {
		return nil, err
	}
	type runOut struct {
		point  BudgetPoint
		events int64
	}
	p := plan[struct{}, runOut]{
		workload: "budget-amplification", contenders: contenders, runs: len(cfg.Rates), seed: seed, policy: cfg.Policy, progress: cfg.Progress,
		coords: func(r int) []uint64 { return []uint64{7, uint64(r)} },
		weight: func(r int) int64 { return 4 * cfg.requests(cfg.Rates[r]) },
		run: func(u *unit, _ *struct{}) (runOut, error) {
			rate := cfg.Rates[u.r]
			o := runOut{point: BudgetPoint{Rate: rate}}
			n := cfg.requests(rate)
			for v := range 4 {
				clock := &virtualClock{}
				s := budgetStack{layers: cfg.Layers, limit: cfg.Policy.MaxAttempts, pol: u.pol, budgets: make([]*backoff.Budget, cfg.Layers), retries: make([]int64, cfg.Layers)}
				s.only = []int{0, 0, 1, cfg.Layers}[v]
				for i := range s.budgets {
					if v == 1 && i > 0 {
						s.budgets[i] = s.budgets[0]
						continue
					}
					b, err := newBudget(cfg.Budget, clock)
					if err != nil {
						return o, err
					}
					s.budgets[i] = b
				}
				var measured int64
				for i := range n {
					clock.t = time.Duration(float64(i) * float64(time.Second) / rate)
					if clock.t >= cfg.Warmup+cfg.Span {
						break
					}
					if clock.t >= cfg.Warmup {
						if measured == 0 { // the first measured request: forget the warm-up
							s.bottom = 0
							clear(s.retries)
						}
						measured++
					}
					if err := s.call(1); err != nil {
						return o, err
					}
					u.advance(1)
				}
				o.events += s.events
				// Without a request in the measured span, a load per
				// request is undefined: NaN, never a number.
				load, retries := math.NaN(), make([]float64, cfg.Layers)
				for i := range retries {
					retries[i] = math.NaN()
				}
				if measured > 0 {
					load = float64(s.bottom) / float64(measured)
					for i, r := range s.retries {
						retries[i] = float64(r) / float64(measured)
					}
				}
				switch v {
				case 0:
					o.point.PerLayer, o.point.PerLayerRetries = load, retries
				case 1:
					o.point.Shared, o.point.SharedRetries = load, retries
				case 2:
					o.point.Outermost = load
				case 3:
					o.point.Innermost = load
				}
			}
			return o, nil
		},
	}
	out, err := p.execute()
	if err != nil {
		return nil, err
	}
	res := make([]BudgetAmplificationResult, len(contenders))
	for ci, c := range contenders {
		r := BudgetAmplificationResult{Policy: c.Name}
		for _, o := range out[ci] {
			r.Points = append(r.Points, o.point)
			r.Events += o.events
		}
		res[ci] = r
	}
	return res, nil
}

// budgetStack simulates one variant of the budgeted stack.
type budgetStack struct {
	layers, limit int
	only          int // the single retrying layer, or 0 for every layer
	pol           backoff.Policy
	budgets       []*backoff.Budget // per layer; the same one, shared
	bottom        int64             // calls at the dependency since the last reset
	retries       []int64           // per layer, since the last reset
	events        int64
}

// call serves one call at layer (1 = top; layers+1 = the dependency), as a
// retrier with a budget would: deposit, call below, and withdraw before each retry.
func (s *budgetStack) call(layer int) error {
	s.events++
	if layer > s.layers {
		s.bottom++
		return nil
	}
	b := s.budgets[layer-1]
	b.Deposit()
	if s.only != 0 && layer != s.only {
		return s.call(layer + 1) // one attempt: this layer does not retry
	}
	seq := startSequence(s.pol)
	for attempt := 1; ; attempt++ {
		if err := s.call(layer + 1); err != nil {
			return err
		}
		if _, ok := next(seq, attempt); !ok {
			return nil
		}
		if attempt >= s.limit {
			return fmt.Errorf("did not give up after Policy.MaxAttempts = %d calls", s.limit)
		}
		if b.Withdraw() != nil {
			return nil // the budget refuses: Do stops with ErrBudget
		}
		s.retries[layer-1]++
	}
}

// OutageBudgetResult is the outcome of [OutageBudget] for one policy.
type OutageBudgetResult struct {
	OutageResult
	// DuringCalls is the mean number of calls a client made during the
	// outage (before its end).
	DuringCalls float64
	// Refused is the share of clients whose retry the budget refused, in
	// [0, 1], averaged over runs.
	Refused float64
}

// Validate checks cfg for [OutageBudget] with the given contenders: the
// parameters of [OutageConfig.Validate], the budget configuration, at most
// [MaxBudgetClients] clients, and a work estimate within [MaxWork]: each
// client's first call and the retries the budget's bound allows, at
// EventCost["outage-budget"]·log2(Clients+2) each.
func (cfg OutageBudgetConfig) Validate(contenders []Contender) error {
	const w = "outage-budget"
	if err := cfg.checkParams(w, contenders); err != nil {
		return err
	}
	if cfg.Clients > MaxBudgetClients {
		return cfgErr(w, "Clients", "%d: above the limit MaxBudgetClients = %d (one pending event per client)", cfg.Clients, MaxBudgetClients)
	}
	if err := checkBudget(w, cfg.Budget); err != nil {
		return err
	}
	// Each client's first call, and the retries the budget's bound allows
	// over the outage (retries are withdrawn only while it lasts), each an
	// event of a heap of up to Clients entries.
	b := BudgetDefaults(cfg.Budget)
	c := float64(cfg.Clients)
	retries := min((float64(cfg.clientCalls())-1)*c, float64(b.Burst)+b.Ratio*c+b.Reserve*cfg.Outage.Seconds())
	perRun := int64(math.Ceil(c + retries))
	events := mulSat(mulSat(perRun, int64(cfg.Runs)), int64(len(contenders)))
	return checkEvents(w, "Clients", []string{"Runs", "Policy.MaxAttempts", "Outage", "contenders"}, events, EventCost[w]*math.Log2(c+2),
		fmt.Sprintf("(Clients %d + the retries the budget allows over Outage %v) × Runs %d × %d policies", cfg.Clients, cfg.Outage, cfg.Runs, len(contenders)))
}

// OutageBudget simulates the clients of [Outage], with the same arrivals
// for the same seed, but every client's retries draw on one
// [backoff.Budget] shared by the whole fleet (one service, every retrier
// given the same budget): each client deposits when it arrives, and withdraws
// one retry after each failed call that its policy would retry; a client
// whose retry is refused fails at once, as Do stops with ErrBudget. Events
// are processed in virtual-time order (ties by client index), on the
// budget's clock.
//
// It refuses cfg as [OutageBudgetConfig.Validate] does. A policy that has
// not given up after Policy.MaxAttempts calls, or [MaxClientAttempts] with
// an unlimited budget, is reported as an error.
func OutageBudget(cfg OutageBudgetConfig, contenders []Contender, seed uint64) ([]OutageBudgetResult, error) {
	if err := cfg.Validate(contenders); err != nil {
		return nil, err
	}
	type runOut struct{ ok, calls, during, refused int64 }
	type scratch struct {
		seqs []backoff.Policy
		heap []event
	}
	limit := cfg.clientCalls()
	p := plan[scratch, runOut]{
		workload: "outage-budget", contenders: contenders, runs: cfg.Runs, seed: seed, policy: cfg.Policy, progress: cfg.Progress,
		coords: func(r int) []uint64 { return []uint64{2, uint64(r)} }, // Outage's: the same arrivals
		weight: func(int) int64 { return int64(cfg.Clients) },
		run: func(u *unit, s *scratch) (runOut, error) {
			var o runOut
			clock := &virtualClock{}
			b, err := newBudget(cfg.Budget, clock)
			if err != nil {
				return o, err
			}
			h := s.heap[:0]
			for c := range cfg.Clients {
				h = append(h, event{t: time.Duration(u.env.Int64N(int64(cfg.Outage))), rank: int32(c), client: int32(c), attempt: 1})
			}
			heapify(h)
			s.seqs = slices.Grow(s.seqs[:0], cfg.Clients)[:cfg.Clients]
			progress := counter{u: u}
			for len(h) > 0 {
				e := h[0]
				clock.t = e.t
				done := true
				if e.attempt == 1 {
					b.Deposit()
					s.seqs[e.client] = startSequence(u.pol)
				}
				o.calls++
				if e.t >= cfg.Outage {
					o.ok++
				} else {
					o.during++
					d, ok := next(s.seqs[e.client], int(e.attempt))
					switch {
					case !ok:
					case int64(e.attempt) >= limit:
						return o, fmt.Errorf("did not give up after %d calls without reaching the end of the outage", limit)
					case b.Withdraw() != nil:
						o.refused++
					default:
						done = false
						e.attempt++
						if d >= cfg.Outage-e.t { // every call from the end on succeeds
							e.t = cfg.Outage
						} else {
							e.t += d
						}
					}
				}
				if done {
					s.seqs[e.client] = nil
					h = popTop(h)
					progress.tick()
				} else {
					siftDown(h, 0, e)
				}
			}
			progress.flush()
			s.heap = h
			return o, nil
		},
	}
	out, err := p.execute()
	if err != nil {
		return nil, err
	}
	res := make([]OutageBudgetResult, len(contenders))
	for ci, c := range contenders {
		r := OutageBudgetResult{OutageResult: OutageResult{Policy: c.Name}}
		var rate, refused, during float64
		n := float64(cfg.Clients)
		for _, o := range out[ci] {
			s := float64(o.ok) / n
			r.SuccessRates = append(r.SuccessRates, s)
			rate += s
			refused += float64(o.refused) / n
			during += float64(o.during)
			r.Events += o.calls
		}
		runs := float64(cfg.Runs)
		r.SuccessRate = rate / runs
		r.Refused = refused / runs
		r.CallsPerClient = float64(r.Events) / (runs * n)
		r.DuringCalls = during / (runs * n)
		res[ci] = r
	}
	return res, nil
}

// FluidLoad is the load multiplier that [BudgetAmplification]'s per-layer
// budgets allow in the fluid limit, the SRE book's arithmetic with the
// reserve: a layer serving c calls per second passes down
// c + min((attempts-1)·c, ratio·c + reserve), layers times over, for
// requests arriving at rate per second; the result is the calls reaching
// the dependency per request.
func FluidLoad(ratio, reserve float64, attempts, layers int, rate float64) float64 {
	c := rate
	for range layers {
		c += min(float64(attempts-1)*c, ratio*c+reserve)
	}
	return c / rate
}
