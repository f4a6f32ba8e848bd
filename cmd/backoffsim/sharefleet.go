package main

import (
	"fmt"
	"io"
	"math"

	"github.com/backoffgo/backoff/internal/sim"
	"github.com/backoffgo/backoff/retryshare"
)

// The share-fleet workload: issue 33's scenarios, replicas that each hold
// a retryshare.Share under herds, balancers, routes, random failures and a
// caller that lies.

var shareFleetWorkload = spec[sim.ShareFleetConfig, sim.ShareFleetResult]{
	title: "share-fleet",
	help:  shareFleetHelp,
	config: func(o *options) sim.ShareFleetConfig {
		cfg := sim.DefaultShareFleet()
		cfg.Policy = o.policy(cfg.Policy)
		if o.set["outage"] {
			cfg.Outage = o.outage
		}
		if o.set["memory"] {
			cfg.Memory = sim.ClientMemory{Span: o.memory, ForgetOnSuccess: o.forget}
		}
		if o.fixed {
			cfg.Fixed = true
			cfg.NetMin, cfg.NetMax, cfg.ServiceMin, cfg.ServiceMax = 0, 0, 0, 0
		}
		return cfg
	},
	contenders: func(_ sim.ShareFleetConfig, cs []sim.Contender) []sim.Contender {
		return fleetContenders(cs)
	},
	validate: sim.ShareFleetConfig.Validate,
	progress: func(c *sim.ShareFleetConfig, p func(sim.Progress)) { c.Progress = p },
	simulate: sim.ShareFleet,
	table:    shareFleetTable,
	chart:    shareFleetChart,
}

// fleetContenders keeps one policy: full jitter when it is selected (the
// clients of issue 33), the first selected otherwise.
func fleetContenders(cs []sim.Contender) []sim.Contender {
	for _, c := range cs {
		if c.Name == "full-jitter" {
			return []sim.Contender{c}
		}
	}
	return cs[:min(len(cs), 1)]
}

// fleetRetryShare is the share of a server's requests that are retries
// when every call fails at random with probability fail and every failure
// is retried up to attempts calls: (f + … + f^(A-1)) / (1 + f + … + f^(A-1)).
func fleetRetryShare(fail float64, attempts int) float64 {
	var retries, calls, p float64 = 0, 0, 1
	for i := range attempts {
		calls += p
		if i > 0 {
			retries += p
		}
		p *= fail
	}
	return retries / calls
}

// The goals of issue 33.
const (
	goalLoad    = 1.2    // calls per request through an outage
	goalLoss    = 0.0005 // success lost to the Share where the retries fit under Threshold
	goalHonest  = 0.999  // honest callers' success beside a liar
	goalMinRate = 0.2    // the load goal holds from this rate per replica up
)

// fleetGoal returns the goal of issue 33 for a point, whether it is met,
// and false when the row has none (the trade-off of Threshold against
// failures whose retries do not fit under it).
func fleetGoal(cfg sim.ShareFleetConfig, p sim.FleetPoint) (goal string, met, has bool) {
	switch {
	case p.Outage:
		if p.Burst == 0 && p.Rate < goalMinRate {
			return "", false, false
		}
		return fmt.Sprintf("load <= %g", goalLoad), p.With.Load <= goalLoad, true
	case p.Liar > 0:
		return fmt.Sprintf("honest >= %g%%", 100*goalHonest), p.With.Success >= goalHonest, true
	}
	th := sim.ShareDefaults(cfg.Share).Threshold
	if p.Threshold != 0 {
		th = p.Threshold
	}
	if fleetRetryShare(p.Fail, cfg.Policy.MaxAttempts) >= th {
		return "", false, false
	}
	return fmt.Sprintf("loss <= %g%%", 100*goalLoss), p.Without.Success-p.With.Success <= goalLoss, true
}

