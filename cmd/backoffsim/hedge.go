package main

import (
	"fmt"
	"io"
	"time"

	"github.com/backoffgo/backoff/internal/sim"
)

// The hedge workload (issue 29): hedged requests against a server whose
// latency has a tail, with the hedge package's adaptive delay and the
// library's Budget.

var hedgeWorkload = spec[sim.HedgeConfig, sim.HedgeResult]{
	title: "hedge",
	help:  "hedged requests (issue 29): 16 closed-loop clients, one hedge per request\nafter a fixed 10 ms or an adaptive p95/p97 (hedge.Delay), with and without\na budget; the peers' tail, issue 29's 1% 50x slower, a brownout",
	config: func(o *options) sim.HedgeConfig {
		cfg := sim.DefaultHedge()
		if o.set["clients"] {
			cfg.Concurrency = o.clients
		}
		return cfg
	},
	contenders: func(sim.HedgeConfig, []sim.Contender) []sim.Contender { return nil },
	validate:   sim.HedgeConfig.Validate,
	progress:   func(c *sim.HedgeConfig, p func(sim.Progress)) { c.Progress = p },
	simulate:   sim.Hedge,
	table:      hedgeTable,
	chart:      hedgeChart,
}

// ms formats a latency in milliseconds, two decimals.
func ms(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/1e6) }

func hedgeTable(w io.Writer, o *options, cfg sim.HedgeConfig, res []sim.HedgeResult) {
	for _, r := range res {
		header(w, fmt.Sprintf("hedge: %s; %d clients, %s requests per row", r.Server.Name, cfg.Concurrency, commas(int64(cfg.Requests))))
		tw := table(w)
		fmt.Fprintln(tw, "hedging\tp50 ms\tp99 ms\tp99.9 ms\tp99.9 vs none\textra\tbudget's share\trefused\tcancelled\t")
		none := r.Rows[0].P999
		for _, row := range r.Rows {
			share := "-"
			if row.Budget {
				share = fmt.Sprintf("%.2f%%", 100*row.Bound)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%+.0f%%\t%.2f%%\t%s\t%d\t%d\t\n", row.Name, ms(row.P50), ms(row.P99), ms(row.P999),
				100*(float64(row.P999)/float64(none)-1), 100*row.Extra, share, row.Refused, row.Cancelled)
		}
		tw.Flush()
	}
	fmt.Fprintln(w, "extra: copies the server received per request, minus 1; budget's share: what the budget allows over the row,")
	fmt.Fprintln(w, "(Ratio·requests + Reserve·duration + Burst) / requests; p99.9 vs none: against the first row of the same server")
}

func hedgeChart(cfg sim.HedgeConfig, res []sim.HedgeResult, o *options) []byte {
	var bars []bar
	colors := []string{"no-backoff", "exponential", "full-jitter", "equal-jitter", "decorrelated", "timid-jitter"}
	for _, r := range res {
		for i, row := range r.Rows {
			bars = append(bars, bar{fmt.Sprintf("%.24s: %s", r.Server.Name, row.Name),
				fmt.Sprintf("%s ms, %.1f%% extra", ms(row.P999), 100*row.Extra), color(colors[i%len(colors)]), float64(row.P999) / 1e6})
		}
	}
	return barChart("Hedged requests: p99.9 latency",
		fmt.Sprintf("%d closed-loop clients, %s requests per row, one hedge at most; seed %d", cfg.Concurrency, commas(int64(cfg.Requests)), o.seed),
		"p99.9 latency, ms", bars)
}
