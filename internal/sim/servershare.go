package sim

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/retryshare"
)

// This file holds [ServerShare]: the budgeted stack of [BudgetAmplification]
// as a chain of services, each counting the retries among its incoming
// requests in a [retryshare.Share] and telling its callers not to retry
// when they are widespread, run with the library's own code.

// MaxServices bounds the services one scenario of [ServerShare] keeps in
// memory, Clients·Layers + 1: each holds a Budget, a RetryShare and a
// Retrier (about 400 bytes).
const MaxServices = 1 << 18

// ShareScenario is one fleet of [ServerShare]: Clients chains of services,
// each sent Rate requests per second.
type ShareScenario struct {
	Clients int
	Rate    float64
}

// SharePoint is the outcome of [ServerShare] for one scenario.
type SharePoint struct {
	ShareScenario
	// With is the chain with every service's RetryShare; Without is the
	// same chain without them (the one-layer rule and the budgets only).
	With, Without ShareRun
}

// ShareRun is the outcome of one variant of a [ServerShare] scenario. A
// figure with nothing to count (no request measured) is NaN.
type ShareRun struct {
	// Load is the calls reaching the dependency per request during the
	// outage, from one Share.Window after its start to its end.
	Load float64
	// First is the same load over the outage's first Share.Window.
	First float64
	// Peak is the highest load over any Share.Window of the span of Load,
	// windows starting at multiples of Share.Window/10.
	Peak float64
	// React is the time from the start of the outage to the first answer of
	// the dependency that says not to retry because its RetryShare is over;
	// -1 if there is none.
	React time.Duration
	// HealthyFailed is the share of the requests that failed during the
	// healthy span, in [0, 1].
	HealthyFailed float64
	// Refused is the share of the dependency's failing answers during the
	// healthy span that said not to retry because its RetryShare was over,
	// in [0, 1]: retries a healthy service loses.
	Refused float64
}

// ServerShareResult is the outcome of [ServerShare] for one policy.
type ServerShareResult struct {
	// Policy is the contender's name.
	Policy string
	// Points holds one point per scenario, in the order of
	// ServerShareConfig.Scenarios.
	Points []SharePoint
	// Events is the number of calls simulated, over every scenario and
	// both variants.
	Events int64
}

// checkShare checks a RetryShare configuration by building one, and
// refuses a clock of the caller's own.
func checkShare(workload string, cfg retryshare.Config) error {
	if cfg.Now != nil {
		return cfgErr(workload, "Share.Now", "set: want nil, the simulator runs the RetryShare on its virtual clock")
	}
	if _, err := retryshare.New(cfg); err != nil {
		return cfgErr(workload, "Share", "%v", err)
	}
	return nil
}

// ShareDefaults returns cfg with its zero fields filled in with the
// defaults that retryshare.Config's comments give, as retryshare.New fills
// them (a test holds the two to agree).
func ShareDefaults(cfg retryshare.Config) retryshare.Config {
	cfg.Threshold, cfg.Window, cfg.MinRetries = cmp.Or(cfg.Threshold, 0.1), cmp.Or(cfg.Window, 10*time.Second), cmp.Or(cfg.MinRetries, 2)
	cfg.Burst, cfg.MaxRoutes, cfg.Callers = cmp.Or(cfg.Burst, 4), cmp.Or(cfg.MaxRoutes, 100), cmp.Or(cfg.Callers, 64)
	return cfg
}

// requests is the number of requests of scenario sc, over both spans.
func (cfg ServerShareConfig) requests(sc ShareScenario) int64 {
	return cfg.healthy(sc) + int64(math.Ceil(float64(sc.Clients)*sc.Rate*cfg.Outage.Seconds()))
}

// healthy is the number of requests of the healthy span of sc, a whole
// number per client.
func (cfg ServerShareConfig) healthy(sc ShareScenario) int64 {
	c := int64(sc.Clients)
	return (int64(cfg.HealthyRequests) + c - 1) / c * c
}

// interval is the time between two requests of sc.
func (sc ShareScenario) interval() float64 {
	return float64(time.Second) / (float64(sc.Clients) * sc.Rate)
}

