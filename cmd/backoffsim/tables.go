package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/backoffgo/backoff/sim"
)

// label returns a policy's table label, marking baselines with a star.
func label(o *options, name string) string {
	for _, c := range o.policies {
		if c.Name == name && c.Baseline {
			return name + " *"
		}
	}
	return name
}

func table(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
}

func header(w io.Writer, title string) {
	fmt.Fprintf(w, "\n== %s\n", title)
}

func runHerd(o *options, w io.Writer) ([]byte, error) {
	cfg := sim.DefaultHerd()
	cfg.Params = o.override(cfg.Params)
	cfg.Runs = o.runsOr(cfg.Runs)
	if o.set["clients"] {
		cfg.Clients = o.clients
	}
	if o.set["window"] {
		cfg.Window = o.window
	}
	res, err := sim.Herd(cfg, o.policies, o.seed)
	if err != nil {
		return nil, err
	}
	header(w, fmt.Sprintf("herd: %d clients fail at t=0; base %v, cap %v, %d attempts; %v windows; %d runs",
		cfg.Clients, cfg.Params.Base, cfg.Params.Cap, cfg.Params.MaxAttempts, cfg.Window, cfg.Runs))
	var expShare float64
	for _, r := range res {
		if r.Policy == "exponential" {
			expShare = r.PeakShare
		}
	}
	tw := table(w)
	fmt.Fprintln(tw, "policy\tretries\tpeak share\tmin\tmax\texponential/this\tlast retry\t")
	for _, r := range res {
		lo, hi := minMax(r.PeakShares)
		ratio := "-"
		if expShare > 0 && r.PeakShare > 0 {
			ratio = fmt.Sprintf("%.1fx", expShare/r.PeakShare)
		}
		last := time.Duration(len(r.Series)) * r.Window
		fmt.Fprintf(tw, "%s\t%.0f\t%.2f%%\t%.2f%%\t%.2f%%\t%s\t%v\t\n",
			label(o, r.Policy), r.Retries, 100*r.PeakShare, 100*lo, 100*hi, ratio, last)
	}
	tw.Flush()
	fmt.Fprintln(w, "peak share: the most retries in one window / all retries (mean, min, max over runs); last retry: end of the last non-empty window, first run")
	return herdChart(cfg, res, o), nil
}

func runOutage(o *options, w io.Writer) ([]byte, error) {
	cfg := sim.DefaultOutage()
	cfg.Params = o.override(cfg.Params)
	cfg.Runs = o.runsOr(cfg.Runs)
	if o.set["clients"] {
		cfg.Clients = o.clients
	}
	if o.set["outage"] {
		cfg.Outage = o.outage
	}
	res, err := sim.Outage(cfg, o.policies, o.seed)
	if err != nil {
		return nil, err
	}
	header(w, fmt.Sprintf("outage: %v outage, %d clients arriving uniformly during it; base %v, cap %v, %d attempts; %d runs",
		cfg.Outage, cfg.Clients, cfg.Params.Base, cfg.Params.Cap, cfg.Params.MaxAttempts, cfg.Runs))
	tw := table(w)
	fmt.Fprintln(tw, "policy\tsuccess rate\tmin\tmax\tcalls/client\t")
	for _, r := range res {
		lo, hi := minMax(r.SuccessRates)
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%.3f\t%.2f\t\n", label(o, r.Policy), r.SuccessRate, lo, hi, r.CallsPerClient)
	}
	tw.Flush()
	fmt.Fprintln(w, "success rate: clients that called at or after the end of the outage before running out of attempts")
	return outageChart(cfg, res, o), nil
}

