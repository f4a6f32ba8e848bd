package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
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
	// runs.
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
// Runs are spread over all cores; the result does not depend on how many.
func Contention(cfg ContentionConfig, contenders []Contender, seed uint64) ([]ContentionResult, error) {
	if cfg.Runs < 1 || len(cfg.Clients) == 0 || cfg.NetMean < 0 || cfg.NetSD < 0 {
		return nil, fmt.Errorf("sim: contention: need Runs >= 1, at least one fleet size, NetMean and NetSD >= 0")
	}
	for _, n := range cfg.Clients {
		if n < 1 {
			return nil, fmt.Errorf("sim: contention: fleet size %d: want >= 1", n)
		}
	}
	perC := len(cfg.Clients) * cfg.Runs
	out := make([]occRun, len(contenders)*perC)
	err := parallel(len(out), func(i int) error {
		c := contenders[i/perC]
		k := i % perC
		n, r := cfg.Clients[k/cfg.Runs], k%cfg.Runs
		env, rng := streams(seed, 3, uint64(n), uint64(r))
		pol, err := build(c, cfg.Params, rng)
		if err != nil {
			return err
		}
		out[i] = runOCC(n, pol, env, float64(cfg.NetMean), float64(cfg.NetSD))
		return nil
	})
	if err != nil {
		return nil, err
	}
	res := make([]ContentionResult, len(contenders))
	for ci, c := range contenders {
		cr := ContentionResult{Policy: c.Name}
		for ni, n := range cfg.Clients {
			var calls, events, gave, tm int64
			for r := range cfg.Runs {
				o := out[ci*perC+ni*cfg.Runs+r]
				calls += o.calls
				events += o.events
				gave += o.gaveUp
				tm += o.end
			}
			cr.Events += events
			cr.Points = append(cr.Points, ContentionPoint{
				Clients: n,
				Calls:   float64(calls) / float64(cfg.Runs),
				Time:    time.Duration(tm / int64(cfg.Runs)),
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
	end                   int64 // ns
}

// occEvent is a message arriving at the server: a read, or a write carrying
// the version its client read.
type occEvent struct {
	t      int64 // arrival time, ns
	client int32
}

// occClient is one client's state.
type occClient struct {
	seq     backoff.Policy
	attempt int
	version int64
	write   bool // the pending event is a write (else a read)
}

// runOCC simulates one run. Client-side steps touch no shared state, so each
// is folded into the next server event: a read's reply and the write it
// triggers become one write arrival, and a failure reply, the sleep and the
// next read become one read arrival. Every message still gets its own delay
// draw. The heap holds exactly one event per unfinished client.
func runOCC(n int, pol backoff.Policy, env *rand.Rand, mean, sd float64) occRun {
	// The explicit float64 conversion keeps the compiler from fusing the
	// multiply and add (arm64 would), so every platform rounds alike.
	delay := func() int64 { return int64(math.Abs(float64(env.NormFloat64()*sd) + mean)) }
	clients := make([]occClient, n)
	h := make(occHeap, n)
	for i := range clients {
		clients[i].seq = backoff.StartSequence(pol)
		h[i] = occEvent{t: delay(), client: int32(i)}
	}
	h.init()
	var o occRun
	var version int64
	for len(h) > 0 {
		ev := h[0]
		cl := &clients[ev.client]
		o.events++
		if !cl.write {
			// Read arrives: reply with the version; the client writes it back.
			cl.version = version
			cl.write = true
			h.replaceTop(occEvent{t: ev.t + delay() + delay(), client: ev.client})
			continue
		}
		o.calls++
		reply := ev.t + delay()
		if cl.version == version {
			version++
			o.end = max(o.end, reply)
			h.pop()
			continue
		}
		cl.attempt++
		d, stop := cl.seq.NextDelay(cl.attempt, errFailed)
		if stop != nil {
			o.gaveUp++
			o.end = max(o.end, reply)
			h.pop()
			continue
		}
		cl.write = false
		h.replaceTop(occEvent{t: reply + int64(max(d, 0)) + delay(), client: ev.client})
	}
	return o
}

// occHeap is a binary min-heap of events ordered by time. Equal times are
// left in whatever order the heap operations produce, which is itself
// deterministic, so runs stay reproducible.
type occHeap []occEvent

func (h occHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i, h[i])
	}
}

// down places e at position i or below, moving smaller children up.
func (h occHeap) down(i int, e occEvent) {
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h[r].t < h[l].t {
			m = r
		}
		if h[m].t >= e.t {
			break
		}
		h[i] = h[m]
		i = m
	}
	h[i] = e
}

// replaceTop replaces the earliest event with e and restores the order.
func (h occHeap) replaceTop(e occEvent) { h.down(0, e) }

// pop removes the earliest event.
func (h *occHeap) pop() {
	old := *h
	n := len(old) - 1
	last := old[n]
	*h = old[:n]
	if n > 0 {
		h.down(0, last)
	}
}
