package sim

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
)

// constant returns a contender whose policy always waits d.
func constant(name string, d time.Duration) Contender {
	return Contender{Name: name, New: func(backoff.Config, backoff.Rng) (backoff.Policy, error) {
		return backoff.PolicyFunc(func(int, error) (time.Duration, error) { return d, nil }), nil
	}}
}

func TestRunRefusesBadArguments(t *testing.T) {
	ok := constant("mine", time.Second)
	many := make([]Contender, 17)
	for i := range many {
		many[i] = constant(strings.Repeat("x", i+1), time.Second)
	}
	tests := []struct {
		name  string
		w     Workload
		opt   Options
		mine  []Contender
		param string
	}{
		{"unknown workload", "storm", Options{}, nil, "workload"},
		{"empty workload", "", Options{}, nil, "workload"},
		{"negative runs", Herd, Options{Runs: -1}, nil, "Options.Runs"},
		{"too many runs", Herd, Options{Runs: 101}, nil, "Options.Runs"},
		{"too many contenders", Herd, Options{}, many, "contenders"},
		{"empty name", Herd, Options{}, []Contender{{New: ok.New}}, "contenders[0].Name"},
		{"built-in name", Outage, Options{}, []Contender{{Name: "full-jitter", New: ok.New}}, "contenders[0].Name"},
		{"baseline name", Periodic, Options{}, []Contender{{Name: "ticker", New: ok.New}}, "contenders[0].Name"},
		{"repeated name", Herd, Options{}, []Contender{ok, ok}, "contenders[1].Name"},
		{"nil New", Recovery, Options{}, []Contender{ok, {Name: "other"}}, "contenders[1].New"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Run(tt.w, tt.opt, tt.mine...)
			var pe *ParamError
			if !errors.As(err, &pe) || pe.Param != tt.param {
				t.Fatalf("Run = %v; want a *ParamError for %s", err, tt.param)
			}
			if res != nil {
				t.Errorf("results %v with the error", res)
			}
			if !strings.Contains(err.Error(), tt.param) {
				t.Errorf("message %q does not name %s", err, tt.param)
			}
		})
	}
}

func TestRunReportsFaultyContenders(t *testing.T) {
	tests := []struct {
		name string
		w    Workload
		new  func(backoff.Config, backoff.Rng) (backoff.Policy, error)
		want string
	}{
		{"New fails", Herd, func(backoff.Config, backoff.Rng) (backoff.Policy, error) { return nil, errors.New("no luck") }, "no luck"},
		{"nil policy", Outage, func(backoff.Config, backoff.Rng) (backoff.Policy, error) { return nil, nil }, "nil policy"},
		{"New panics", Periodic, func(backoff.Config, backoff.Rng) (backoff.Policy, error) { panic("boom") }, "boom"},
		{"policy panics", Amplification, func(backoff.Config, backoff.Rng) (backoff.Policy, error) {
			return backoff.PolicyFunc(func(int, error) (time.Duration, error) { panic("bang") }), nil
		}, "bang"},
		{"past the largest time", Contention, constant("", math.MaxInt64).New, "largest time.Duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Run(tt.w, Options{Seed: 1, Runs: 1}, Contender{Name: "faulty", New: tt.new})
			if err == nil || !strings.Contains(err.Error(), `"faulty"`) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Run = %v; want an error naming \"faulty\" and %q", err, tt.want)
			}
			if res != nil {
				t.Errorf("results %v with the error", res)
			}
		})
	}
}