// fleetScenario describes a row.
func fleetScenario(p sim.FleetPoint, threshold float64) string {
	clients := func() string {
		if p.Clients == 1 {
			return "1 client"
		}
		return commas(int64(p.Clients)) + " clients"
	}
	switch {
	case p.Burst > 0:
		return fmt.Sprintf("%s, bursts every %s", clients(), dur(p.Burst))
	case p.Group == "herd":
		return fmt.Sprintf("%s, steady %s/s", clients(), rate(p.Rate*float64(p.Replicas)))
	case p.Healthy > 0:
		shares := "one Share"
		if p.PerRoute {
			shares = "a Share per route"
		}
		return fmt.Sprintf("failing %s/s beside healthy %s/s, %s", rate(p.Rate), rate(p.Healthy), shares)
	case p.Liar > 0:
		return fmt.Sprintf("a liar at %.4g%% of requests, %.4g%% failures", 100*p.Liar, 100*p.Fail)
	case p.Outage:
		lb := "random"
		if p.RoundRobin {
			lb = "round-robin"
		}
		return fmt.Sprintf("%s replicas at %s/s, %s", commas(int64(p.Replicas)), rate(p.Rate), lb)
	case p.Threshold != 0:
		return fmt.Sprintf("threshold %g, %.4g%% failures at %s/s", threshold, 100*p.Fail, rate(p.Rate))
	}
	return fmt.Sprintf("%.4g%% failures at %s/s, %s", 100*p.Fail, rate(p.Rate*float64(p.Replicas)), clients())
}

// rate formats requests per second: 0.2, 10, 10,000.
func rate(r float64) string {
	if r >= 1000 && r == math.Trunc(r) {
		return commas(int64(r))
	}
	return fmt.Sprint(r)
}

// pctOf formats a share as a percentage, "-" if undefined.
func pctOf(v float64, digits int) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.*f%%", digits, 100*v)
}

func shareFleetTable(w io.Writer, o *options, cfg sim.ShareFleetConfig, res []sim.ShareFleetResult) {
	s := sim.ShareDefaults(cfg.Share)
	arrivals := "Poisson arrivals"
	if cfg.Fixed {
		arrivals = "fixed arrivals"
	}
	header(w, fmt.Sprintf("share-fleet: clients over replicas that each hold a retryshare.Share (threshold %g, window %v, burst %d), decided as backoffhttp.Handler does; %s; %s, base %v, %d attempts; network %v-%v each way, service %v-%v; %v warm-up, then a %v outage or the measured span",
		s.Threshold, s.Window, s.Burst, arrivals, res[0].Policy, cfg.Policy.Base, cfg.Policy.MaxAttempts, cfg.NetMin, cfg.NetMax, cfg.ServiceMin, cfg.ServiceMax, cfg.Warmup, cfg.Outage))
	tw := table(w)
	fmt.Fprintln(tw, "group\tscenario\tload\tfirst window\trefused\tsuccess\twithout Share\tloss\tretries needed\tgoal\tmet\t")
	for _, p := range res[0].Points {
		th := s.Threshold
		if p.Threshold != 0 {
			th = p.Threshold
		}
		without, loss, needed := "-", "-", "-"
		if p.HasWithout {
			without = pctOf(p.Without.Success, 3)
			loss = pctOf(p.Without.Success-p.With.Success, 3)
			needed = pctOf(fleetRetryShare(p.Fail, cfg.Policy.MaxAttempts), 2)
		}
		goal, met, has := fleetGoal(cfg, p)
		verdict := "-"
		switch {
		case has && met:
			verdict = "yes"
		case has:
			verdict = "NO"
		default:
			goal = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", p.Group, fleetScenario(p, th), defined(p.With.Load, "%.3fx"), defined(p.With.First, "%.3fx"),
			pctOf(p.With.Refused, 1), pctOf(p.With.Success, 3), without, loss, needed, goal, verdict)
	}
	tw.Flush()
	fmt.Fprintln(w, "load: calls reaching the replicas per request of the measured route (the liar's apart), through the outage after its first Share window, or over")
	fmt.Fprintln(w, "the measured span; refused: failing answers that said \"don't retry\"; success: requests that succeeded (the honest callers' beside a liar);")
	fmt.Fprintln(w, "loss: success without the Shares minus with them; retries needed: the share of a server's requests that are retries when every failure")
	fmt.Fprintf(w, "is retried, (f + f^2)/(1 + f + f^2) for %d attempts: the loss goal holds where it is under Threshold. Through an outage without a Share\n", cfg.Policy.MaxAttempts)
	fmt.Fprintf(w, "every request makes its %d calls\n", cfg.Policy.MaxAttempts)
}