// Validate checks cfg for [ServerShare] with the given contenders, without
// running anything: every parameter in range, the budget and RetryShare
// configurations accepted by the library, at most [MaxServices] services
// per scenario, and a work estimate within [MaxWork]: per scenario, both
// variants, the calls that a budget per layer allows each chain (see
// budgetCalls).
func (cfg ServerShareConfig) Validate(contenders []Contender) error {
	const w = "server-share"
	if err := checkStack(w, contenders, cfg.Layers, cfg.Policy, cfg.Budget); err != nil {
		return err
	}
	if err := checkShare(w, cfg.Share); err != nil {
		return err
	}
	if len(cfg.Scenarios) == 0 || len(cfg.Scenarios) > MaxSweep {
		return cfgErr(w, "Scenarios", "%d scenarios: want 1 to MaxSweep = %d", len(cfg.Scenarios), MaxSweep)
	}
	for _, sc := range cfg.Scenarios {
		if !(sc.Rate > 0 && sc.Rate <= MaxRate) {
			return cfgErr(w, "Scenarios.Rate", "%v: want in (0, MaxRate = %g] requests per second", sc.Rate, MaxRate)
		}
		if sc.Clients < 1 || sc.Clients > (MaxServices-1)/cfg.Layers {
			return limitErr(w, "Scenarios.Clients", []string{"Layers"}, "%d clients × Layers %d + 1: want 1 to MaxServices = %d services", sc.Clients, cfg.Layers, MaxServices)
		}
	}
	if cfg.HealthyRequests < 0 {
		return cfgErr(w, "HealthyRequests", "%d: want >= 0", cfg.HealthyRequests)
	}
	if !(cfg.Background >= 0 && cfg.Background < 1) {
		return cfgErr(w, "Background", "%v: want in [0, 1)", cfg.Background)
	}
	win := ShareDefaults(cfg.Share).Window
	// Outage/2 < win is Outage < 2·win without its overflow (a Window
	// above MaxInt64/2, which retryshare accepts).
	if cfg.Outage/2 < win || cfg.Outage > 1e6*time.Second {
		return cfgErr(w, "Outage", "%v: want from twice Share.Window (%v: one to react, one measured) to 1e6 s", cfg.Outage, win)
	}
	if n := seriesLen(cfg.Outage, win/10); n > MaxSeries {
		return limitErr(w, "Outage", []string{"Share.Window"}, "%v is %d buckets of Share.Window/10, above the limit MaxSeries = %d", cfg.Outage, n, MaxSeries)
	}
	b := BudgetDefaults(cfg.Budget)
	var events int64
	for _, sc := range cfg.Scenarios {
		// The healthy span lasts HealthyRequests/(Clients·Rate) s.
		t := float64(cfg.healthy(sc))*sc.interval()/float64(time.Second) + cfg.Outage.Seconds()
		if t > 2e6 {
			return cfgErr(w, "HealthyRequests", "%d at %g requests/s in all: the healthy span and the outage last %.0f s, want at most 2e6 s", cfg.HealthyRequests, float64(sc.Clients)*sc.Rate, t)
		}
		perClient := float64(cfg.requests(sc)) / float64(sc.Clients)
		chain := min(budgetTree(perClient, t, cfg.Policy.MaxAttempts, cfg.Layers, b), perClient*oneLayerCalls(cfg.Layers, cfg.Policy.MaxAttempts))
		events = addSat(events, mulSat(2*int64(sc.Clients), satInt(chain)))
	}
	events = mulSat(events, int64(len(contenders)))
	return checkEvents(w, "Scenarios", []string{"Layers", "Policy.MaxAttempts", "HealthyRequests", "Outage", "contenders"}, events, EventCost[w], fmt.Sprintf("the calls that a budget per layer allows %d scenarios of chains of %d layers of Policy.MaxAttempts %d, over HealthyRequests %d and Outage %v, × 2 variants × %d policies",
		len(cfg.Scenarios), cfg.Layers, cfg.Policy.MaxAttempts, cfg.HealthyRequests, cfg.Outage, len(contenders)))
}

// oneLayerCalls bounds the calls of one request through a chain of layers
// whose answers say not to retry when a loop retried (the library's rule):
// a layer retries an answer only when the service below made one attempt,
// whose own call below made one, and so on down, so every attempt but a
// layer's last is a single chain of calls. For a call at layer k of L,
// T(k) = (A-1)·(L-k+1) + 1 + T(k+1) calls below it, T(L) = A; a request
// makes 1 + T(1). It saturates at 1e300.
func oneLayerCalls(layers, attempts int) float64 {
	a := float64(attempts)
	t := a
	for k := layers - 1; k >= 1; k-- {
		t = min((a-1)*float64(layers-k+1)+1+t, 1e300)
	}
	return 1 + t
}

