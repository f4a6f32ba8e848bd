package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/backoffgo/backoff/internal/race"

	"github.com/backoffgo/backoff/internal/golden"
	"github.com/backoffgo/backoff/internal/sim"
)

func TestBadFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-workload", "storm"}, `unknown workload "storm"`},
		{[]string{"-policies", "full-jitter,linear"}, `unknown policy "linear"`},
		{[]string{"-runs", "0"}, "-runs must be positive"},
		{[]string{"-clients", "-5"}, "-clients must be positive"},
		{[]string{"-base", "-1s"}, "-base must be positive"},
		{[]string{"-base", "2s", "-cap", "1s"}, "-cap 1s is below -base 2s"},
		{[]string{"-attempts", "0"}, "-attempts must be at least 1"},
		{[]string{"-sweep", "10:5:1"}, "TO is below FROM"},
		{[]string{"-sweep", "10-50"}, "want FROM:TO:STEP"},
		{[]string{"-sweep", "10:x:5"}, `"x" is not a positive integer`},
		{[]string{"-net-sd", "-1ms"}, "-net-sd must not be negative"},
		{[]string{"-workload", "share-fleet", "-forget"}, "-forget needs -memory"},
		{[]string{"-workload", "share-fleet", "-memory", "-1s"}, "share-fleet: Memory.Span: -1s"},
		{[]string{"herd"}, `unexpected argument "herd"`},
		{[]string{"-seed", "abc"}, "invalid value"},
		{[]string{"-nosuch"}, "flag provided but not defined"},
		{[]string{"-doc", "-runs", "2"}, "-runs cannot be combined"},
		// Issue 10: each reproduction is refused before anything runs.
		{[]string{"-workload", "herd", "-clients", "100000000"}, "herd: Clients: Clients 100000000"},
		{[]string{"-workload", "outage", "-clients", "100000000"}, "above the limit MaxWork"},
		{[]string{"-clients", "100000000"}, "the limit depends on -clients (given) and on -attempts, -runs, -policies"},
		{[]string{"-workload", "herd", "-window", "1us"}, "herd: Window: 1µs"},
		{[]string{"-workload", "herd", "-policies", "full-jitter", "-cap", "2562047h", "-attempts", "100"}, "herd: Window"},
		{[]string{"-workload", "contention", "-sweep", fmt.Sprintf("%d:%d:1", math.MaxInt-1, math.MaxInt)}, "contention: Clients"},
		{[]string{"-workload", "contention", "-sweep", "20000:20000:1"}, "the limit depends on -clients or -sweep (given) and on -runs, -policies"},
		{[]string{"-workload", "contention", "-clients", "20000"}, "above the limit MaxWork"},
		{[]string{"-workload", "contention", "-sweep", "1:1000000000:1"}, "more than MaxSweep"},
		{[]string{"-workload", "amplification", "-attempts", "1", "-layers", "1000000"}, "Layers: 1000000: want 1 to MaxLayers"},
		{[]string{"-workload", "amplification", "-layers", "20000000"}, "Layers is set by -layers"},
		{[]string{"-workload", "periodic", "-interval", "1ns"}, "periodic: Interval"},
		{[]string{"-workload", "periodic", "-horizon", "1000000h"}, "periodic: Horizon"},
		{[]string{"-workload", "herd", "-runs", "1000000000"}, "above the limit MaxWork"},
		{[]string{"-base", "20s"}, "Policy.Cap is set by -cap"},
		{[]string{"-rates", "1,x"}, `"x" is not a positive number`},
		{[]string{"-rates", "0"}, "is not a positive number"},
		{[]string{"-workload", "budget", "-rates", "2000000"}, "Rates is set by -rates"},
		{[]string{"-workload", "recovery", "-window", "1us"}, "recovery: Window"},
		{[]string{"-workload", "outage-budget", "-clients", "2000000", "-runs", "1"}, "MaxBudgetClients"},
		{[]string{"-workload", "server-share", "-clients", "100000"}, "server-share: Scenarios.Clients: 100000 clients × Layers 5 + 1: want 1 to MaxServices = 262144 services"},
		{[]string{"-workload", "server-share", "-clients", "100000"}, "the limit depends on -clients (given) and on -layers"},
		{[]string{"-workload", "server-share", "-outage", "5s"}, "Outage is set by -outage"},
		{[]string{"-workload", "server-share", "-rates", "1000000", "-clients", "50000"}, "the limit depends on -rates or -clients (given) and on -layers, -attempts, -outage, -policies"},
		{[]string{"-workload", "share-fleet", "-outage", "5s"}, "share-fleet: Outage: 5s: want from twice Share.Window"},
		{[]string{"-workload", "share-fleet", "-attempts", "1000"}, "the limit depends on -attempts (given) and on -outage, -policies"},
		{[]string{"-workload", "share-fleet", "-outage", "100000s"}, "share-fleet: Rows: a row of Shares: 1 × 22144 bytes, 1001 caller keys and up to 10001000 requests in flight: about 458 MiB, above the limit MaxFleetMemory = 128 MiB"},
		{[]string{"-slots", "0"}, "-slots must be positive"},
		{[]string{"-workload", "overload", "-slots", "200"}, "overload: Slots: the rows' requests × the policies' attempts × 3 events"},
		{[]string{"-workload", "overload", "-slots", "200"}, "the limit depends on -slots (given)"},
		{[]string{"-workload", "overload", "-slots", "100000"}, "above the limit MaxOverloadMemory = 256 MiB"},
		{[]string{"-workload", "overload", "-clients", "1000000"}, "the limit depends on -clients (given) and on -slots"},
		{[]string{"-workload", "overload", "-clients", "2000000"}, "overload: Clients: 2000000: want 1 to 1048576"},
		// Issue 16 §4: a refused estimate names the flags it depends on,
		// the ones given first, not one the user did not touch.
		{[]string{"-workload", "budget", "-layers", "10000", "-attempts", "1"}, "the limit depends on -layers, -attempts (given) and on -rates, -policies"},
		{[]string{"-workload", "herd", "-base", "2562047h", "-cap", "2562047h", "-attempts", "2"}, "the limit depends on -cap, -attempts (given) and on -window"},
		{[]string{"-workload", "recovery", "-cap", "2562047h", "-base", "1ns"}, "the limit depends on -cap (given) and on -window"},
		// (Unlimited attempts alone no longer are: the budget bounds the
		// retries, and the estimate counts what it allows.)
		{[]string{"-workload", "outage-budget", "-attempts", "-1", "-clients", "1048576", "-runs", "100"}, "outage-budget: Clients"},
		{[]string{"-workload", "outage-budget", "-attempts", "-1", "-clients", "1048576", "-runs", "100"}, "the limit depends on -clients, -runs, -attempts (given) and on -outage, -policies"},
		{[]string{"-workload", "herd", "-window", "1us", "-attempts", "8", "-cap", "10s"}, "the limit depends on -window, -cap, -attempts (given)"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := run(tt.args, &out, &errOut); code != 2 {
				t.Errorf("exit code %d, want 2", code)
			}
			if !strings.Contains(errOut.String(), tt.want) {
				t.Errorf("stderr = %q, want it to mention %q", errOut.String(), tt.want)
			}
			if out.Len() != 0 {
				t.Errorf("stdout = %q, want nothing", out.String())
			}
		})
	}
}

