package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/backoffgo/backoff"
)

// ContentionPoint is the outcome of [Contention] at one fleet size.
type ContentionPoint struct {
	// Clients is the fleet size.
	Clients int
	// Calls is the number of writes the server processed (reads are not
	// counted), averaged over runs.
	Calls float64
	// Time is when the last client received its final reply, averaged over
	// runs and rounded down to the nanosecond.
	Time time.Duration
	// GaveUp is the number of clients whose policy gave up before their
	// write succeeded, averaged over runs (zero with no attempt limit).
	GaveUp float64
}

// ContentionResult is the outcome of [Contention] for one policy.
type ContentionResult struct {
	// Policy is the contender's name.
	Policy string
	// Points holds one point per fleet size, in the order of
	// ContentionConfig.Clients.
	Points []ContentionPoint
	// Events is the number of server events (reads and writes arriving)
	// processed over all runs.
	Events int64
}

// At returns the point for n clients, and false if n was not simulated.
func (r ContentionResult) At(n int) (ContentionPoint, bool) {
	for _, p := range r.Points {
		if p.Clients == n {
			return p, true
		}
	}
	return ContentionPoint{}, false
}

// Validate checks cfg for [Contention] with the given contenders, without
// running anything: every parameter in range and a work estimate within [MaxWork]. A client's write can fail only if another client's write
// succeeded since its read, so it fails at most N-1 times, and a run of N
// clients processes at most 2·N² reads and writes whatever the policy: the
// estimate is Runs·Σ 2·N² per contender. Memory is one client record and
// one heap entry per client for each run in progress, and the work limit
// bounds N.
func (cfg ContentionConfig) Validate(contenders []Contender) error {
	const w = "contention"
	if err := checkContenders(w, contenders); err != nil {
		return err
	}
	if len(cfg.Clients) == 0 {
		return cfgErr(w, "Clients", "no fleet size given")
	}
	if err := checkPositive(w, "Runs", cfg.Runs); err != nil {
		return err
	}
	if cfg.NetMean < 0 {
		return cfgErr(w, "NetMean", "%v: want >= 0", cfg.NetMean)
	}
	if cfg.NetSD < 0 {
		return cfgErr(w, "NetSD", "%v: want >= 0", cfg.NetSD)
	}
	if err := checkPolicy(w, cfg.Policy, true); err != nil {
		return err
	}
	var perRun int64
	for _, n := range cfg.Clients {
		if n < 1 {
			return cfgErr(w, "Clients", "fleet size %d: want at least 1", n)
		}
		perRun = addSat(perRun, mulSat(2, mulSat(int64(n), int64(n))))
	}
	events := mulSat(mulSat(perRun, int64(cfg.Runs)), int64(len(contenders)))
	return checkEvents(w, "Clients", []string{"Runs", "contenders"}, events, EventCost[w], fmt.Sprintf("Runs %d × Σ 2·N² over %d fleet sizes up to %d × %d policies",
		cfg.Runs, len(cfg.Clients), slices.Max(cfg.Clients), len(contenders)))
}

