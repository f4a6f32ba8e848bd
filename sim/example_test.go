package sim_test

import (
	"fmt"
	"os"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/sim"
)

// Example runs a policy of your own, a constant one-second delay, through
// two workloads next to the library's policies and the baselines.
func Example() {
	constant := sim.Contender{Name: "constant-1s", New: func(backoff.Config, backoff.Rng) (backoff.Policy, error) {
		return backoff.PolicyFunc(func(int, error) (time.Duration, error) { return time.Second, nil }), nil
	}}
	var all []sim.Result
	for _, w := range []sim.Workload{sim.Herd, sim.Outage} {
		res, err := sim.Run(w, sim.Options{Seed: 1}, constant)
		if err != nil {
			fmt.Println(err)
			return
		}
		all = append(all, res...)
	}
	sim.Format(os.Stdout, all)
	// Output:
	// herd                 peak share  retries/client
	// exponential          0.143       7.000
	// full-jitter          0.023       7.000
	// equal-jitter         0.031       7.000
	// decorrelated         0.010       7.000
	// no-backoff           1.000       7.000
	// timid-jitter         0.009       7.000
	// constant-1s (yours)  0.143       7.000
	//
	// outage               success  calls/client
	// exponential          0.426    7.600
	// full-jitter          0.211    7.802
	// equal-jitter         0.318    7.702
	// decorrelated         0.268    7.573
	// no-backoff           0.000    8.000
	// timid-jitter         0.450    7.529
	// constant-1s (yours)  0.235    7.302
}