func shareFleetChart(cfg sim.ShareFleetConfig, res []sim.ShareFleetResult, o *options) []byte {
	var bars []bar
	for _, p := range res[0].Points {
		if !p.Outage {
			continue
		}
		c := color("full-jitter")
		if p.Group != "herd" && p.Group != "routes" {
			c = color("equal-jitter")
		}
		bars = append(bars, bar{fleetLabel(p), defined(p.With.Load, "%.2fx"), c, value(p.With.Load)})
	}
	return barChart(fmt.Sprintf("Retry share in a fleet: load at the replicas through a %v outage", cfg.Outage),
		fmt.Sprintf("a retryshare.Share per replica; %s clients, %d attempts; goal %gx; seed %d", res[0].Policy, cfg.Policy.MaxAttempts, goalLoad, o.seed),
		"calls reaching the replicas per request", bars)
}

// fleetLabel is a short name of an outage row, for the chart.
func fleetLabel(p sim.FleetPoint) string {
	switch {
	case p.Burst > 0:
		return "herd, bursts every " + dur(p.Burst)
	case p.Group == "herd":
		return "herd, steady"
	case p.Healthy > 0 && p.PerRoute:
		return "routes, a Share per route"
	case p.Healthy > 0:
		return "routes, one Share"
	case p.RoundRobin:
		return fmt.Sprintf("%s x %s/s, round-robin", commas(int64(p.Replicas)), rate(p.Rate))
	}
	return fmt.Sprintf("%s x %s/s, random", commas(int64(p.Replicas)), rate(p.Rate))
}

// value is v, or 0 if it is undefined, for a bar.
func value(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return v
}

// fleetData holds the share-fleet results for the document.
type fleetData struct {
	Cfg    sim.ShareFleetConfig
	Policy string
	Points []sim.FleetPoint
	// Fixed is round-robin over 10 replicas at 10/s with fixed arrivals
	// and zero delays; Poisson the same row as the table runs it.
	Fixed, Poisson sim.FleetPoint
	// Rates is the bound per replica rate: fleetRateList.
	Rates []fleetRate
	// Bursts reruns the rows that the Share's Burst trades against each
	// other: fleetBurstRows, per burst of fleetBursts.
	Bursts []fleetBurst
	// Memory is the measurement of a client that remembers the service's
	// "don't retry": fleetMemoryRows, without memory and with each of
	// MemoryKinds.
	Memory      []fleetMemory
	MemoryKinds []sim.ClientMemory
	// Table is the workload's table, as -workload share-fleet prints it
	// after the line that opens the tables.
	Table []byte
}

