package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/retryshare"
)

// This file holds [ShareFleet]: the scenarios of issue 33 (herds,
// replicas behind a balancer, routes, random failures, a caller that lies),
// each a fleet of clients whose every request is a retry loop of the
// contender's policy, over replicas of a server that each decide their
// failing answers with a [retryshare.Share] of their own, on the virtual
// clock, as backoffhttp.Handler does.

// record counts one request at a replica when its answer is written, as
// backoffhttp.Handler does (it reads the route, the pattern that matched,
// then): caller is the client's connection, retry whether its attempt
// header says 2 or more. With decide, below, it is the one place where the
// simulator uses the Share's API.
func record(s *retryshare.Share, route, caller string, retry bool) {
	s.Record(route, caller, retry)
}

// decide decides a failing answer of a replica, just recorded, as
// backoffhttp.Handler does: true means the answer says "don't retry".
func decide(s *retryshare.Share, route, caller string) bool {
	return s.Refuse(route, caller)
}

// admit decides a retry arriving at a replica, as backoffhttp.Handler
// does: false means it is refused at once, with "don't retry", before it
// takes any capacity, and counted by Admit.
func admit(s *retryshare.Share, route, caller string) bool {
	return s.Admit(route, caller)
}

// The limits of ShareFleet, besides [MaxWork] and [MaxRate].
const (
	// MaxFleetClients bounds the callers of one row of [ShareFleet], a
	// caller key each.
	MaxFleetClients = 1 << 20
	// MaxFleetMemory bounds the memory of one row of [ShareFleet], in
	// bytes, by its estimate (see [ShareFleetConfig.Validate]): its Shares,
	// its caller keys, and a pending event for every request it may send,
	// the most that can be in flight at once. Rows run on up to GOMAXPROCS
	// goroutines at once.
	MaxFleetMemory = 128 << 20
)

// Memory estimates of ShareFleet, in bytes: a caller key, a pending
// event, and a Share, whose caller slots and route windows each hold a
// window of ten buckets, made as they are first used (a test checks that
// a Share with every slot and route in use takes no more).
const (
	fleetKeyBytes    = 48 + 8 // and the client's memory (ShareFleetConfig.Memory)
	fleetEventBytes  = 48
	shareBaseBytes   = 1024
	shareWindowBytes = 320
)

// shareBytes bounds the memory of one Share of cfg that counts routes
// routes.
func shareBytes(cfg retryshare.Config, routes int) float64 {
	d := ShareDefaults(cfg)
	return shareBaseBytes + float64(d.Callers+min(routes, d.MaxRoutes)+1)*shareWindowBytes
}

// FleetRow is one scenario of [ShareFleet]: Clients send requests through
// a balancer to Replicas servers. A row runs with the replicas' Shares and,
// when it has no outage, once more without them.
type FleetRow struct {
	// Group labels the row in tables: "herd", "replicas", "routes",
	// "failures", "threshold" or "liar"; the simulator does not read it.
	Group string
	// Clients is the number of callers of the measured traffic, from 1 to
	// [MaxFleetClients]: a Poisson request's caller is one of them drawn
	// uniformly; with Burst every client sends one request per burst.
	Clients int
	// Replicas is the number of servers, at least 1 (see [MaxFleetMemory]), each with
	// a Share of its own; every attempt goes to one of them, drawn
	// uniformly, or in turn when RoundRobin is set.
	Replicas   int
	RoundRobin bool
	// Rate is the measured traffic in requests per second per replica,
	// Poisson arrivals (fixed intervals with ShareFleetConfig.Fixed), so
	// Rate·Replicas in all, at most [MaxRate]; zero with Burst.
	Rate float64
	// Burst, when positive, replaces Rate: every client sends one request
	// at each multiple of Burst, all at once (a cron, a reconnect storm).
	Burst time.Duration
	// Outage makes every answer to the measured traffic fail from Warmup
	// for ShareFleetConfig.Outage; arrivals stop at its end. Without it the
	// row measures Requests requests (their expected number) after Warmup.
	Outage   bool
	Requests int
	// Fail, in [0, 1), is the probability that an answer to the measured
	// traffic fails outside the outage.
	Fail float64
	// Healthy, when positive, adds a second route at Healthy requests per
	// second per replica that never fails, beside the measured route: one
	// Share per replica counts both, or one Share per route and replica
	// with PerRoute.
	Healthy  float64
	PerRoute bool
	// Liar, in [0, 1), adds one more caller that sends this share of all
	// the measured route's requests, each saying it is a retry (attempt 2)
	// and never retried, at the same failure rate.
	Liar float64
	// Threshold, when positive, replaces ShareFleetConfig.Share.Threshold.
	Threshold float64
}

