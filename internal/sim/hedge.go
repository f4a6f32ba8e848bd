package sim

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/hedge"
)

// The hedge workload (issue 29): closed-loop clients send requests to a
// server whose latency has a tail, through a hedging client model that
// uses a real [hedge.Delay] and a real [backoff.Budget] on the virtual
// clock, and cancels the losers.

// HedgeServer is the server of one hedge table: every copy of a request
// takes a service time drawn on its own. Its body is lognormal (median
// Median, log standard deviation Sigma); with probability SlowShare a
// copy is a straggler instead: uniform in [SlowMin, SlowMax] when SlowMax
// is not zero, else the body times SlowTimes. Every service time is capped
// at [MaxHedgeLatency].
type HedgeServer struct {
	Name      string
	Median    time.Duration // (0, MaxHedgeLatency]
	Sigma     float64       // [0, 5]
	SlowShare float64       // [0, 1]
	SlowMin   time.Duration // 0 <= SlowMin <= SlowMax <= MaxHedgeLatency
	SlowMax   time.Duration
	SlowTimes float64 // [1, 1e6] when SlowMax is zero and SlowShare is not
	// Capacity, when not zero (up to MaxHedgeConcurrency), is the copies
	// served at once; the others wait in a FIFO queue. A copy's service
	// time is then multiplied by 1 + Slowdown·(busy/Capacity)², busy
	// counting the copies in service when it starts (itself included):
	// near capacity every request is slow. Slowdown is in [0, 100].
	Capacity int
	Slowdown float64
}

// HedgeClient is one row of a hedge table: how the clients hedge. At most
// one hedge per request (two copies in all). Fixed, when not zero, is the
// delay before the hedge; otherwise MaxExtraLoad, when not zero, makes the
// delay adaptive: a [hedge.Delay] with that MaxExtraLoad, shared by the
// clients, observing the first copy's latency (its time so far when the
// hedge won first, as backoffhttp does); both zero: no hedging.
// Budget: the hedge withdraws from a [backoff.Budget] whose Ratio is
// MaxExtraLoad (every request deposits), and is not sent when refused.
type HedgeClient struct {
	Name         string
	Fixed        time.Duration // [0, MaxHedgeLatency]
	MaxExtraLoad float64       // 0 or (0, 0.5]
	Budget       bool          // needs MaxExtraLoad
}

// HedgeConfig parameterises [Hedge].
type HedgeConfig struct {
	// Servers are the tables, each run for every row of Clients.
	Servers []HedgeServer
	Rows    []HedgeClient
	// Concurrency is the closed-loop clients, 1 to MaxHedgeConcurrency:
	// each sends its next request when the last one is answered.
	Concurrency int
	// Requests per row and server, at least 1.
	Requests int
	// Window and MinSamples configure every adaptive hedge.Delay (zero:
	// hedge's defaults). BudgetReserve and BudgetBurst are the budget's
	// Reserve and Burst (zero: the library's defaults).
	Window        time.Duration
	MinSamples    int
	BudgetReserve float64
	BudgetBurst   int
	// Progress, if not nil, receives reports while the workload runs.
	Progress func(Progress)
}

// MaxHedgeLatency caps every service time of the hedge workload, and
// MaxHedgeConcurrency its clients and capacity.
const (
	MaxHedgeLatency     = time.Minute
	MaxHedgeConcurrency = 10_000
)

// PeersHedgeServer is the workload of the peers' loopback measurements
// (docs/simulations.md): 98 % lognormal, median 2 ms, sigma 0.5; 2 %
// stragglers uniform in 50-200 ms.
func PeersHedgeServer() HedgeServer {
	return HedgeServer{Name: "peers' tail: 98% lognormal(2ms, 0.5), 2% 50-200ms", Median: 2 * time.Millisecond, Sigma: 0.5,
		SlowShare: 0.02, SlowMin: 50 * time.Millisecond, SlowMax: 200 * time.Millisecond}
}

