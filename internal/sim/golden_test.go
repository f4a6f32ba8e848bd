package sim

import (
	"fmt"
	"strings"
	"testing"

	"github.com/backoffgo/backoff/internal/golden"
)

// goldenLines runs every workload on a small configuration at seed 1 and
// formats results that depend on every random draw.
func goldenLines() string {
	var b strings.Builder
	cs := []Contender{FullJitter(), EqualJitter(), DecorrelatedFrom(0), TimidJitter()}
	h := DefaultHerd()
	h.Clients, h.Runs = 200, 2
	hr, err := Herd(h, cs, 1)
	if err != nil {
		return err.Error()
	}
	for _, r := range hr {
		fmt.Fprintf(&b, "herd %s %v %d\n", r.Policy, r.PeakShares, len(r.Series))
	}
	o := DefaultOutage()
	o.Clients, o.Runs = 300, 2
	or, err := Outage(o, cs, 1)
	if err != nil {
		return err.Error()
	}
	for _, r := range or {
		fmt.Fprintf(&b, "outage %s %v %v\n", r.Policy, r.SuccessRates, r.CallsPerClient)
	}
	c := DefaultContention()
	c.Clients, c.Runs = []int{7, 12}, 3
	cr, err := Contention(c, cs, 1)
	if err != nil {
		return err.Error()
	}
	for _, r := range cr {
		fmt.Fprintf(&b, "contention %s %+v %d\n", r.Policy, r.Points, r.Events)
	}
	a := DefaultAmplification()
	a.Requests = 3
	ar, err := Amplification(a, cs, 1)
	if err != nil {
		return err.Error()
	}
	for _, r := range ar {
		fmt.Fprintf(&b, "amplification %s %v %v\n", r.Policy, r.EveryLayer.TimeToFail, r.OneLayer.TimeToFail)
		fmt.Fprintf(&b, "amplification innermost %s %v %+v %+v %+v\n", r.Policy, r.Innermost.TimeToFail, r.Innermost, r.Library, r.LibraryRetryInner)
	}
	p := DefaultPeriodic()
	p.Jobs, p.Runs = 300, 2
	pr, err := Periodic(p, cs, 1)
	if err != nil {
		return err.Error()
	}
	for _, r := range pr {
		fmt.Fprintf(&b, "periodic %s %v %d\n", r.Policy, r.Peak, r.Events)
	}
	sr, err := ServerShare(smallShare(), cs[:1], 1)
	if err != nil {
		return err.Error()
	}
	for _, p := range sr[0].Points {
		fmt.Fprintf(&b, "server-share %s %+v\n", sr[0].Policy, p)
	}
	fmt.Fprintf(&b, "server-share %s %d\n", sr[0].Policy, sr[0].Events)
	fr, err := ShareFleet(smallFleet(), cs[:1], 1)
	if err != nil {
		return err.Error()
	}
	for _, p := range fr[0].Points {
		fmt.Fprintf(&b, "share-fleet %s %+v\n", fr[0].Policy, p)
	}
	fmt.Fprintf(&b, "share-fleet %s %d\n", fr[0].Policy, fr[0].Events)
	ov, err := Overload(smallOverload(), nil, 1)
	if err != nil {
		return err.Error()
	}
	for _, r := range ov {
		for i, run := range r.Runs {
			fmt.Fprintf(&b, "overload %s %d %v %v %.6f %.6f %.6f %.6f %.6f %d %d\n", r.Policy.Name, i, run.Recovered, run.Recovery,
				run.During, run.After, run.Success, run.PeakLoad, run.Wasted, run.Requests, run.Refused)
		}
		fmt.Fprintf(&b, "overload %s %d\n", r.Policy.Name, r.Events)
	}
	hc := DefaultHedge()
	hc.Requests = 2000
	hg, err := Hedge(hc, nil, 1)
	if err != nil {
		return err.Error()
	}
	for _, r := range hg {
		for _, row := range r.Rows {
			fmt.Fprintf(&b, "hedge %s %+v\n", r.Server.Name, row)
		}
		fmt.Fprintf(&b, "hedge %s %d\n", r.Server.Name, r.Events)
	}
	return b.String()
}

// TestGolden pins exact results of small runs at seed 1, in
// testdata/golden.txt (go test -run TestGolden -update rewrites it), so
// that a change to the random streams, the event order or the arithmetic
// shows even where the claims' ranges would still hold. The published figures
// (docs/simulations.md) are pinned the same way by cmd/backoffsim.
func TestGolden(t *testing.T) {
	golden.Check(t, "testdata/golden.txt", []byte(goldenLines()))
}