// Contention simulates the optimistic-concurrency workload of Brooker's
// "Exponential Backoff And Jitter". One server holds a row with a version
// number; processing is instantaneous. N clients each send a read at t = 0;
// on the reply a client sends a write carrying the version it read, which
// succeeds only if the version is unchanged (and then increments it). Every
// message is delayed by |Normal(NetMean, NetSD)|. On a failure reply the
// client increments its attempt count, sleeps the policy's delay and sends a
// new read. Each client stops after one successful write (or when its policy
// gives up).
//
// It refuses cfg as [ContentionConfig.Validate] does. Virtual time is exact
// or the run is reported as an error: a time past the largest
// time.Duration is refused, never wrapped. Runs are spread over all cores;
// the result does not depend on how many.
func Contention(cfg ContentionConfig, contenders []Contender, seed uint64) ([]ContentionResult, error) {
	if err := cfg.Validate(contenders); err != nil {
		return nil, err
	}
	type scratch struct {
		clients []occClient
		heap    []event
	}
	netMean, netSD := float64(cfg.NetMean), float64(cfg.NetSD)
	p := plan[scratch, occRun]{
		workload: "contention", contenders: contenders, runs: len(cfg.Clients) * cfg.Runs, seed: seed, policy: cfg.Policy, progress: cfg.Progress,
		coords: func(k int) []uint64 { return []uint64{3, uint64(cfg.Clients[k/cfg.Runs]), uint64(k % cfg.Runs)} },
		weight: func(k int) int64 { n := int64(cfg.Clients[k/cfg.Runs]); return n * n },
		run: func(u *unit, s *scratch) (occRun, error) {
			n := cfg.Clients[u.r/cfg.Runs]
			o, err := runOCC(n, u.pol, u.env, netMean, netSD, &s.clients, &s.heap)
			u.advance(int64(n) * int64(n))
			return o, err
		},
	}
	out, err := p.execute()
	if err != nil {
		return nil, err
	}
	res := make([]ContentionResult, len(contenders))
	for ci, c := range contenders {
		cr := ContentionResult{Policy: c.Name}
		for ni, n := range cfg.Clients {
			var calls, gave int64
			tm := mean{n: int64(cfg.Runs)}
			for _, o := range out[ci][ni*cfg.Runs : (ni+1)*cfg.Runs] {
				calls += o.calls
				cr.Events += o.events
				gave += o.gaveUp
				tm.add(o.end)
			}
			cr.Points = append(cr.Points, ContentionPoint{
				Clients: n,
				Calls:   float64(calls) / float64(cfg.Runs),
				Time:    tm.value(),
				GaveUp:  float64(gave) / float64(cfg.Runs),
			})
		}
		res[ci] = cr
	}
	return res, nil
}

// occRun is one contention run's outcome.
type occRun struct {
	calls, events, gaveUp int64
	end                   time.Duration
}

// occClient is one client's state.
type occClient struct {
	seq     backoff.Policy
	attempt int
	version int64
	write   bool // the pending event is a write (else a read)
}

// maxDelay is the smallest float64 above every time.Duration: a message
// delay drawn at or above it cannot be represented.
const maxDelay = float64(1 << 63)

// runOCC simulates one run, reusing the slices behind clients and heap.
// Client-side steps touch no shared state, so each is folded into the next
// server event: a read's reply and the write it triggers become one write
// arrival, and a failure reply, the sleep and the next read become one read
// arrival. Every message still gets its own delay draw. The heap holds
// exactly one event per unfinished client.
func runOCC(n int, pol backoff.Policy, env *rand.Rand, mean, sd float64, clientsBuf *[]occClient, heapBuf *[]event) (occRun, error) {
	var o occRun
	overflow := false
	// The explicit float64 conversion keeps the compiler from fusing the
	// multiply and add (arm64 would), so every platform rounds alike.
	delay := func() time.Duration {
		x := math.Abs(float64(env.NormFloat64()*sd) + mean)
		if x >= maxDelay {
			overflow = true
			return 0
		}
		return time.Duration(x)
	}
	// at returns t plus the given non-negative delays, noting overflow.
	at := func(t time.Duration, ds ...time.Duration) time.Duration {
		for _, d := range ds {
			var ok bool
			if t, ok = addTime(t, d); !ok {
				overflow = true
				return 0
			}
		}
		return t
	}
	clients := slices.Grow((*clientsBuf)[:0], n)[:n]
	h := slices.Grow((*heapBuf)[:0], n)[:n]
	*clientsBuf, *heapBuf = clients, h
	for i := range clients {
		clients[i] = occClient{seq: startSequence(pol)}
		h[i] = event{t: delay(), client: int32(i)}
	}
	heapify(h)
	var version int64
	for len(h) > 0 {
		if overflow {
			return o, errTimeOverflow
		}
		ev := h[0]
		cl := &clients[ev.client]
		o.events++
		if !cl.write {
			// Read arrives: reply with the version; the client writes it back.
			cl.version = version
			cl.write = true
			siftDown(h, 0, event{t: at(ev.t, delay(), delay()), client: ev.client})
			continue
		}
		o.calls++
		reply := at(ev.t, delay())
		if cl.version == version {
			version++ // equivalent mutant: version-- gives distinct versions too
			o.end = max(o.end, reply)
			h = popTop(h)
			continue
		}
		cl.attempt++
		d, ok := next(cl.seq, cl.attempt)
		if !ok {
			o.gaveUp++
			o.end = max(o.end, reply)
			h = popTop(h)
			continue
		}
		cl.write = false
		siftDown(h, 0, event{t: at(reply, d, delay()), client: ev.client})
	}
	if overflow {
		return o, errTimeOverflow
	}
	return o, nil
}