// satInt rounds v up to an int64, saturating.
func satInt(v float64) int64 {
	if v >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(math.Ceil(v))
}

// ServerShare simulates fleets of chains of services over a dependency,
// every call made with the library's own code: each of a chain's Layers
// services serves a call with a [backoff.Retrier] over the service below
// (the contender's policy with its delays replaced by zero, a
// [backoff.Budget] of its own), the last calling the dependency. Every
// service and the dependency count their incoming requests in a
// [retryshare.Share] of their own, each request a retry when it is its
// caller's second attempt or later. A failing answer says not to retry when
// the service's loop gave up after retrying, stood back or was refused by
// its budget (the mark that backoffhttp.Handler reads), or when its
// RetryShare is over; a caller's function then returns an error that
// matches [backoff.ErrRetriedBelow], as backoffhttp's does for such an
// answer, and the dependency's answer says so only when its RetryShare is
// over. Requests arrive at the chains in turn, Clients·Rate per second in
// all; as in BudgetAmplification, each request's calls happen at its
// arrival instant, on the virtual clock of every budget and RetryShare.
//
// The dependency fails each call with probability Background during the
// healthy span (the first HealthyRequests requests), then every call for
// Outage. Each scenario runs twice, with and without the RetryShares.
//
// It refuses cfg as [ServerShareConfig.Validate] does. A policy that has not
// given up after Policy.MaxAttempts calls is reported as an error.
func ServerShare(cfg ServerShareConfig, contenders []Contender, seed uint64) ([]ServerShareResult, error) {
	if err := cfg.Validate(contenders); err != nil {
		return nil, err
	}
	type runOut struct {
		run    ShareRun
		events int64
	}
	p := plan[struct{}, runOut]{
		workload: "server-share", contenders: contenders, runs: 2 * len(cfg.Scenarios), seed: seed, policy: cfg.Policy, progress: cfg.Progress,
		coords: func(r int) []uint64 { return []uint64{8, uint64(r / 2)} }, // both variants draw from the same streams
		weight: func(r int) int64 { return cfg.requests(cfg.Scenarios[r/2]) },
		run: func(u *unit, _ *struct{}) (runOut, error) {
			s, err := newShareChains(cfg, cfg.Scenarios[u.r/2], u, u.r%2 == 0)
			if err != nil {
				return runOut{}, err
			}
			run, err := s.simulate()
			return runOut{run, s.events}, err
		},
	}
	out, err := p.execute()
	if err != nil {
		return nil, err
	}
	res := make([]ServerShareResult, len(contenders))
	for ci, c := range contenders {
		r := ServerShareResult{Policy: c.Name}
		for i, sc := range cfg.Scenarios {
			with, without := out[ci][2*i], out[ci][2*i+1]
			r.Points = append(r.Points, SharePoint{ShareScenario: sc, With: with.run, Without: without.run})
			r.Events += with.events + without.events
		}
		res[ci] = r
	}
	return res, nil
}

// answer is a service's answer to one call.
type answer uint8

const (
	answerOK      answer = iota
	answerFailed         // retry it if you will
	answerRetried        // do not retry: a loop here retried, stood back or was refused
	answerShare          // do not retry: this service's RetryShare is over
)

// errDontRetry is what a caller's function returns for an answer that says
// not to retry, as backoffhttp's error for such a response does.
var errDontRetry = fmt.Errorf("sim: the server said not to retry: %w", backoff.ErrRetriedBelow)

// shareChains runs one variant of one scenario.
type shareChains struct {
	cfg      ServerShareConfig
	sc       ShareScenario
	u        *unit
	clock    *virtualClock
	retriers []backoff.Retrier   // Clients·Layers, chain by chain
	shares   []*retryshare.Share // the same, then the dependency's; nil without
	callers  []string            // chain c's caller key, as the dependency sees it
	limit    limitCheck
	fail     func() bool // whether the dependency fails a call
	events   int64
	// Measures: calls at the dependency and requests per bucket of the
	// outage; the healthy span's counts.
	width                        time.Duration
	bottom, requests             []int64
	inOutage                     bool
	start                        time.Duration // of the outage
	bucket                       int
	react                        time.Duration
	healthyFailed, failing, told int64
}

