package sim

import (
	"fmt"
	"strings"
	"testing"
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
	return b.String()
}

// TestGolden pins exact results of small runs at seed 1, so that a change
// to the random streams, the event order or the arithmetic shows even where
// the claims' ranges would still hold. The published figures
// (docs/simulations.md) are pinned the same way by cmd/backoffsim.
func TestGolden(t *testing.T) {
	if got := goldenLines(); got != golden {
		t.Errorf("results changed:\n%s\nwant:\n%s", got, golden)
	}
}

const golden = `herd full-jitter [0.03142857142857143 0.02642857142857143] 1134
herd equal-jitter [0.03357142857142857 0.035] 1202
herd decorrelated [0.012857142857142857 0.012857142857142857] 3903
herd timid-jitter [0.01 0.012142857142857143] 1383
outage full-jitter [0.24 0.19666666666666666] 7.776666666666666
outage equal-jitter [0.35 0.28] 7.681666666666667
outage decorrelated [0.2966666666666667 0.24] 7.56
outage timid-jitter [0.49666666666666665 0.4166666666666667] 7.503333333333333
contention full-jitter [{Clients:7 Calls:25.333333333333332 Time:408.399719ms GaveUp:0} {Clients:12 Calls:51.666666666666664 Time:679.419435ms GaveUp:0}] 462
contention equal-jitter [{Clients:7 Calls:26.666666666666668 Time:502.494551ms GaveUp:0} {Clients:12 Calls:56 Time:997.965699ms GaveUp:0}] 496
contention decorrelated [{Clients:7 Calls:21.333333333333332 Time:376.872693ms GaveUp:0} {Clients:12 Calls:43 Time:528.457857ms GaveUp:0}] 386
contention timid-jitter [{Clients:7 Calls:17 Time:511.973669ms GaveUp:0} {Clients:12 Calls:30.666666666666668 Time:650.616452ms GaveUp:0}] 286
amplification full-jitter 20.68558573s 131.914549ms
amplification equal-jitter 29.707792862s 230.957275ms
amplification decorrelated 1m8.788584836s 450.113833ms
amplification timid-jitter 1m2.903757969s 500.582482ms
periodic full-jitter 6 7200
periodic equal-jitter 8.5 7200
periodic decorrelated 300 7200
periodic timid-jitter 300 7200
`