func TestPolicies(t *testing.T) {
	tests := []struct {
		arg  string
		want []string
	}{
		{"all", []string{"exponential", "full-jitter", "equal-jitter", "decorrelated", "no-backoff", "timid-jitter"}},
		{"builtins,no-backoff", []string{"exponential", "full-jitter", "equal-jitter", "decorrelated", "no-backoff"}},
		{"no-backoff, baselines", []string{"no-backoff", "timid-jitter"}},
		{"full-jitter,full-jitter,all", []string{"full-jitter", "exponential", "equal-jitter", "decorrelated", "no-backoff", "timid-jitter"}},
	}
	for _, tt := range tests {
		cs, err := parsePolicies(tt.arg)
		var got []string
		for _, c := range cs {
			got = append(got, c.Name)
		}
		if err != nil || strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Errorf("parsePolicies(%q) = %v, %v; want %v", tt.arg, got, err, tt.want)
		}
	}
}

// TestExactResults runs the hostile-input reproductions that have a right
// answer: they now give it.
func TestExactResults(t *testing.T) {
	var out, errOut bytes.Buffer
	args := []string{"-workload", "outage", "-outage", "2562047h", "-cap", "2562047h", "-attempts", "100", "-policies", "exponential", "-clients", "1000", "-runs", "1"}
	if code := run(args, &out, &errOut); code != 0 {
		t.Fatalf("exit code %d, stderr %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "exponential         1.000") {
		t.Errorf("outage through 292 years: want success 1.000:\n%s", out.String())
	}
	out.Reset()
	args = []string{"-workload", "herd", "-policies", "full-jitter,exponential", "-cap", "2562047h", "-attempts", "100", "-window", "1000h", "-clients", "100", "-runs", "2"}
	if code := run(args, &out, &errOut); code != 0 {
		t.Fatalf("exit code %d, stderr %s", code, errOut.String())
	}
	// Exponential's last retry is past the largest time.Duration: shown as
	// windows times their width, not wrapped.
	if !strings.Contains(out.String(), "×1000h0m0s") || !strings.Contains(out.String(), "9900") {
		t.Errorf("herd over 292 years:\n%s", out.String())
	}
	out.Reset()
	args = []string{"-workload", "contention", "-net-mean", "2562047h", "-clients", "3", "-runs", "1"}
	if code := run(args, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "virtual time passes the largest time.Duration") {
		t.Errorf("contention with a 292-year network: exit %d, stderr %s", code, errOut.String())
	}
}

func TestProgressLine(t *testing.T) {
	var b bytes.Buffer
	now := time.Unix(0, 0)
	p := &progressLine{w: &b, start: now, now: func() time.Time { return now }}
	p.report(sim.Progress{Workload: "herd", Policy: "full-jitter", Done: 1, Total: 4})
	if b.Len() != 0 {
		t.Errorf("progress shown before %v: %q", progressAfter, b.String())
	}
	now = now.Add(progressAfter)
	p.report(sim.Progress{Workload: "herd", Policy: "full-jitter", Done: 1, Total: 4})
	if got, want := b.String(), "\r\033[Kherd: full-jitter 25%"; got != want {
		t.Errorf("progress line %q, want %q", got, want)
	}
	b.Reset()
	p.report(sim.Progress{Workload: "herd", Policy: "full-jitter", Done: 4, Total: 4})
	if got, want := b.String(), "\r\033[K"; got != want {
		t.Errorf("final report wrote %q, want the line cleared, %q", got, want)
	}
	b.Reset()
	q := &progressLine{w: &b, start: now, now: func() time.Time { return now }}
	q.report(sim.Progress{Done: 4, Total: 4})
	if b.Len() != 0 {
		t.Errorf("a fast run's final report wrote %q", b.String())
	}
}

// TestTerminalOnly checks that progress and timings appear on a terminal
// and nothing extra when stderr is not one, and that stdout is the same
// either way.
func TestTerminalOnly(t *testing.T) {
	args := []string{"-workload", "herd,amplification", "-runs", "2"}
	var piped, pipedErr bytes.Buffer
	if code := run(args, &piped, &pipedErr); code != 0 || pipedErr.Len() != 0 {
		t.Fatalf("exit %d, stderr %q", code, pipedErr.String())
	}
	defer func(f func(io.Writer) bool) { isTerminal = f }(isTerminal)
	isTerminal = func(io.Writer) bool { return true }
	var tty, ttyErr bytes.Buffer
	if code := run(args, &tty, &ttyErr); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if tty.String() != piped.String() {
		t.Errorf("stdout differs on a terminal")
	}
	if !strings.Contains(ttyErr.String(), "(herd: ") || !strings.Contains(ttyErr.String(), "(amplification: ") {
		t.Errorf("no timings on a terminal: %q", ttyErr.String())
	}
}

func TestHelp(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"-h"}, &out, &errOut); code != 0 {
		t.Errorf("-h exit code %d, want 0", code)
	}
	for _, want := range append(workloadNames(), "-workload", "-policies", "-seed", "-runs", "-clients", "-sweep", "-svg", "timid-jitter", "no-backoff") {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("-h output does not mention %q", want)
		}
	}
}