// TestCopiesMatchTheBuiltins runs the library's own policies as a caller's
// contenders: they draw the same streams, so they give the built-ins'
// figures exactly, in every workload; the results list the comparisons
// first, then the caller's, each with the workload's figures.
func TestCopiesMatchTheBuiltins(t *testing.T) {
	wantFigures := map[Workload][]string{
		Herd:          {"peak share", "retries/client"},
		Outage:        {"success", "calls/client"},
		Contention:    {"writes", "time (s)", "gave up"},
		Amplification: {"load", "time to fail (s)", "top-only time (s)"},
		Periodic:      {"peak/s", "mean/s"},
		Recovery:      {"peak at 30s", "peak at 300s", "dispersion"},
	}
	full := Contender{Name: "my-full", New: func(c backoff.Config, rng backoff.Rng) (backoff.Policy, error) {
		return backoff.NewFullJitter(c, rng)
	}}
	dec := Contender{Name: "my-decorrelated", New: func(c backoff.Config, rng backoff.Rng) (backoff.Policy, error) {
		return backoff.NewDecorrelated(c, rng) // a Sequencer: per-client state
	}}
	for _, row := range workloads {
		w := row.name
		t.Run(string(w), func(t *testing.T) {
			res, err := Run(w, Options{Seed: 7, Runs: 2}, full, dec)
			if err != nil {
				t.Fatal(err)
			}
			byName := map[string]Result{}
			for i, r := range res {
				byName[r.Policy] = r
				if r.Workload != w || r.Builtin != (i < len(res)-2) {
					t.Errorf("result %d: %s, builtin %v", i, r.Workload, r.Builtin)
				}
				var names []string
				for _, f := range r.Figures {
					names = append(names, f.Name)
				}
				if !reflect.DeepEqual(names, wantFigures[w]) {
					t.Errorf("%s: figures %v, want %v", r.Policy, names, wantFigures[w])
				}
			}
			if got, want := byName["my-full"].Figures, byName["full-jitter"].Figures; !reflect.DeepEqual(got, want) {
				t.Errorf("copy of full jitter: %v, built-in %v", got, want)
			}
			// Contention starts the built-in decorrelated jitter at 5 ms.
			if got, want := byName["my-decorrelated"].Figures, byName["decorrelated"].Figures; w != Contention && !reflect.DeepEqual(got, want) {
				t.Errorf("copy of decorrelated jitter: %v, built-in %v", got, want)
			}
			if res[len(res)-1].Policy != "my-decorrelated" {
				t.Errorf("last result %q, want the caller's last contender", res[len(res)-1].Policy)
			}
		})
	}
}

// TestAttemptLimit: a policy that never gives up is stopped at the
// workload's attempts, as the library's are, and one that gives up at once
// has an undefined peak share, shown as "-".
func TestAttemptLimit(t *testing.T) {
	never := constant("never", time.Millisecond)
	once := Contender{Name: "once", New: func(backoff.Config, backoff.Rng) (backoff.Policy, error) {
		return backoff.PolicyFunc(func(int, error) (time.Duration, error) { return 0, backoff.ErrExhausted }), nil
	}}
	res, err := Run(Herd, Options{Seed: 1, Runs: 1}, never, once)
	if err != nil {
		t.Fatal(err)
	}
	n := len(res)
	if f := res[n-2].Figures; f[0].Value != 1 || f[1].Value != 7 {
		t.Errorf("never: %v, want the whole fleet in one window, 7 retries each", f)
	}
	if f := res[n-1].Figures; !math.IsNaN(f[0].Value) || f[1].Value != 0 {
		t.Errorf("once: %v, want an undefined share and no retries", f)
	}
	var b strings.Builder
	if err := Format(&b, res[n-1:]); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), "herd          peak share  retries/client\nonce (yours)  -           0.000\n"; got != want {
		t.Errorf("Format:\n%q\nwant\n%q", got, want)
	}
}

type failWriter struct{}

var errWrite = errors.New("disk full")

func (failWriter) Write([]byte) (int, error) { return 0, errWrite }

func TestFormat(t *testing.T) {
	rs := []Result{
		{Workload: Herd, Policy: "a", Builtin: true, Figures: []Figure{{"x", 1}, {"y", 22.5}}},
		{Workload: Herd, Policy: "b", Figures: []Figure{{"x", 0.0004}, {"y", math.NaN()}}},
		{Workload: Outage, Policy: "a", Builtin: true, Figures: []Figure{{"z", 3}}},
	}
	var b strings.Builder
	if err := Format(&b, rs); err != nil {
		t.Fatal(err)
	}
	want := "herd       x      y\na          1.000  22.500\nb (yours)  0.000  -\n\noutage  z\na       3.000\n"
	if b.String() != want {
		t.Errorf("Format:\n%s\nwant\n%s", b.String(), want)
	}
	if err := Format(failWriter{}, rs); !errors.Is(err, errWrite) {
		t.Errorf("Format to a failing writer = %v, want %v", err, errWrite)
	}
}

// TestConcurrentRuns: Run may be called from several goroutines at once,
// and the figures depend on the seed only.
func TestConcurrentRuns(t *testing.T) {
	var wg sync.WaitGroup
	res := make([][]Result, 4)
	for i := range res {
		wg.Go(func() {
			var err error
			if res[i], err = Run(Outage, Options{Seed: 3, Runs: 1}, constant("c", 100*time.Millisecond)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for i := range res {
		if !reflect.DeepEqual(res[i], res[0]) {
			t.Errorf("run %d differs: %v, want %v", i, res[i], res[0])
		}
	}
	other, err := Run(Outage, Options{Seed: 4, Runs: 1})
	if err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(other[0], res[0][0]) {
		t.Errorf("seeds 3 and 4 gave the same figures: %v", other[0])
	}
}
