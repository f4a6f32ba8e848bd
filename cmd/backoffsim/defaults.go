package main

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/backoffgo/backoff/internal/sim"
)

// def holds the workloads' defaults, read once from the sim package's
// Default* functions, their one home: the help texts state them from here.
var def = struct {
	herd          sim.HerdConfig
	outage        sim.OutageConfig
	contention    sim.ContentionConfig
	amplification sim.AmplificationConfig
	periodic      sim.PeriodicConfig
	recovery      sim.RecoveryConfig
	budget        sim.BudgetAmplificationConfig
	serverShare   sim.ServerShareConfig
	shareFleet    sim.ShareFleetConfig
	overload      sim.OverloadConfig
}{
	sim.DefaultHerd(), sim.DefaultOutage(), sim.DefaultContention(), sim.DefaultAmplification(),
	sim.DefaultPeriodic(), sim.DefaultRecovery(), sim.DefaultBudgetAmplification(), sim.DefaultServerShare(),
	sim.DefaultShareFleet(), sim.DefaultOverload(),
}

// dur formats d as time.Duration does, without its trailing zero units:
// 1h, 5m, 30s, 10ms.
func dur(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// secs formats d in whole seconds: 300s.
func secs(d time.Duration) string { return fmt.Sprintf("%gs", d.Seconds()) }

// rateList formats request rates as -rates reads them: 1,10,100.
func rateList(rs []float64) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = fmt.Sprint(r)
	}
	return strings.Join(s, ",")
}

// shareRates returns the rates of server-share's one-client scenarios, and
// its fleet: its last scenario.
func shareRates(cfg sim.ServerShareConfig) (one []float64, fleet sim.ShareScenario) {
	for _, sc := range cfg.Scenarios[:len(cfg.Scenarios)-1] {
		one = append(one, sc.Rate)
	}
	return one, cfg.Scenarios[len(cfg.Scenarios)-1]
}

// sweepOf formats contention's fleet sizes as -sweep reads them.
func sweepOf(sizes []int) string {
	return fmt.Sprintf("%d:%d:%d", sizes[0], sizes[len(sizes)-1], sizes[1]-sizes[0])
}

// both formats the default of two workloads: "herd/outage 8" when they
// agree, "herd 8, outage 9" otherwise.
func both(a, b string, va, vb any) string {
	if va == vb {
		return fmt.Sprintf("%s/%s %v", a, b, va)
	}
	return fmt.Sprintf("%s %v, %s %v", a, va, b, vb)
}

// Help texts of the workloads that state defaults.
var (
	herdHelp = fmt.Sprintf("%s clients fail at t=0 against a dependency that stays down;\npeak share = most retries in one %s window / all retries",
		commas(int64(def.herd.Clients)), dur(def.herd.Window))
	outageHelp = fmt.Sprintf("%s clients arrive uniformly during a %s outage; success\nrate = share that call at or after its end within their attempts",
		commas(int64(def.outage.Clients)), dur(def.outage.Outage))
	amplificationHelp = fmt.Sprintf("%d layers x %d attempts over a failing dependency (%.0fx) vs\nretries at the top layer only (%dx)",
		def.amplification.Layers, def.amplification.Policy.MaxAttempts,
		math.Pow(float64(def.amplification.Policy.MaxAttempts), float64(def.amplification.Layers)), def.amplification.Policy.MaxAttempts)
	periodicHelp = fmt.Sprintf("%s jobs on a %.0f-minute schedule, each offset by the policy's\nfirst delay with base = cap = interval; peak calls per second",
		commas(int64(def.periodic.Jobs)), def.periodic.Interval.Minutes())
	recoveryHelp = fmt.Sprintf("the herd's %s clients (%s attempts) with the dependency back at\n%s: peak calls per %s window after it returns, and at the cap",
		commas(int64(def.recovery.Clients)), commas(int64(def.recovery.Policy.MaxAttempts)), recoverAt(def.recovery.Recover), dur(def.recovery.Window))
	budgetHelp = func() string {
		b := sim.BudgetDefaults(def.budget.Budget)
		return fmt.Sprintf("the amplification stack with the default retry budget (ratio %g,\nreserve %g/s, burst %d) per layer or shared, by request rate", b.Ratio, b.Reserve, b.Burst)
	}()
	serverShareHelp = func() string {
		one, fleet := shareRates(def.serverShare)
		r := make([]string, len(one))
		for i, v := range one {
			r[i] = commas(int64(v))
		}
		return fmt.Sprintf("the budget's stack as chains of services, each with a RetryShare\n(the server's retry count): 1 client at %s/s and %s\nclients at %g/s, through a %s outage after %s requests at %g%% failures",
			strings.Join(r, ", "), commas(int64(fleet.Clients)), fleet.Rate, dur(def.serverShare.Outage),
			commas(int64(def.serverShare.HealthyRequests)), 100*def.serverShare.Background)
	}()
)

// recoverAt formats the recovery times: "30s or 300s".
func recoverAt(ts []time.Duration) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = secs(t)
	}
	return strings.Join(s, " or ")
}