// FleetRun is the outcome of one variant of a [FleetRow]. Loads count the
// measured traffic (the measured route's, the liar's apart) by the time
// its calls reach the replicas; a figure with nothing to count is NaN.
type FleetRun struct {
	// Load is the calls reaching the replicas per request: over the
	// outage from one Share window after its start to its end, or over the
	// measured span without an outage.
	Load float64
	// First is the same over the outage's first Share window; NaN without
	// an outage.
	First float64
	// Success is the share of the measured requests (those sent in the
	// measured span) that succeeded, in [0, 1]; NaN with an outage.
	Success float64
	// Refused is the share of the failing answers to measured requests
	// that said "don't retry", in [0, 1].
	Refused float64
	// Requests is the number of measured requests.
	Requests int64
}

// FleetPoint is the outcome of [ShareFleet] for one row.
type FleetPoint struct {
	FleetRow
	// With is the row with every replica's Share; Without, for a row
	// without an outage, the same traffic with no Share (HasWithout).
	With, Without FleetRun
	HasWithout    bool
}

// ShareFleetResult is the outcome of [ShareFleet] for one policy.
type ShareFleetResult struct {
	// Policy is the contender's name.
	Policy string
	// Points holds one point per row, in the order of
	// ShareFleetConfig.Rows.
	Points []FleetPoint
	// Events is the number of events simulated (sends, arrivals and
	// answers), over every row and variant.
	Events int64
}

// shareWindow is the Share window of cfg, defaults filled in.
func (cfg ShareFleetConfig) shareWindow() time.Duration { return ShareDefaults(cfg.Share).Window }

// span is when row's arrivals stop.
func (cfg ShareFleetConfig) span(r FleetRow) time.Duration {
	if r.Outage {
		return cfg.Warmup + cfg.Outage
	}
	return cfg.Warmup + time.Duration(float64(r.Requests)/r.measuredRate()*float64(time.Second))
}

// measuredRate is the requests per second of r's measured traffic.
func (r FleetRow) measuredRate() float64 {
	if r.Burst > 0 {
		return float64(r.Clients) / r.Burst.Seconds()
	}
	return r.Rate * float64(r.Replicas)
}

// flows returns r's traffic: the measured route's, a healthy route's, a
// liar's.
func (cfg ShareFleetConfig) flows(r FleetRow) []flow {
	end := cfg.span(r)
	fs := []flow{{rate: r.Rate * float64(r.Replicas), burst: r.Burst, route: 0, outage: r.Outage, fail: r.Fail, measured: true, end: end}}
	if r.Healthy > 0 {
		fs = append(fs, flow{rate: r.Healthy * float64(r.Replicas), route: 1, end: end})
	}
	if r.Liar > 0 {
		fs = append(fs, flow{rate: r.measuredRate() * r.Liar / (1 - r.Liar), route: 0, liar: true, outage: r.Outage, fail: r.Fail, end: end})
	}
	return fs
}

// requests bounds the requests of r: per Poisson flow its mean plus ten
// standard deviations (and 10), per burst flow exactly.
func (cfg ShareFleetConfig) requests(r FleetRow) float64 {
	var n float64
	for _, f := range cfg.flows(r) {
		if f.burst > 0 {
			n += float64(r.Clients) * math.Ceil(f.end.Seconds()/f.burst.Seconds())
			continue
		}
		m := f.rate * f.end.Seconds()
		n += m + 10*math.Sqrt(m) + 10
	}
	return n
}