// docFleet reads the share-fleet results of a run of every workload at
// the defaults and runs the document's extra row.
func docFleet(results map[string]jobResult, o *options) (d fleetData, err error) {
	var res []sim.ShareFleetResult
	d.Cfg, res = shareFleetWorkload.of(results)
	d.Points, d.Policy = res[0].Points, res[0].Policy
	d.Table = results[shareFleetWorkload.title].table
	for _, p := range d.Points {
		if p.Group == "replicas" && p.RoundRobin && p.Replicas == 10 {
			d.Poisson = p
		}
	}
	if d.Rates, err = fleetRates(d.Cfg, o); err != nil {
		return d, err
	}
	if d.Bursts, err = fleetBurstSweep(d.Cfg, d.Points, o); err != nil {
		return d, err
	}
	if d.MemoryKinds, d.Memory, err = fleetMemories(d.Cfg, d.Points, o); err != nil {
		return d, err
	}
	c := d.Cfg
	c.Rows = []sim.FleetRow{d.Poisson.FleetRow}
	c.Fixed = true
	c.NetMin, c.NetMax, c.ServiceMin, c.ServiceMax = 0, 0, 0, 0
	r, err := sim.ShareFleet(c, shareFleetWorkload.selected(c, o), o.seed)
	if err != nil {
		return d, err
	}
	d.Fixed = r[0].Points[0]
	return d, nil
}

// fleetHelp is the workload's line in -h.
var shareFleetHelp = func() string {
	return fmt.Sprintf("issue 33: replicas that each hold a retryshare.Share, under herds,\nbalancers, routes, random failures and a lying caller (%d rows)", len(def.shareFleet.Rows))
}()

// Row returns the i-th point of a group, in table order.
func (d fleetData) Row(group string, i int) sim.FleetPoint {
	for _, p := range d.Points {
		if p.Group == group {
			if i == 0 {
				return p
			}
			i--
		}
	}
	panic(fmt.Sprintf("share-fleet has no row %d in group %q", i, group))
}

// threshold is the Threshold of p's Shares.
func (d fleetData) threshold(p sim.FleetPoint) float64 {
	if p.Threshold != 0 {
		return p.Threshold
	}
	return sim.ShareDefaults(d.Cfg.Share).Threshold
}

// Scenario names p as the table does.
func (d fleetData) Scenario(p sim.FleetPoint) string { return fleetScenario(p, d.threshold(p)) }

// Goal is p's goal, "-" for none.
func (d fleetData) Goal(p sim.FleetPoint) string {
	g, _, has := fleetGoal(d.Cfg, p)
	if !has {
		return "-"
	}
	return g
}

// Met says whether p meets its goal: yes, NO, or - for none.
func (d fleetData) Met(p sim.FleetPoint) string {
	_, met, has := fleetGoal(d.Cfg, p)
	switch {
	case !has:
		return "-"
	case met:
		return "yes"
	}
	return "NO"
}

// Loss is the success that p's Shares cost.
func (d fleetData) Loss(p sim.FleetPoint) float64 { return p.Without.Success - p.With.Success }

// Misses lists the points that miss their goal.
func (d fleetData) Misses() []sim.FleetPoint {
	var out []sim.FleetPoint
	for _, p := range d.Points {
		if _, met, has := fleetGoal(d.Cfg, p); has && !met {
			out = append(out, p)
		}
	}
	return out
}

// Share is the Shares' configuration, defaults filled in.
func (d fleetData) Share() retryshare.Config { return sim.ShareDefaults(d.Cfg.Share) }

// RetryShare is the share of retries among a server's requests that p's
// random failures call for.
func (d fleetData) RetryShare(p sim.FleetPoint) float64 {
	return fleetRetryShare(p.Fail, d.Cfg.Policy.MaxAttempts)
}

// fleetClaim is a figure of issue 33 for a row of the default table: the
// index-th row of its group.
type fleetClaim struct {
	Group string
	Index int
	Claim string
}

