package main

import (
	"fmt"
	"io"
	"math"
	"time"

	"github.com/backoffgo/backoff/internal/sim"
)

// The server-share workload: the budget's chains of services, each
// counting its incoming retries in a retryshare.Share.

var serverShareWorkload = spec[sim.ServerShareConfig, sim.ServerShareResult]{
	title: "server-share",
	help:  serverShareHelp,
	config: func(o *options) sim.ServerShareConfig {
		cfg := sim.DefaultServerShare()
		cfg.Policy = o.policy(cfg.Policy)
		if o.set["layers"] {
			cfg.Layers = o.layers
		}
		if o.set["outage"] {
			cfg.Outage = o.outage
		}
		fleet := cfg.Scenarios[len(cfg.Scenarios)-1]
		if o.set["clients"] {
			fleet.Clients = o.clients
		}
		if o.rates != nil {
			cfg.Scenarios = nil
			for _, r := range o.rates {
				cfg.Scenarios = append(cfg.Scenarios, sim.ShareScenario{Clients: 1, Rate: r})
			}
		} else {
			cfg.Scenarios = cfg.Scenarios[:len(cfg.Scenarios)-1]
		}
		cfg.Scenarios = append(cfg.Scenarios, fleet)
		return cfg
	},
	contenders: func(_ sim.ServerShareConfig, cs []sim.Contender) []sim.Contender {
		return budgetContenders(sim.BudgetAmplificationConfig{}, cs)
	},
	validate: sim.ServerShareConfig.Validate,
	progress: func(c *sim.ServerShareConfig, p func(sim.Progress)) { c.Progress = p },
	simulate: sim.ServerShare,
	table:    serverShareTable,
	chart:    serverShareChart,
}

// scenario names a scenario: "1 client at 100/s" or "10,000 clients at 1/s".
func scenario(sc sim.ShareScenario) string {
	if sc.Clients == 1 {
		return fmt.Sprintf("1 client at %g/s", sc.Rate)
	}
	return fmt.Sprintf("%s clients at %g/s", commas(int64(sc.Clients)), sc.Rate)
}

// reaction formats a reaction time: "-" when there was none.
func reaction(d time.Duration) string {
	if d < 0 {
		return "-"
	}
	return d.Round(time.Millisecond).String()
}

func serverShareTable(w io.Writer, o *options, cfg sim.ServerShareConfig, res []sim.ServerShareResult) {
	b, s := sim.BudgetDefaults(cfg.Budget), sim.ShareDefaults(cfg.Share)
	header(w, fmt.Sprintf("server-share: chains of %d services x %d attempts over a dependency, each with a budget (ratio %g, reserve %g/s, burst %d) and a RetryShare (threshold %g, window %v, burst %d); %s requests at %g%% failures, then a %v outage; policy %s",
		cfg.Layers, cfg.Policy.MaxAttempts, b.Ratio, b.Reserve, b.Burst, s.Threshold, s.Window, s.Burst, commas(int64(cfg.HealthyRequests)), 100*cfg.Background, cfg.Outage, res[0].Policy))
	tw := table(w)
	fmt.Fprintln(tw, "scenario\tload\tfirst window\tpeak window\treacts in\twithout RetryShare: load\thealthy: told not to retry\trequests failed\twithout\t")
	for _, p := range res[0].Points {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", scenario(p.ShareScenario), defined(p.With.Load, "%.3fx"), defined(p.With.First, "%.3fx"), defined(p.With.Peak, "%.3fx"),
			reaction(p.With.React), defined(p.Without.Load, "%.3fx"), defined(p.With.Refused, "%.4f"), defined(p.With.HealthyFailed, "%.1e"), defined(p.Without.HealthyFailed, "%.1e"))
	}
	tw.Flush()
	fmt.Fprintln(w, "load: calls at the dependency per request through the outage, its first window apart; peak: the most over any window of it;")
	fmt.Fprintln(w, "reacts in: from the outage's start to the dependency's first \"do not retry\" by its RetryShare (-: never needed, the budgets")
	fmt.Fprintln(w, "keep retries under the threshold); healthy: share of the dependency's failing answers that said not to retry, of requests failed")
}

func serverShareChart(cfg sim.ServerShareConfig, res []sim.ServerShareResult, o *options) []byte {
	var bars []bar
	value := func(v float64) float64 {
		if math.IsNaN(v) {
			return 0
		}
		return v
	}
	for _, p := range res[0].Points {
		bars = append(bars,
			bar{scenario(p.ShareScenario), defined(p.With.Load, "%.2fx with RetryShares"), color("full-jitter"), value(p.With.Load)},
			bar{scenario(p.ShareScenario) + ", without", defined(p.Without.Load, "%.2fx"), color("equal-jitter"), value(p.Without.Load)})
	}
	return barChart(fmt.Sprintf("Server-side retry count: load at the dependency through a %v outage", cfg.Outage),
		fmt.Sprintf("chains of %d services x %d attempts, a budget each, with and without a RetryShare each; seed %d", cfg.Layers, cfg.Policy.MaxAttempts, o.seed),
		"calls reaching the dependency per request", bars)
}