// variants is 2 for a row run with and without the Shares, 1 otherwise.
func (r FleetRow) variants() int {
	if r.Outage {
		return 1
	}
	return 2
}

// Validate checks cfg for [ShareFleet] with the given contenders, without
// running anything: every parameter in range, the Share configuration
// (with each row's Threshold) accepted by retryshare.New, each row within
// [MaxFleetClients] and [MaxFleetMemory] (its Shares, every replica's
// caller slots and routes in use, its caller keys, and a pending event per
// request it may send), and a work
// estimate within [MaxWork]: per row and variant, three events (a send, an
// arrival, an answer) per call, Policy.MaxAttempts calls per request.
func (cfg ShareFleetConfig) Validate(contenders []Contender) error {
	const w = "share-fleet"
	if err := checkContenders(w, contenders); err != nil {
		return err
	}
	if err := checkPolicy(w, cfg.Policy, false); err != nil {
		return err
	}
	if err := checkShare(w, cfg.Share); err != nil {
		return err
	}
	for _, d := range []struct {
		name     string
		min, max time.Duration
	}{{"Net", cfg.NetMin, cfg.NetMax}, {"Service", cfg.ServiceMin, cfg.ServiceMax}} {
		if d.min < 0 || d.max < d.min || d.max > time.Minute {
			return cfgErr(w, d.name+"Max", "[%v, %v]: want 0 <= %sMin <= %sMax <= 1m", d.min, d.max, d.name, d.name)
		}
	}
	if cfg.Memory.Span < 0 || cfg.Memory.Span > 1e6*time.Second {
		return cfgErr(w, "Memory.Span", "%v: want 0 to 1e6 s", cfg.Memory.Span)
	}
	if cfg.Warmup < 0 || cfg.Warmup > 1e6*time.Second {
		return cfgErr(w, "Warmup", "%v: want 0 to 1e6 s", cfg.Warmup)
	}
	win := cfg.shareWindow()
	// Outage/2 < win is Outage < 2·win without its overflow (a Window
	// above MaxInt64/2, which retryshare accepts).
	if cfg.Outage/2 < win || cfg.Outage > 1e6*time.Second {
		return cfgErr(w, "Outage", "%v: want from twice Share.Window (%v: one to react, one measured) to 1e6 s", cfg.Outage, win)
	}
	if len(cfg.Rows) == 0 || len(cfg.Rows) > MaxSweep {
		return cfgErr(w, "Rows", "%d rows: want 1 to MaxSweep = %d", len(cfg.Rows), MaxSweep)
	}
	var events int64
	for _, r := range cfg.Rows {
		if err := cfg.checkRow(r); err != nil {
			return err
		}
		calls := cfg.requests(r) * float64(cfg.Policy.MaxAttempts) * 3 * float64(r.variants())
		events = addSat(events, satInt(calls))
	}
	events = mulSat(events, int64(len(contenders)))
	return checkEvents(w, "Rows", []string{"Policy.MaxAttempts", "Outage", "contenders"}, events, EventCost[w],
		fmt.Sprintf("%d rows × 3 events per call × Policy.MaxAttempts %d × %d policies", len(cfg.Rows), cfg.Policy.MaxAttempts, len(contenders)))
}

