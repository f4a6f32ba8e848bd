package sim

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// tinyRateRows are rows that Validate accepts whose flow's rate is so low
// that a gap between arrivals (1/rate seconds) overflows time.Duration.
var tinyRateRows = map[string]func(*ShareFleetConfig){
	"a liar at 1e-20 of the traffic": func(c *ShareFleetConfig) { c.Rows[0].Liar = 1e-20 },
	"a healthy route at 1e-20/s":     func(c *ShareFleetConfig) { c.Rows[0].Healthy = 1e-20 },
	"fixed arrivals at 1e-11/s":      func(c *ShareFleetConfig) { c.Fixed = true; c.Rows[0].Rate = 1e-11 },
}

func tinyRateConfig(name string) ShareFleetConfig {
	cfg := DefaultShareFleet()
	cfg.Rows = []FleetRow{{Group: "herd", Clients: 10, Replicas: 1, Rate: 1, Outage: true}}
	tinyRateRows[name](&cfg)
	return cfg
}

// TestShareFleetTinyRatesEndOrErr: every FleetRow value within the ranges
// its fields' comments give (Liar in [0, 1), Healthy >= 0, Rate > 0) must
// either be refused by Validate with an error naming the parameter or run
// to its end. A flow whose rate is tiny has gaps of more than 2⁶³ ns:
// time.Duration(f) of such a float is the minimum Duration on amd64, the
// next arrival lands before the current one, and the arrival after wraps
// back (MinInt64 + MinInt64 = 0): ShareFleet never returns, its heap
// growing. Each case runs in a child process killed after 5 s.
func TestShareFleetTinyRatesEndOrErr(t *testing.T) {
	if name := os.Getenv("SIM_REVIEW33_CASE"); name != "" {
		_, err := ShareFleet(tinyRateConfig(name), []Contender{FullJitter()}, 1)
		if err != nil {
			os.Stdout.WriteString("ERR " + err.Error() + "\n")
		}
		return
	}
	for name := range tinyRateRows {
		t.Run(name, func(t *testing.T) {
			verr := tinyRateConfig(name).Validate([]Contender{FullJitter()})
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestShareFleetTinyRatesEndOrErr$")
			cmd.Env = append(os.Environ(), "SIM_REVIEW33_CASE="+name)
			out, err := cmd.CombinedOutput()
			if ctx.Err() != nil {
				t.Fatalf("Validate: %v; ShareFleet still running after 5 s (killed)", verr)
			}
			if err != nil {
				t.Fatalf("ShareFleet's process: %v\n%s", err, out)
			}
			if verr != nil && !strings.Contains(string(out), "ERR ") {
				t.Errorf("Validate refused (%v) but ShareFleet ran", verr)
			}
		})
	}
}