// DefaultHedge returns three servers (the peers' tail; issue 29's: 1 % of
// requests 50 times slower; a brownout: the peers' tail at 8 copies at
// once, every copy up to 5 times slower near capacity) and six rows (no
// hedging; a fixed 10 ms; adaptive p95 and p97, each without and with the
// budget), 16 clients, 20,000 requests per row, the budget's reserve
// 1/s and burst 10.
func DefaultHedge() HedgeConfig {
	peers := PeersHedgeServer()
	issue := HedgeServer{Name: "issue 29: lognormal(2ms, 0.5), 1% 50x slower", Median: 2 * time.Millisecond, Sigma: 0.5, SlowShare: 0.01, SlowTimes: 50}
	brown := peers
	brown.Name, brown.Capacity, brown.Slowdown = "brownout: peers' tail, 8 at once, up to 5x slower near capacity", 8, 4
	return HedgeConfig{
		Servers: []HedgeServer{peers, issue, brown},
		Rows: []HedgeClient{
			{Name: "no hedging"},
			{Name: "fixed 10ms", Fixed: 10 * time.Millisecond},
			{Name: "adaptive p95", MaxExtraLoad: 0.05},
			{Name: "adaptive p95 + budget 5%", MaxExtraLoad: 0.05, Budget: true},
			{Name: "adaptive p97", MaxExtraLoad: 0.03},
			{Name: "adaptive p97 + budget 3%", MaxExtraLoad: 0.03, Budget: true},
		},
		Concurrency:   16,
		Requests:      20_000,
		BudgetReserve: 1,
		BudgetBurst:   10,
	}
}

// HedgeRow is one row's measurement: the percentiles of the clients'
// latencies (request sent to first answer, nearest rank), Extra = copies
// the server received / requests − 1, Bound = the share the budget allows
// over the run, (Ratio·requests + Reserve·duration + Burst) / requests (0
// without a budget), and the hedges refused by the budget and the copies
// cancelled.
type HedgeRow struct {
	HedgeClient
	P50, P99, P999 time.Duration
	Extra, Bound   float64
	Refused        int64
	Cancelled      int64
	Duration       time.Duration // virtual time the row took
}

// HedgeResult holds one server's rows.
type HedgeResult struct {
	Server HedgeServer
	Rows   []HedgeRow
	Events int64
}

// hedgeCostEvents is the estimate of events per request: a copy's
// service, a hedge's, the timer, the next request.
const hedgeCostEvents = 4

// Validate checks cfg against the ranges above and the work limit; cs is
// ignored (hedging does not use a retry policy).
func (cfg HedgeConfig) Validate(_ []Contender) error {
	const w = "hedge"
	if len(cfg.Servers) == 0 || len(cfg.Servers) > 100 {
		return cfgErr(w, "Servers", "%d servers: want 1 to 100", len(cfg.Servers))
	}
	if len(cfg.Rows) == 0 || len(cfg.Rows) > 100 {
		return cfgErr(w, "Rows", "%d rows: want 1 to 100", len(cfg.Rows))
	}
	for _, s := range cfg.Servers {
		switch {
		case s.Median <= 0 || s.Median > MaxHedgeLatency:
			return cfgErr(w, "Servers.Median", "%v: want (0, %v]", s.Median, MaxHedgeLatency)
		case !(s.Sigma >= 0 && s.Sigma <= 5):
			return cfgErr(w, "Servers.Sigma", "%v: want [0, 5]", s.Sigma)
		case !(s.SlowShare >= 0 && s.SlowShare <= 1):
			return cfgErr(w, "Servers.SlowShare", "%v: want [0, 1]", s.SlowShare)
		case s.SlowMin < 0 || s.SlowMax < s.SlowMin || s.SlowMax > MaxHedgeLatency:
			return cfgErr(w, "Servers.SlowMax", "[%v, %v]: want 0 <= SlowMin <= SlowMax <= %v", s.SlowMin, s.SlowMax, MaxHedgeLatency)
		case s.SlowMax == 0 && s.SlowShare > 0 && !(s.SlowTimes >= 1 && s.SlowTimes <= 1e6):
			return cfgErr(w, "Servers.SlowTimes", "%v: want [1, 1e6]", s.SlowTimes)
		case s.Capacity < 0 || s.Capacity > MaxHedgeConcurrency:
			return cfgErr(w, "Servers.Capacity", "%d: want 0 to %d", s.Capacity, MaxHedgeConcurrency)
		case !(s.Slowdown >= 0 && s.Slowdown <= 100):
			return cfgErr(w, "Servers.Slowdown", "%v: want [0, 100]", s.Slowdown)
		}
	}
	for _, r := range cfg.Rows {
		switch {
		case r.Fixed < 0 || r.Fixed > MaxHedgeLatency:
			return cfgErr(w, "Rows.Fixed", "%v: want [0, %v]", r.Fixed, MaxHedgeLatency)
		case r.MaxExtraLoad != 0 && !(r.MaxExtraLoad > 0 && r.MaxExtraLoad <= 0.5):
			return cfgErr(w, "Rows.MaxExtraLoad", "%v: want 0 or (0, 0.5]", r.MaxExtraLoad)
		case r.Budget && r.MaxExtraLoad == 0:
			return cfgErr(w, "Rows.Budget", "a budget needs MaxExtraLoad, its Ratio")
		}
		if r.MaxExtraLoad != 0 {
			if _, err := hedge.NewDelay(hedge.Config{MaxExtraLoad: r.MaxExtraLoad, Window: cfg.Window, MinSamples: cfg.MinSamples}); err != nil {
				return cfgErr(w, "Rows", "%v", err)
			}
		}
		if r.Budget {
			if _, err := backoff.NewBudget(hedgeBudget(cfg, r, nil)); err != nil {
				return cfgErr(w, "Rows.Budget", "%v", err)
			}
		}
	}
	if cfg.Concurrency < 1 || cfg.Concurrency > MaxHedgeConcurrency {
		return cfgErr(w, "Concurrency", "%d: want 1 to %d", cfg.Concurrency, MaxHedgeConcurrency)
	}
	if err := checkPositive(w, "Requests", cfg.Requests); err != nil {
		return err
	}
	events := mulSat(mulSat(int64(cfg.Requests), hedgeCostEvents), int64(len(cfg.Servers)*len(cfg.Rows)))
	return checkEvents(w, "Requests", []string{"Servers", "Rows"}, events, EventCost[w], "requests x servers x rows x 4")
}