// checkRow checks one row of cfg.
func (cfg ShareFleetConfig) checkRow(r FleetRow) error {
	const w = "share-fleet"
	if r.Clients < 1 || r.Clients > MaxFleetClients {
		return cfgErr(w, "Rows.Clients", "%d: want 1 to MaxFleetClients = %d", r.Clients, MaxFleetClients)
	}
	if r.Replicas < 1 || r.Replicas > MaxFleetMemory/shareBaseBytes {
		return cfgErr(w, "Rows.Replicas", "%d: want 1 to MaxFleetMemory / %d = %d", r.Replicas, shareBaseBytes, MaxFleetMemory/shareBaseBytes)
	}
	switch {
	case r.Burst < 0 || r.Burst > 0 && (r.Rate != 0 || r.Burst < time.Millisecond):
		return cfgErr(w, "Rows.Burst", "%v with Rate %v: want at least 1ms with Rate 0, or 0", r.Burst, r.Rate)
	case r.Burst == 0 && !(r.Rate > 0 && r.Rate*float64(r.Replicas) <= MaxRate):
		return cfgErr(w, "Rows.Rate", "%v per replica × %d replicas: want in (0, MaxRate = %g] requests per second", r.Rate, r.Replicas, float64(MaxRate))
	case !(r.Healthy >= 0 && r.Healthy*float64(r.Replicas) <= MaxRate):
		return cfgErr(w, "Rows.Healthy", "%v per replica × %d replicas: want in [0, MaxRate = %g] requests per second", r.Healthy, r.Replicas, float64(MaxRate))
	case !(r.Fail >= 0 && r.Fail < 1):
		return cfgErr(w, "Rows.Fail", "%v: want in [0, 1)", r.Fail)
	case !(r.Liar >= 0 && r.Liar < 1):
		return cfgErr(w, "Rows.Liar", "%v: want in [0, 1)", r.Liar)
	case r.Outage && r.Requests != 0 || !r.Outage && r.Requests < 1:
		return cfgErr(w, "Rows.Requests", "%d with Outage %v: want 0 with an outage, at least 1 without", r.Requests, r.Outage)
	}
	if r.Threshold != 0 {
		s := cfg.Share
		s.Threshold = r.Threshold
		if err := checkShare(w, s); err != nil {
			return err
		}
	}
	if t := cfg.span(r); t > 1e7*time.Second || t < 0 {
		return cfgErr(w, "Rows.Requests", "%d at %g requests/s: the row lasts %.0f s, want at most 1e7 s", r.Requests, r.measuredRate(), t.Seconds())
	}
	shares, routes := float64(r.Replicas), 1
	if r.Healthy > 0 {
		routes = 2
		if r.PerRoute {
			shares, routes = 2*shares, 1
		}
	}
	sc := cfg.Share
	mem := []struct {
		param string
		bytes float64
		what  string
	}{
		{"Rows.Replicas", shares * shareBytes(sc, routes), fmt.Sprintf("Shares: %.0f × %.0f bytes", shares, shareBytes(sc, routes))},
		{"Rows.Clients", float64(r.Clients+1) * fleetKeyBytes, fmt.Sprintf("%d caller keys", r.Clients+1)},
		{"Rows", cfg.requests(r) * fleetEventBytes, fmt.Sprintf("up to %.0f requests in flight", cfg.requests(r))},
	}
	total, top := 0.0, 0
	for i, m := range mem {
		total += m.bytes
		if m.bytes > mem[top].bytes {
			top = i
		}
	}
	if total > MaxFleetMemory {
		var also []string
		for i, m := range mem {
			if i != top {
				also = append(also, m.param)
			}
		}
		also = append(also, "Outage") // the requests depend on it
		return limitErr(w, mem[top].param, also, "a row of %s, %s and %s: about %.0f MiB, above the limit MaxFleetMemory = %d MiB",
			mem[0].what, mem[1].what, mem[2].what, total/(1<<20), MaxFleetMemory>>20)
	}
	return nil
}