// fleetClaims are issue 33's figures, for the document.
var fleetClaims = []fleetClaim{
	{"herd", 0, "2.11"}, {"herd", 1, "1.61"}, {"herd", 2, "1.19"}, {"herd", 3, "1.12"},
	{"replicas", 0, "1.17"}, {"replicas", 1, "1.17"}, {"replicas", 2, "1.43 (first window 1.60)"}, {"replicas", 3, "1.74 (1.95), at 50,000 replicas"},
	{"replicas", 4, "round-robin: not measured"}, {"replicas", 5, "-"}, {"replicas", 6, "-"}, {"replicas", 7, "-"},
	{"routes", 0, "3.00; on loopback 3.00"}, {"routes", 1, "1.112"},
	{"failures", 1, "0.45 % lost, 8.7 % of failing answers refused"},
	{"failures", 7, "success 0.889 with the Share, 0.992 without"},
	{"liar", 0, "honest 98.6 % (loopback, about 360 requests/s)"}, {"liar", 1, "honest 95.7 %"}, {"liar", 2, "honest 94.0 %"},
}

// fleetFigure is what the document quotes of a point.
func fleetFigure(d fleetData, p sim.FleetPoint) string {
	switch {
	case p.Outage:
		return fmt.Sprintf("%s (first window %s)", defined(p.With.Load, "%.3f"), defined(p.With.First, "%.3f"))
	case p.Liar > 0:
		return fmt.Sprintf("honest %s (%s without the Share)", pctOf(p.With.Success, 3), pctOf(p.Without.Success, 3))
	}
	return fmt.Sprintf("success %s, %s without: %s lost; %s of failing answers refused", pctOf(p.With.Success, 3), pctOf(p.Without.Success, 3), pctOf(d.Loss(p), 3), pctOf(p.With.Refused, 1))
}

// Lim holds share-fleet's limits, for the document.
func (fleetData) Lim() map[string]string {
	return map[string]string{"clients": commas(sim.MaxFleetClients), "memory": fmt.Sprintf("%d MiB", sim.MaxFleetMemory>>20)}
}

// fleetRate is the document's table of the bound per replica rate: at
// Rate requests per second per replica, over Replicas, the load through an
// outage with random and round-robin balancing, and the success lost at
// fleetRateFail random failures (random balancing), with the default
// Share.
type fleetRate struct {
	Rate                         float64
	Replicas                     int
	Outage, RoundRobin, Failures sim.FleetPoint
}

// The document's table of rates: rates per replica, the traffic in all
// (replicas = fleetRateTotal / rate), the failure rate and the requests
// measured.
var fleetRateList = []float64{0.1, 0.2, 0.5, 1, 2, 5, 10, 100}

const (
	fleetRateTotal    = 200
	fleetRateFail     = 0.05
	fleetRateRequests = 30_000
)

// fleetRates runs the document's table of rates: cfg's policy and delays,
// 1,000 clients.
func fleetRates(cfg sim.ShareFleetConfig, o *options) ([]fleetRate, error) {
	c := cfg
	c.Rows = nil
	for _, r := range fleetRateList {
		n := int(math.Round(fleetRateTotal / r))
		c.Rows = append(c.Rows,
			sim.FleetRow{Group: "rate", Clients: 1000, Replicas: n, Rate: r, Outage: true},
			sim.FleetRow{Group: "rate", Clients: 1000, Replicas: n, Rate: r, RoundRobin: true, Outage: true},
			sim.FleetRow{Group: "rate", Clients: 1000, Replicas: n, Rate: r, Fail: fleetRateFail, Requests: fleetRateRequests})
	}
	res, err := sim.ShareFleet(c, shareFleetWorkload.selected(c, o), o.seed)
	if err != nil {
		return nil, err
	}
	ps := res[0].Points
	out := make([]fleetRate, len(fleetRateList))
	for i, r := range fleetRateList {
		out[i] = fleetRate{Rate: r, Replicas: ps[3*i].Replicas, Outage: ps[3*i], RoundRobin: ps[3*i+1], Failures: ps[3*i+2]}
	}
	return out, nil
}

// fleetBurst is the document's measurement of Bursts: the rows of
// fleetBurstRows with the Share's Burst set to Burst.
type fleetBurst struct {
	Burst  int
	Points []sim.FleetPoint
}