func hedgeBudget(cfg HedgeConfig, r HedgeClient, now func() time.Time) backoff.BudgetConfig {
	return backoff.BudgetConfig{Ratio: r.MaxExtraLoad, Reserve: cfg.BudgetReserve, Burst: cfg.BudgetBurst, Now: now}
}

// Hedge runs every row against every server, one result per server. The
// rows of a server draw from the same random stream (seed, server index),
// so that they differ by the hedging only.
func Hedge(cfg HedgeConfig, _ []Contender, seed uint64) ([]HedgeResult, error) {
	if err := cfg.Validate(nil); err != nil {
		return nil, err
	}
	total := int64(cfg.Requests) * int64(len(cfg.Servers)*len(cfg.Rows))
	var done int64
	res := make([]HedgeResult, len(cfg.Servers))
	for si, s := range cfg.Servers {
		res[si].Server = s
		for _, r := range cfg.Rows {
			env, _ := streams(seed, uint64(si))
			row, events := hedgeRun(cfg, s, r, env)
			res[si].Rows = append(res[si].Rows, row)
			res[si].Events += events
			done += int64(cfg.Requests)
			if cfg.Progress != nil {
				cfg.Progress(Progress{Workload: "hedge", Policy: r.Name, Done: done, Total: total})
			}
		}
	}
	return res, nil
}

// hedgeCopy is one copy of a request at the server.
type hedgeCopy struct {
	req   int32
	sent  time.Duration
	state uint8 // queued, serving, over (answered or cancelled)
}

const (
	copyQueued = iota
	copyServing
	copyOver
)

// hedgeEvent is a copy's answer (copy >= 0) or a request's hedge timer
// (copy < 0, req).
type hedgeEvent struct {
	t    time.Duration
	seq  int64
	copy int32
	req  int32
}

type hedgeHeap []hedgeEvent