// ShareFleet simulates every row of cfg for every contender, with the
// library's own code: every replica holds a [retryshare.Share] on the
// virtual clock (Config.Now) and, as backoffhttp.Handler does when an
// answer is written, records its request with its route and caller (a
// retry when its attempt is the second or later, or when the liar sends
// it) and, for a failing answer, asks the Share whether to say "don't
// retry". Every request is a
// retry loop of the contender's policy (a sequence per request, then
// NextDelay): it stops at a success, at an answer that says "don't retry"
// (an error that is [backoff.Retried], as backoffhttp's is, which a
// [backoff.Retrier] does not retry) and when the policy stops. An attempt
// travels to a replica (a network delay, uniform in [NetMin, NetMax]),
// waits for its answer (a service time, uniform in [ServiceMin,
// ServiceMax]; no queueing: spare capacity), and the answer travels back;
// a retry is sent its policy delay later, through the balancer again.
// Events are processed in virtual-time order, ties in the order they were
// scheduled; each row and variant draws from streams of its own, derived
// from the seed and the row's index, the same for both variants.
//
// It refuses cfg as [ShareFleetConfig.Validate] does. A policy that has
// not given up after Policy.MaxAttempts calls is reported as an error.
func ShareFleet(cfg ShareFleetConfig, contenders []Contender, seed uint64) ([]ShareFleetResult, error) {
	if err := cfg.Validate(contenders); err != nil {
		return nil, err
	}
	keys := callerKeys(cfg.Rows)
	type runOut struct {
		run    FleetRun
		events int64
	}
	// Two runs per row, the second (without) skipped for outage rows.
	p := plan[struct{}, runOut]{
		workload: "share-fleet", contenders: contenders, runs: 2 * len(cfg.Rows), seed: seed, policy: cfg.Policy, progress: cfg.Progress,
		coords: func(r int) []uint64 { return []uint64{9, uint64(r / 2)} }, // both variants draw from the same streams
		weight: func(r int) int64 {
			row := cfg.Rows[r/2]
			if r%2 == 1 && row.variants() == 1 {
				return 0
			}
			return int64(cfg.requests(row))
		},
		run: func(u *unit, _ *struct{}) (runOut, error) {
			row := cfg.Rows[u.r/2]
			if u.r%2 == 1 && row.variants() == 1 {
				return runOut{}, nil
			}
			f, err := newFleet(cfg, row, u, keys, u.r%2 == 0)
			if err != nil {
				return runOut{}, err
			}
			run, err := f.simulate()
			return runOut{run, f.events}, err
		},
	}
	out, err := p.execute()
	if err != nil {
		return nil, err
	}
	res := make([]ShareFleetResult, len(contenders))
	for ci, c := range contenders {
		r := ShareFleetResult{Policy: c.Name}
		for i, row := range cfg.Rows {
			with, without := out[ci][2*i], out[ci][2*i+1]
			r.Points = append(r.Points, FleetPoint{FleetRow: row, With: with.run, Without: without.run, HasWithout: row.variants() == 2})
			r.Events += with.events + without.events
		}
		res[ci] = r
	}
	return res, nil
}

// callerKeys returns the caller keys of the largest row's clients and,
// last, the liar's: connection addresses, as backoffhttp.Handler's default
// caller key (the request's RemoteAddr).
func callerKeys(rows []FleetRow) []string {
	n := 0
	for _, r := range rows {
		n = max(n, r.Clients)
	}
	keys := make([]string, n+1)
	for i := range n {
		keys[i] = fmt.Sprintf("10.%d.%d.%d:%d", i>>16&255, i>>8&255, i&255, 32768+i%28232)
	}
	keys[n] = "192.0.2.66:54321"
	return keys
}

// fleetRoutes are the route keys: the measured route, the healthy one.
var fleetRoutes = [2]string{"GET /fail", "GET /ok"}

// flow is one source of requests of a row.
type flow struct {
	rate     float64       // requests per second in all, Poisson (or fixed)
	burst    time.Duration // > 0: every client once per burst instead
	route    uint8
	liar     bool
	outage   bool    // fails every answer during the outage
	fail     float64 // failure probability outside it
	measured bool
	end      time.Duration // no arrival from here on
}

// Event kinds of a fleet.
const (
	evArrival uint8 = iota // a flow's next request (or burst) is sent
	evSend                 // a client sends a retry
	evReach                // an attempt reaches its replica
	evAnswer               // the replica answers
)

// fevent is a pending event of a fleet: a flow's next arrival, or the one
// pending event of a request in flight, which carries the request's state.
type fevent struct {
	t       time.Duration
	tie     uint64 // scheduling order, for ties
	kind    uint8
	flow    uint8
	class   uint8 // the request's span when sent: 0 warm-up, 1 first window, 2 measured
	refused bool  // the replica refused the retry as it arrived (admit)
	attempt int32
	replica int32
	caller  int32
	seq     int32 // the request's sequence in fleet.seqs, -1 for the policy itself
}

func (e *fevent) before(o *fevent) bool { return e.t < o.t || e.t == o.t && e.tie < o.tie }

// fqueue is the events of a simulation in time order, ties in the order
// scheduled.
type fqueue struct {
	heap fheap
	tie  uint64
}