func TestTables(t *testing.T) {
	var out, errOut bytes.Buffer
	args := []string{"-runs", "2", "-clients", "200", "-sweep", "10:20:10", "-rates", "1,100"}
	if code := run(args, &out, &errOut); code != 0 {
		t.Fatalf("exit code %d, stderr %s", code, errOut.String())
	}
	for _, want := range []string{
		"== herd", "== outage", "== contention", "== amplification", "== periodic",
		"peak share", "success rate", "calls (writes processed", "243x", "peak calls/s",
		"no-backoff *", "timid-jitter *", "full-jitter",
		"== recovery", "== budget", "== outage-budget", "no-offset *", "ticker", "steady", "per-layer budgets", "calls/client while down",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output does not contain %q:\n%s", want, out.String())
		}
	}
}

// defaultRun is the one run of every workload at the defaults that
// TestDocAndChartsAreFresh and TestReadmeFiguresAreFresh share: what the
// command prints without flags, with -doc and with -readme.
var defaultRun = sync.OnceValues(func() (*docRun, error) {
	o, err := parse([]string{"-doc"}, io.Discard)
	if err != nil {
		return nil, err
	}
	return runDoc(o)
})

// TestDocAndChartsAreFresh checks that the committed docs/simulations.md and
// charts in docs/ are what the command produces now with its defaults.
// Regenerate them with go test ./cmd/backoffsim -run TestDocAndChartsAreFresh
// -update, or go run ./cmd/backoffsim -doc -svg docs > docs/simulations.md.
func TestDocAndChartsAreFresh(t *testing.T) {
	if testing.Short() || race.Enabled {
		t.Skip("runs every default workload: skipped in -short mode and under the race detector")
	}
	r, err := defaultRun()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var out bytes.Buffer
	if err := r.write(&out, false, dir); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("..", "..", "docs", "simulations.md"), out.Bytes())
	for _, wl := range workloadNames() {
		got, err := os.ReadFile(filepath.Join(dir, wl+".svg"))
		if err != nil {
			t.Fatal(err)
		}
		golden.Check(t, filepath.Join("..", "..", "docs", wl+".svg"), got)
		if !bytes.HasPrefix(got, []byte("<svg ")) || !bytes.HasSuffix(got, []byte("</svg>\n")) {
			t.Errorf("%s.svg is not a complete SVG document", wl)
		}
	}
	// The tables in the document are the command's default output, which
	// runJobs writes (TestDefaultOutputIsRunJobs).
	if !bytes.Contains(out.Bytes(), r.tables) || !bytes.HasPrefix(r.tables, []byte("backoffsim: seed 1;")) {
		t.Errorf("the document does not contain the default tables verbatim")
	}
}