func (h hedgeHeap) Len() int { return len(h) }
func (h hedgeHeap) Less(i, j int) bool {
	return h[i].t < h[j].t || h[i].t == h[j].t && h[i].seq < h[j].seq
}
func (h hedgeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *hedgeHeap) Push(x any)   { *h = append(*h, x.(hedgeEvent)) }
func (h *hedgeHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// hedgeReq is one request in flight.
type hedgeReq struct {
	start  time.Duration
	copies [2]int32 // copy indices, -1 when not sent
	done   bool
}

func hedgeRun(cfg HedgeConfig, s HedgeServer, r HedgeClient, env *rand.Rand) (HedgeRow, int64) {
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var now time.Duration
	clock := func() time.Time { return epoch.Add(now) }
	var delay *hedge.Delay
	if r.MaxExtraLoad != 0 && r.Fixed == 0 {
		delay = backoff.Must(hedge.NewDelay(hedge.Config{MaxExtraLoad: r.MaxExtraLoad, Window: cfg.Window, MinSamples: cfg.MinSamples, Now: clock}))
	}
	var budget *backoff.Budget
	if r.Budget {
		budget = backoff.Must(backoff.NewBudget(hedgeBudget(cfg, r, clock)))
	}
	var (
		h        hedgeHeap
		seq      int64
		events   int64
		copies   []hedgeCopy
		reqs     []hedgeReq
		queue    []int32 // FIFO of queued copies
		busy     int
		lat      = make([]time.Duration, 0, cfg.Requests)
		sent     int
		refused  int64
		canceled int64
	)
	push := func(e hedgeEvent) { seq++; e.seq = seq; heap.Push(&h, e) }
	service := func() time.Duration {
		body := float64(s.Median) * math.Exp(s.Sigma*env.NormFloat64())
		if s.SlowShare > 0 && env.Float64() < s.SlowShare {
			if s.SlowMax != 0 {
				body = float64(s.SlowMin) + env.Float64()*float64(s.SlowMax-s.SlowMin)
			} else {
				body *= s.SlowTimes
			}
		}
		if s.Capacity != 0 {
			u := float64(busy) / float64(s.Capacity)
			body *= 1 + s.Slowdown*u*u
		}
		return time.Duration(min(body, float64(MaxHedgeLatency)))
	}
	serve := func(c int32) {
		busy++
		copies[c].state = copyServing
		push(hedgeEvent{t: now + service(), copy: c})
	}
	send := func(q int32) {
		c := int32(len(copies))
		copies = append(copies, hedgeCopy{req: q, sent: now})
		reqs[q].copies[slices.Index(reqs[q].copies[:], -1)] = c
		if s.Capacity == 0 || busy < s.Capacity {
			serve(c)
		} else {
			queue = append(queue, c)
		}
	}
	// release frees a server slot and starts the next queued copy.
	release := func() {
		if s.Capacity == 0 {
			return
		}
		busy--
		for len(queue) > 0 {
			c := queue[0]
			queue = queue[1:]
			if copies[c].state == copyQueued {
				serve(c)
				return
			}
		}
	}
	start := func() {
		q := int32(len(reqs))
		reqs = append(reqs, hedgeReq{start: now, copies: [2]int32{-1, -1}})
		if budget != nil {
			budget.Deposit()
		}
		send(q)
		sent++
		d, ok := r.Fixed, r.Fixed != 0
		if delay != nil {
			d, ok = delay.Hedge()
		}
		if ok {
			push(hedgeEvent{t: now + d, copy: -1, req: q})
		}
	}
	issued := 0
	for range min(cfg.Concurrency, cfg.Requests) {
		start()
		issued++
	}
	for h.Len() > 0 {
		e := heap.Pop(&h).(hedgeEvent)
		events++
		now = e.t
		if e.copy < 0 { // the hedge timer
			q := &reqs[e.req]
			if q.done {
				continue
			}
			if budget != nil && budget.Withdraw() != nil {
				refused++
				continue
			}
			send(e.req)
			sent++
			continue
		}
		c := &copies[e.copy]
		if c.state != copyServing {
			continue // cancelled while served: its slot was freed then
		}
		c.state = copyOver
		release()
		q := &reqs[c.req]
		q.done = true
		lat = append(lat, now-q.start)
		if delay != nil {
			// As backoffhttp: the first copy's time, so far when a hedge
			// won while it was out (a lower bound of its latency).
			if f := q.copies[0]; f >= 0 && copies[f].state != copyOver {
				delay.Observe(now - copies[f].sent)
			} else {
				delay.Observe(now - c.sent)
			}
		}
		for _, o := range q.copies {
			if o < 0 || o == e.copy || copies[o].state == copyOver {
				continue
			}
			canceled++
			if copies[o].state == copyServing {
				copies[o].state = copyOver
				release()
			}
			copies[o].state = copyOver
		}
		if issued < cfg.Requests {
			start()
			issued++
		}
	}
	slices.Sort(lat)
	at := func(p float64) time.Duration {
		return lat[max(int(math.Ceil(p*float64(len(lat))))-1, 0)]
	}
	row := HedgeRow{HedgeClient: r, P50: at(0.5), P99: at(0.99), P999: at(0.999),
		Extra: float64(sent)/float64(cfg.Requests) - 1, Refused: refused, Cancelled: canceled, Duration: now}
	if budget != nil {
		b := budget.Config()
		row.Bound = (b.Ratio*float64(cfg.Requests) + b.Reserve*now.Seconds() + float64(b.Burst)) / float64(cfg.Requests)
	}
	return row, events
}