func runContention(o *options, w io.Writer) ([]byte, error) {
	cfg := sim.DefaultContention()
	cfg.Params = o.override(cfg.Params)
	cfg.Runs = o.runsOr(cfg.Runs)
	switch {
	case o.sweep != nil:
		cfg.Clients = o.sweep
	case o.set["clients"]:
		cfg.Clients = []int{o.clients}
	}
	if o.set["net-mean"] {
		cfg.NetMean = o.netMean
	}
	if o.set["net-sd"] {
		cfg.NetSD = o.netSD
	}
	res, err := sim.Contention(cfg, o.policies, o.seed)
	if err != nil {
		return nil, err
	}
	attempts := "unlimited"
	if cfg.Params.MaxAttempts > 0 {
		attempts = fmt.Sprint(cfg.Params.MaxAttempts)
	}
	header(w, fmt.Sprintf("contention (Brooker 2015 OCC): network |N(%v, %v)|; base %v (decorrelated %v), cap %v, attempts %s; %d runs per size",
		cfg.NetMean, cfg.NetSD, cfg.Params.Base, cfg.Params.DecorrelatedBase, cfg.Params.Cap, attempts, cfg.Runs))
	for _, metric := range []string{"calls (writes processed, mean)", "time (last success reply, mean, seconds)"} {
		fmt.Fprintf(w, "%s\n", metric)
		tw := table(w)
		var head strings.Builder
		head.WriteString("clients\t")
		for _, r := range res {
			head.WriteString(label(o, r.Policy) + "\t")
		}
		fmt.Fprintln(tw, head.String())
		for i, n := range cfg.Clients {
			fmt.Fprintf(tw, "%d\t", n)
			for _, r := range res {
				p := r.Points[i]
				if strings.HasPrefix(metric, "calls") {
					fmt.Fprintf(tw, "%.0f\t", p.Calls)
				} else {
					fmt.Fprintf(tw, "%.3f\t", p.Time.Seconds())
				}
			}
			fmt.Fprintln(tw)
		}
		tw.Flush()
	}
	for _, r := range res {
		for _, p := range r.Points {
			if p.GaveUp > 0 {
				fmt.Fprintf(w, "note: %s gave up on %.1f clients per run at %d clients\n", r.Policy, p.GaveUp, p.Clients)
			}
		}
	}
	return contentionChart(cfg, res, o), nil
}

func runAmplification(o *options, w io.Writer) ([]byte, error) {
	cfg := sim.DefaultAmplification()
	cfg.Params = o.override(cfg.Params)
	if o.set["layers"] {
		cfg.Layers = o.layers
	}
	res, err := sim.Amplification(cfg, o.policies, o.seed)
	if err != nil {
		return nil, err
	}
	header(w, fmt.Sprintf("amplification: %d layers over a dependency that fails after %v; %d attempts per retrying layer; base %v, cap %v; %d requests",
		cfg.Layers, cfg.CallLatency, cfg.Params.MaxAttempts, cfg.Params.Base, cfg.Params.Cap, cfg.Requests))
	tw := table(w)
	fmt.Fprintln(tw, "policy\tevery layer: load at dependency\tcalls, all layers\ttime to fail\ttop layer only: load\tcalls\ttime to fail\t")
	for _, r := range res {
		fmt.Fprintf(tw, "%s\t%.0fx\t%.0f\t%v\t%.0fx\t%.0f\t%v\t\n", label(o, r.Policy),
			r.EveryLayer.BottomCalls, r.EveryLayer.TotalCalls, r.EveryLayer.TimeToFail.Round(time.Millisecond),
			r.OneLayer.BottomCalls, r.OneLayer.TotalCalls, r.OneLayer.TimeToFail.Round(time.Millisecond))
	}
	tw.Flush()
	fmt.Fprintln(w, "load: calls reaching the failing dependency per top-level request; backoff changes how long, not how many")
	return amplificationChart(cfg, res, o), nil
}

func runPeriodic(o *options, w io.Writer) ([]byte, error) {
	cfg := sim.DefaultPeriodic()
	cfg.Runs = o.runsOr(cfg.Runs)
	if o.set["clients"] {
		cfg.Jobs = o.clients
	}
	if o.set["interval"] {
		cfg.Interval = o.interval
	}
	if o.set["horizon"] {
		cfg.Horizon = o.horizon
	}
	res, err := sim.Periodic(cfg, o.policies, o.seed)
	if err != nil {
		return nil, err
	}
	header(w, fmt.Sprintf("periodic: %d jobs every %v for %v, each start offset by the policy's first delay (base = cap = %v); %d runs",
		cfg.Jobs, cfg.Interval, cfg.Horizon, cfg.Interval, cfg.Runs))
	tw := table(w)
	fmt.Fprintln(tw, "offset source\tpeak calls/s\tmean calls/s\tpeak/mean\t")
	for _, r := range res {
		fmt.Fprintf(tw, "%s\t%.1f\t%.2f\t%.0fx\t\n", label(o, r.Policy), r.Peak, r.Mean, r.Peak/r.Mean)
	}
	tw.Flush()
	fmt.Fprintln(w, "no-backoff and exponential give every job the same offset: that is the fleet without a random offset;")
	fmt.Fprintln(w, "decorrelated does too here, because with base = cap its draw min(cap, U[base, 3·base]) is always cap")
	return periodicChart(cfg, res, o), nil
}

func minMax(v []float64) (lo, hi float64) {
	for i, x := range v {
		if i == 0 || x < lo {
			lo = x
		}
		if i == 0 || x > hi {
			hi = x
		}
	}
	return lo, hi
}