// schedule adds e at time t.
func (q *fqueue) schedule(e fevent, t time.Duration) {
	e.t, e.tie = t, q.tie
	q.tie++
	q.heap.push(e)
}

// fheap is a binary min-heap of fevents.
type fheap []fevent

func (h *fheap) push(e fevent) {
	*h = append(*h, e)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !s[i].before(&s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

// fix restores the heap after its top changed.
func (h fheap) fix() {
	i, n := 0, len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h[r].before(&h[l]) {
			m = r
		}
		if !h[m].before(&h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// pop removes the top.
func (h *fheap) pop() {
	s := *h
	n := len(s) - 1
	s[0] = s[n]
	*h = s[:n]
	h.fix()
}

// fleet runs one variant of one row.
type fleet struct {
	cfg    ShareFleetConfig
	row    FleetRow
	u      *unit
	keys   []string
	clock  *virtualClock
	shares []*retryshare.Share // nil without; per replica, or per replica and route
	flows  []flow
	fqueue
	// Random streams of their own, from the environment's, so that both
	// variants of a row see the same arrivals (times and callers) and
	// the same sequence of failure draws: arrivals, failures.
	arr, fails *rand.Rand
	rr         int
	limit      int
	seqs       []backoff.Policy // sequences of requests in flight, for a Sequencer
	free       []int32
	events     int64
	// until holds, per client, when its memory of a "don't retry" ends
	// (nil without ShareFleetConfig.Memory).
	until []time.Duration
	// The outage and the measured spans.
	outStart, outEnd, firstEnd time.Duration
	measureFrom, measureTo     time.Duration
	// Counts: calls and first attempts of the measured traffic reaching
	// the replicas, in the first window and in the measured span; the
	// measured requests' outcomes.
	firstCalls, firstReqs, calls, reqs int64
	measured, ok, failing, refused     int64
	progress                           counter
	ticked, weight                     int64
}

func newFleet(cfg ShareFleetConfig, row FleetRow, u *unit, keys []string, with bool) (*fleet, error) {
	f := &fleet{cfg: cfg, row: row, u: u, keys: keys, clock: &virtualClock{}, flows: cfg.flows(row), limit: cfg.Policy.MaxAttempts}
	f.progress = counter{u: u}
	f.arr = rand.New(rand.NewPCG(u.env.Uint64(), u.env.Uint64()))
	f.fails = rand.New(rand.NewPCG(u.env.Uint64(), u.env.Uint64()))
	f.weight = int64(cfg.requests(row))
	if cfg.Memory.Span > 0 {
		f.until = make([]time.Duration, row.Clients)
	}
	win := cfg.shareWindow()
	if row.Outage {
		f.outStart, f.outEnd = cfg.Warmup, cfg.Warmup+cfg.Outage
		f.firstEnd = f.outStart + win
		f.measureFrom, f.measureTo = f.firstEnd, f.outEnd
	} else {
		f.outStart, f.outEnd = -1, -1
		f.firstEnd = -1
		f.measureFrom, f.measureTo = cfg.Warmup, cfg.span(row)
	}
	if with {
		sc := cfg.Share
		if row.Threshold != 0 {
			sc.Threshold = row.Threshold
		}
		sc.Now = f.clock.now
		n := row.Replicas
		if f.perRoute() {
			n *= 2
		}
		f.shares = make([]*retryshare.Share, n)
		for i := range f.shares {
			s, err := retryshare.New(sc)
			if err != nil {
				return nil, err
			}
			f.shares[i] = s
		}
	}
	return f, nil
}

func (f *fleet) perRoute() bool { return f.row.PerRoute && f.row.Healthy > 0 }

// uniform draws a duration uniformly in [lo, hi].
func (f *fleet) uniform(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(f.u.env.Int64N(int64(hi-lo)+1))
}

func (f *fleet) net() time.Duration { return f.uniform(f.cfg.NetMin, f.cfg.NetMax) }

// gap is the time to a flow's next Poisson (or fixed) arrival,
// saturating at the largest Duration (a flow whose rate is tiny: after it,
// the flow has ended).
func (f *fleet) gap(fl *flow) time.Duration {
	if f.cfg.Fixed {
		return satDuration(float64(time.Second) / fl.rate)
	}
	return satDuration(f.arr.ExpFloat64() / fl.rate * float64(time.Second))
}

// satDuration converts ns, at least 0, to a Duration, saturating at the
// largest one (time.Duration(ns) of a float at or above 2⁶³ is
// implementation-specific: the smallest Duration on amd64).
func satDuration(ns float64) time.Duration {
	if ns >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(ns)
}

// class is the span of a request sent at t.
func (f *fleet) class(t time.Duration) uint8 {
	switch {
	case t >= f.measureFrom && t < f.measureTo:
		return 2
	case t >= f.outStart && t < f.firstEnd:
		return 1
	}
	return 0
}

// simulate runs the row and returns its measures.
func (f *fleet) simulate() (FleetRun, error) {
	for i := range f.flows {
		f.schedule(fevent{kind: evArrival, flow: uint8(i)}, 0)
	}
	for len(f.heap) > 0 {
		e := f.heap[0]
		f.clock.t = e.t
		f.events++
		switch e.kind {
		case evArrival:
			f.arrive(&f.flows[e.flow], e)
		case evSend:
			f.heap.pop()
			f.send(e)
		case evReach:
			f.heap.pop()
			f.reach(e)
		case evAnswer:
			f.heap.pop()
			if err := f.answer(e); err != nil {
				return FleetRun{}, err
			}
		}
	}
	f.u.advance(f.weight - f.ticked)
	return FleetRun{
		Load:     ratio(f.calls, f.reqs),
		First:    ratio(f.firstCalls, f.firstReqs),
		Success:  f.success(),
		Refused:  ratio(f.refused, f.failing),
		Requests: f.measured,
	}, nil
}

func (f *fleet) success() float64 {
	if f.row.Outage {
		return math.NaN()
	}
	return ratio(f.ok, f.measured)
}

// arrive sends a flow's next request, or every client's for a burst, and
// schedules the flow's next arrival in place of the top event e.
func (f *fleet) arrive(fl *flow, e fevent) {
	t := e.t
	step := fl.burst
	if step <= 0 {
		step = f.gap(fl)
	}
	next := time.Duration(addSat(int64(t), int64(step))) // at most the largest Duration, past every end
	if next < fl.end {
		f.heap[0].t, f.heap[0].tie = next, f.tie
		f.tie++
		f.heap.fix()
	} else {
		f.heap.pop()
	}
	req := fevent{flow: e.flow, class: f.class(t), attempt: 1, seq: -1}
	if fl.liar {
		req.caller = int32(len(f.keys) - 1)
		req.attempt = 2 // it says so, and is never retried
	}
	if fl.burst > 0 {
		for c := range f.row.Clients {
			req.caller = int32(c)
			f.start(req)
		}
		return
	}
	if !fl.liar {
		req.caller = int32(f.arr.IntN(f.row.Clients))
	}
	f.start(req)
}

// start sends the first attempt of a new request.
func (f *fleet) start(req fevent) {
	if f.ticked < f.weight {
		f.ticked++
		f.progress.pending++
		if f.progress.pending == progressChunk {
			f.u.advance(f.progress.pending)
			f.progress.pending = 0
		}
	}
	if _, ok := f.u.pol.(backoff.Sequencer); ok && !f.flows[req.flow].liar {
		req.seq = f.newSeq()
	}
	f.send(req)
}

func (f *fleet) newSeq() int32 {
	s := startSequence(f.u.pol)
	if n := len(f.free); n > 0 {
		i := f.free[n-1]
		f.free = f.free[:n-1]
		f.seqs[i] = s
		return i
	}
	f.seqs = append(f.seqs, s)
	return int32(len(f.seqs) - 1)
}

// send picks the attempt's replica and schedules its arrival there.
func (f *fleet) send(e fevent) {
	if f.row.RoundRobin {
		e.replica = int32(f.rr)
		f.rr = (f.rr + 1) % f.row.Replicas
	} else {
		e.replica = int32(f.u.env.IntN(f.row.Replicas))
	}
	e.kind = evReach
	f.schedule(e, f.clock.t+f.net())
}

// share returns the Share that counts e at its replica.
func (f *fleet) share(e *fevent) *retryshare.Share {
	if f.perRoute() {
		return f.shares[2*int(e.replica)+int(f.flows[e.flow].route)]
	}
	return f.shares[e.replica]
}

// reach counts an attempt reaching its replica and schedules the answer.
func (f *fleet) reach(e fevent) {
	fl := &f.flows[e.flow]
	if fl.measured {
		t := f.clock.t
		switch {
		case t >= f.measureFrom && t < f.measureTo:
			f.calls++
			if e.attempt == 1 {
				f.reqs++
			}
		case t >= f.outStart && t < f.firstEnd:
			f.firstCalls++
			if e.attempt == 1 {
				f.firstReqs++
			}
		}
	}
	e.kind = evAnswer
	if f.shares != nil && e.attempt > 1 && !admit(f.share(&e), fleetRoutes[fl.route], f.keys[e.caller]) {
		e.refused = true
		f.schedule(e, f.clock.t) // answered at once
		return
	}
	f.schedule(e, f.clock.t+f.uniform(f.cfg.ServiceMin, f.cfg.ServiceMax))
}

// answer decides the replica's answer to e and what its client does next.
func (f *fleet) answer(e fevent) error {
	fl := &f.flows[e.flow]
	t := f.clock.t
	counted := fl.measured && e.class == 2
	if f.shares != nil && !e.refused {
		record(f.share(&e), fleetRoutes[fl.route], f.keys[e.caller], e.attempt > 1)
	}
	failed := e.refused || fl.outage && t >= f.outStart && t < f.outEnd
	if !failed && fl.fail > 0 {
		failed = f.fails.Float64() < fl.fail
	}
	if !failed {
		if counted {
			f.measured++
			f.ok++
		}
		if f.until != nil && f.cfg.Memory.ForgetOnSuccess && !fl.liar {
			f.until[e.caller] = 0
		}
		f.end(e)
		return nil
	}
	refused := e.refused || f.shares != nil && decide(f.share(&e), fleetRoutes[fl.route], f.keys[e.caller])
	if counted {
		f.failing++
		if refused {
			f.refused++
		}
	}
	if fl.liar { // it never retries
		f.fail(e, counted)
		return nil
	}
	if f.until != nil {
		switch {
		case refused:
			f.until[e.caller] = t + f.cfg.Memory.Span
		case t < f.until[e.caller]:
			refused = true // the client remembers the service's "don't retry"
		}
	}
	seq := f.u.pol
	if e.seq >= 0 {
		seq = f.seqs[e.seq]
	}
	d, ok := retryAfter(seq, int(e.attempt), refused)
	if !ok {
		f.fail(e, counted)
		return nil
	}
	if int(e.attempt) >= f.limit {
		return fmt.Errorf("did not give up after Policy.MaxAttempts = %d calls", f.limit)
	}
	e.attempt++
	e.kind = evSend
	f.schedule(e, t+f.net()+d)
	return nil
}

// retryAfter is a request's loop after a failing answer to its
// attempt-th call, by a [backoff.Retrier]'s rules: the delay before its
// next call, or false when the loop stops. An answer that says "don't
// retry" is an error that is [backoff.Retried], as backoffhttp's is, which
// stops the loop before the policy is asked; otherwise seq decides.
func retryAfter(seq backoff.Policy, attempt int, refused bool) (time.Duration, bool) {
	err := errFailed
	if refused {
		err = errDontRetry
	}
	if backoff.Retried(err) {
		return 0, false
	}
	d, stop := seq.NextDelay(attempt, err)
	return max(d, 0), stop == nil
}

// fail ends a request that failed.
func (f *fleet) fail(e fevent, counted bool) {
	if counted {
		f.measured++
	}
	f.end(e)
}

// end releases a finished request's sequence.
func (f *fleet) end(e fevent) {
	if e.seq >= 0 {
		f.seqs[e.seq] = nil
		f.free = append(f.free, e.seq)
	}
}