// TestPinnedTables pins the tables of share-fleet, hedge and overload,
// as go run ./cmd/backoffsim -workload NAME prints them after their first
// line, in testdata/NAME.txt (-update rewrites them), from the run that the
// document's test makes.
func TestPinnedTables(t *testing.T) {
	if testing.Short() || race.Enabled {
		t.Skip("runs every default workload: skipped in -short mode and under the race detector")
	}
	r, err := defaultRun()
	if err != nil {
		t.Fatal(err)
	}
	for name, table := range map[string][]byte{
		"share-fleet": r.data.Fleet.Table,
		"hedge":       []byte(r.data.Hedge),
		"overload":    []byte(r.data.Overload.Table),
	} {
		golden.Check(t, filepath.Join("testdata", name+".txt"), table)
	}
}

// TestDefaultOutputIsRunJobs: what the command prints, the tables and the
// charts, is what runJobs writes, from which the document takes its
// tables; and writeDoc writes what a docRun writes.
func TestDefaultOutputIsRunJobs(t *testing.T) {
	args := []string{"-workload", "herd,periodic,budget", "-runs", "2", "-rates", "1,100", "-svg", t.TempDir()}
	var out, errOut bytes.Buffer
	if code := run(args, &out, &errOut); code != 0 {
		t.Fatalf("exit code %d, stderr %s", code, errOut.String())
	}
	o, err := parse(args, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := prepare(o, o.workloads)
	if err != nil {
		t.Fatal(err)
	}
	var tables bytes.Buffer
	if err := runJobs(o, jobs, &tables, nil, func(j job, r jobResult) error {
		if chart, err := os.ReadFile(filepath.Join(o.svgDir, j.name+".svg")); err != nil || !bytes.Equal(chart, r.chart) {
			t.Errorf("%s.svg differs from runJobs' chart (%v)", j.name, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if d := golden.Diff(out.Bytes(), tables.Bytes()); d != "" {
		t.Errorf("the command's output is not runJobs': %s", d)
	}
	if errOut.Len() != 0 {
		t.Errorf("stderr %q", errOut.String())
	}
}

// TestUndefinedLoad: at a rate whose only request falls in the warm-up,
// the load per measured request is undefined and is not printed as a
// number (issue 16 §4: it read "0.000x" beside "243.000x").
func TestUndefinedLoad(t *testing.T) {
	var out, errOut bytes.Buffer
	args := []string{"-workload", "budget", "-rates", "1e-300,0.001", "-svg", t.TempDir()}
	if code := run(args, &out, &errOut); code != 0 {
		t.Fatalf("exit code %d, stderr %s", code, errOut.String())
	}
	if s := out.String(); strings.Contains(s, "0.000x") || strings.Contains(s, "NaN") || !strings.Contains(s, "-: undefined") {
		t.Errorf("undefined loads printed as numbers:\n%s", s)
	}
}

// TestReadmeFiguresAreFresh: README.md's block of figures, between its
// figures markers, is what -readme prints now (issue 13 §4: no figure in
// README may go stale silently). With -update it rewrites that block only.
func TestReadmeFiguresAreFresh(t *testing.T) {
	if testing.Short() || race.Enabled {
		t.Skip("runs every default workload: skipped in -short mode and under the race detector")
	}
	r, err := defaultRun()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := r.write(&out, true, ""); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", "README.md")
	readme, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- figures:begin", "<!-- figures:end -->"
	i := bytes.Index(readme, []byte(begin))
	j := bytes.Index(readme, []byte(end))
	if i < 0 || j < i {
		t.Fatalf("README.md has no %q … %q block", begin, end)
	}
	i += bytes.IndexByte(readme[i:], '\n') + 1 // the block starts after the begin line
	if f := flag.Lookup("update"); f != nil && f.Value.String() == "true" {
		updated := slices.Concat(readme[:i], out.Bytes(), readme[j:])
		if err := os.WriteFile(path, updated, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("updated the figures of %s", path)
		return
	}
	if d := golden.Diff(out.Bytes(), readme[i:j]); d != "" {
		t.Errorf("README.md's figures are stale (go test ./cmd/backoffsim -run TestReadmeFiguresAreFresh -update rewrites them): %s", d)
	}
}

// TestMinutesRefused: the four runs of issue 16 §4 that took minutes are
// refused by their work estimate, before anything runs, naming a flag
// they gave.
func TestMinutesRefused(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-workload", "outage-budget", "-policies", "full-jitter", "-clients", "1048576", "-runs", "1000"}, "the limit depends on -clients, -runs, -policies (given)"},
		{[]string{"-workload", "herd", "-runs", "2", "-clients", "500000000"}, "the limit depends on -clients, -runs (given)"},
		{[]string{"-workload", "periodic", "-interval", "1ns", "-horizon", "3s"}, "the limit depends on -interval, -horizon (given)"},
		{[]string{"-workload", "amplification", "-layers", "16"}, "the limit depends on -layers (given)"},
		// What each became with one policy and one run: refused too.
		{[]string{"-workload", "herd", "-runs", "1", "-clients", "500000000", "-policies", "exponential"}, "above the limit MaxWork"},
		{[]string{"-workload", "periodic", "-interval", "1ns", "-horizon", "3s", "-runs", "1", "-clients", "1", "-policies", "exponential"}, "above the limit MaxWork"},
		{[]string{"-workload", "amplification", "-layers", "16", "-policies", "exponential"}, "above the limit MaxWork"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			start := time.Now()
			var out, errOut bytes.Buffer
			code := run(tt.args, &out, &errOut)
			if code != 2 || !strings.Contains(errOut.String(), tt.want) || !strings.Contains(errOut.String(), "MaxWork") {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, errOut.String(), tt.want)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("refused after %v: the refusal must come from the estimate", d)
			}
		})
	}
}