func newShareChains(cfg ServerShareConfig, sc ShareScenario, u *unit, with bool) (*shareChains, error) {
	clock := &virtualClock{}
	n := sc.Clients * cfg.Layers
	win := ShareDefaults(cfg.Share).Window
	s := &shareChains{cfg: cfg, sc: sc, u: u, clock: clock, retriers: make([]backoff.Retrier, n), limit: limitCheck{limit: cfg.Policy.MaxAttempts}, react: -1, width: win / 10}
	pol := zeroDelays(u.pol, &s.limit)
	for i := range s.retriers {
		b, err := newBudget(cfg.Budget, clock)
		if err != nil {
			return nil, err
		}
		s.retriers[i] = backoff.Retrier{Policy: pol, Budget: b}
	}
	if with {
		share := cfg.Share
		share.Now = clock.now
		s.shares = make([]*retryshare.Share, n+1)
		s.callers = make([]string, sc.Clients)
		for c := range s.callers {
			s.callers[c] = strconv.Itoa(c)
		}
		for i := range s.shares {
			r, err := retryshare.New(share)
			if err != nil {
				return nil, err
			}
			s.shares[i] = r
		}
	}
	nb := seriesLen(cfg.Outage, s.width)
	s.bottom, s.requests = make([]int64, nb), make([]int64, nb)
	return s, nil
}

// simulate runs every request of the scenario and returns the measures.
func (s *shareChains) simulate() (ShareRun, error) {
	healthy := s.cfg.healthy(s.sc)
	total := s.cfg.requests(s.sc)
	step := s.sc.interval()
	progress := counter{u: s.u}
	s.fail = func() bool { return s.u.env.Float64() < s.cfg.Background }
	for i := range total {
		s.clock.t = time.Duration(float64(i) * step)
		if i == healthy {
			s.start = s.clock.t
			s.inOutage = true
			s.fail = func() bool { return true }
		}
		if s.inOutage {
			// The last request arrives before the outage's end: at most
			// the series' last bucket, rounding included.
			s.bucket = min(int((s.clock.t-s.start)/s.width), len(s.requests)-1)
			s.requests[s.bucket]++
		}
		a := s.serve(int(i%int64(s.sc.Clients)), 1, 1)
		if s.limit.err != nil {
			return ShareRun{}, s.limit.err
		}
		if !s.inOutage && a != answerOK {
			s.healthyFailed++
		}
		progress.tick()
	}
	progress.flush()
	r := ShareRun{React: s.react, HealthyFailed: ratio(s.healthyFailed, healthy), Refused: ratio(s.told, s.failing)}
	r.First = ratio(sum(s.bottom[:10]), sum(s.requests[:10]))
	r.Load = ratio(sum(s.bottom[10:]), sum(s.requests[10:]))
	r.Peak = math.NaN()
	for i := 10; i+10 <= len(s.bottom); i++ {
		if l := ratio(sum(s.bottom[i:i+10]), sum(s.requests[i:i+10])); !(l <= r.Peak) {
			r.Peak = l
		}
	}
	return r, nil
}

// ratio is a/b, NaN when b is 0.
func ratio(a, b int64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return float64(a) / float64(b)
}

func sum(v []int64) (n int64) {
	for _, x := range v {
		n += x
	}
	return n
}

// serve answers one call, the attempt-th of its caller, at layer (1 = top;
// Layers+1 = the dependency) of chain c.
func (s *shareChains) serve(c, layer, attempt int) answer {
	s.events++
	var share *retryshare.Share
	if s.shares != nil {
		share = s.shares[len(s.shares)-1] // the dependency's, shared by the chains
		if layer <= s.cfg.Layers {
			share = s.shares[c*s.cfg.Layers+layer-1]
		}
		share.Record("", s.callers[c], attempt > 1)
	}
	if layer > s.cfg.Layers {
		if s.inOutage {
			s.bottom[s.bucket]++
		}
		if !s.fail() {
			return answerOK
		}
		over := share != nil && share.Refuse("", s.callers[c])
		if !s.inOutage {
			s.failing++
			if over {
				s.told++
			}
		}
		if over {
			if s.inOutage && s.react < 0 {
				s.react = s.clock.t - s.start
			}
			return answerShare
		}
		return answerFailed
	}
	n := 0
	err := s.retriers[c*s.cfg.Layers+layer-1].Do(context.Background(), func(context.Context) error {
		n++
		switch s.serve(c, layer+1, n) {
		case answerOK:
			return nil
		case answerFailed:
			return errFailed
		}
		return errDontRetry
	})
	switch {
	case err == nil:
		return answerOK
	case backoff.Retried(err): // the service's failure is its loop's give-up
		return answerRetried
	case share != nil && share.Refuse("", s.callers[c]):
		return answerShare
	}
	return answerFailed
}