// fleetBursts are the Bursts measured, the default among them.
var fleetBursts = []int{2, 3, 4, 5}

// fleetBurstRows picks the rows that a Burst trades: the outage at 0.2/s
// per replica at random, and one client's random failures at 5 %.
func fleetBurstRows(p sim.FleetPoint) bool {
	return p.Group == "replicas" && p.Rate == goalMinRate && !p.RoundRobin || p.Group == "failures" && p.Fail == fleetRateFail && p.Clients == 1
}

// fleetBurstSweep reruns fleetBurstRows of points with each of
// fleetBursts.
func fleetBurstSweep(cfg sim.ShareFleetConfig, points []sim.FleetPoint, o *options) ([]fleetBurst, error) {
	c := cfg
	c.Rows = nil
	for _, p := range points {
		if fleetBurstRows(p) {
			c.Rows = append(c.Rows, p.FleetRow)
		}
	}
	var out []fleetBurst
	for _, b := range fleetBursts {
		c.Share.Burst = b
		res, err := sim.ShareFleet(c, shareFleetWorkload.selected(c, o), o.seed)
		if err != nil {
			return nil, err
		}
		out = append(out, fleetBurst{Burst: b, Points: res[0].Points})
	}
	return out, nil
}

// fleetMemory is a row of the document's table of client memories: a
// point of the default table (no memory) and the same row with each kind
// of memory, in the order of fleetData.MemoryKinds.
type fleetMemory struct {
	Point sim.FleetPoint
	With  []sim.FleetPoint
}

// fleetMemoryRows picks the rows of the table of client memories: the
// replicas below 10/s each (the load goal's misses) and the random
// failures at 5 % (the loss goal's rows).
func fleetMemoryRows(p sim.FleetPoint) bool {
	return p.Group == "replicas" && p.Rate < 10 || p.Group == "failures" && p.Fail == fleetRateFail
}

// fleetMemories reruns fleetMemoryRows of points with clients that
// remember a "don't retry" for one Share window, half of one, one forgotten
// at a success, and six.
func fleetMemories(cfg sim.ShareFleetConfig, points []sim.FleetPoint, o *options) ([]sim.ClientMemory, []fleetMemory, error) {
	win := sim.ShareDefaults(cfg.Share).Window
	kinds := []sim.ClientMemory{{Span: win}, {Span: win / 2}, {Span: win, ForgetOnSuccess: true}, {Span: 6 * win}}
	c := cfg
	c.Rows = nil
	var out []fleetMemory
	for _, p := range points {
		if fleetMemoryRows(p) {
			c.Rows = append(c.Rows, p.FleetRow)
			out = append(out, fleetMemory{Point: p})
		}
	}
	for _, k := range kinds {
		c.Memory = k
		res, err := sim.ShareFleet(c, shareFleetWorkload.selected(c, o), o.seed)
		if err != nil {
			return nil, nil, err
		}
		for i, p := range res[0].Points {
			out[i].With = append(out[i].With, p)
		}
	}
	return kinds, out, nil
}

// MemoryKind names a kind of client memory, for the table's header.
func (fleetData) MemoryKind(k sim.ClientMemory) string {
	if k.ForgetOnSuccess {
		return fmt.Sprintf("%v, forgotten at a success", k.Span)
	}
	return k.Span.String()
}

// MemoryCell is what the table of client memories shows of p: its load
// through the outage, or the success that its Shares cost.
func (d fleetData) MemoryCell(p sim.FleetPoint) string {
	if p.Outage {
		return defined(p.With.Load, "%.3f×")
	}
	v := d.Loss(p)
	if math.Abs(v) < 5e-5 {
		v = 0
	}
	return fmt.Sprintf("%.2f %% lost", 100*v)
}

// PerClient is the requests per second that each client of p sends.
func (fleetData) PerClient(p sim.FleetPoint) float64 {
	return p.Rate * float64(p.Replicas) / float64(p.Clients)
}
