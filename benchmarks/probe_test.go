package benchmarks

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Probes report facts, not timings. They fail only when OUR library
// misbehaves; other libraries' findings are logged and, when
// BENCH_PROBE_OUT names a file, written there as Markdown for ./run.

var probeAttempts = []struct {
	label string
	n     int
}{{"38", 38}, {"64", 64}, {"10^6", 1_000_000}, {"2^62", 1 << 62}}

const probeSamples = 1000

type probeResult struct {
	min, max       time.Duration
	neg, over, pan int
	panicMsg       string
	samples        int
}

// probeOne draws samples delays at one attempt number from a fresh sequence,
// counting negative values, values above the cap and recovered panics.
func probeOne(a Adapter, cap time.Duration, attempt, samples int) (r probeResult) {
	limit := cap
	if cap == NoCap {
		limit = math.MaxInt64
	}
	r.min = math.MaxInt64
	seq := a.NewSeq(Base, cap)
	for i := 0; i < samples; i++ {
		func() {
			defer func() {
				if p := recover(); p != nil {
					r.pan++
					if r.panicMsg == "" {
						r.panicMsg = fmt.Sprint(p)
					}
					seq = a.NewSeq(Base, cap) // state may be broken
				}
			}()
			d := seq.Delay(attempt)
			r.samples++
			r.min, r.max = min(r.min, d), max(r.max, d)
			if d < 0 {
				r.neg++
			}
			if d > limit {
				r.over++
			}
		}()
	}
	return r
}

func fmtDur(d time.Duration) string {
	switch d {
	case math.MaxInt64:
		return "MaxInt64"
	case math.MinInt64:
		return "MinInt64"
	}
	if d > 1e15 || d < -1e15 {
		return fmt.Sprintf("%.3g ns", float64(d))
	}
	return d.String()
}

// verdict describes a probe result; bad reports a correctness problem.
func (r probeResult) verdict(ceiling time.Duration) (s string, bad bool) {
	var parts []string
	total := r.samples + r.pan
	if r.pan > 0 {
		parts = append(parts, fmt.Sprintf("**panics** %d/%d (%q)", r.pan, total, r.panicMsg))
		bad = true
	}
	if r.samples > 0 {
		parts = append(parts, fmt.Sprintf("range [%s, %s]", fmtDur(r.min), fmtDur(r.max)))
	}
	if r.neg > 0 {
		parts = append(parts, fmt.Sprintf("**negative** %d/%d", r.neg, total))
		bad = true
	}
	if r.over > 0 {
		parts = append(parts, fmt.Sprintf("**above cap** %d/%d", r.over, total))
		bad = true
	}
	// With >= 200 uniform draws, a largest draw under 90% of the ceiling
	// has probability < 0.9^200 < 1e-9 for a correct library.
	if r.samples >= 200 && r.neg == 0 && r.max < ceiling/10*9 {
		parts = append(parts, fmt.Sprintf("**ceiling too low** (expected up to %s)", fmtDur(ceiling)))
		bad = true
	}
	if !bad {
		parts = append(parts, "ok")
	}
	return strings.Join(parts, "; "), bad
}

// TestProbeLargeAttempts: the delay each library returns at attempts 38,
// 64, 10^6 and 2^62 with a cap of math.MaxInt64 (through the adapter's
// mapping) and with the library's own "no cap" setting.
func TestProbeLargeAttempts(t *testing.T) {
	var md strings.Builder
	md.WriteString("| library | cap setting | attempt | result (" + fmt.Sprint(probeSamples) + " draws) |\n|---|---|---|---|\n")
	for _, a := range Adapters() {
		for _, cs := range []struct {
			label string
			cap   time.Duration
		}{{"MaxInt64", math.MaxInt64}, {"no cap", NoCap}} {
			for _, pa := range probeAttempts {
				r := probeOne(a, cs.cap, pa.n, probeSamples)
				v, bad := r.verdict(Ceiling(Base, cs.cap, pa.n))
				fmt.Fprintf(&md, "| %s | %s | %s | %s |\n", a.Name(), cs.label, pa.label, v)
				t.Logf("%s cap=%s attempt=%s: %s", a.Name(), cs.label, pa.label, v)
				if bad && a.Name() == "backoffgo" {
					t.Errorf("our library: cap=%s attempt=%s: %s", cs.label, pa.label, v)
				}
			}
		}
	}
	writeProbe(t, "large-attempts", md.String())
}

// TestProbeSweep: every attempt 1..200 and a few huge ones, with the common
// 10s cap and with no cap: any negative delay, panic, value above the cap, or
// a ceiling that falls back far below min(cap, base*2^(n-1)).
func TestProbeSweep(t *testing.T) {
	var md strings.Builder
	md.WriteString("| library | cap | attempts 1..200, 2^31, 2^32, 2^53, 2^62, MaxInt (200 draws each) |\n|---|---|---|\n")
	attempts := []int{1 << 31, 1 << 32, 1 << 53, 1 << 62, math.MaxInt}
	for n := 200; n >= 1; n-- {
		attempts = append([]int{n}, attempts...)
	}
	for _, a := range Adapters() {
		for _, cs := range []struct {
			label string
			cap   time.Duration
		}{{"10s", Cap}, {"no cap", NoCap}} {
			var problems []string
			for _, n := range attempts {
				r := probeOne(a, cs.cap, n, 200)
				if v, bad := r.verdict(Ceiling(Base, cs.cap, n)); bad {
					problems = append(problems, fmt.Sprintf("attempt %d: %s", n, v))
				}
			}
			res := "ok"
			if len(problems) > 0 {
				k := len(problems)
				if k > 4 {
					problems = append(problems[:4], fmt.Sprintf("... (%d of %d attempts affected)", k, len(attempts)))
				}
				res = strings.Join(problems, "<br>")
				if a.Name() == "backoffgo" {
					t.Errorf("our library, cap %s: %s", cs.label, res)
				}
			}
			t.Logf("%s cap=%s: %s", a.Name(), cs.label, res)
			fmt.Fprintf(&md, "| %s | %s | %s |\n", a.Name(), cs.label, res)
		}
	}
	writeProbe(t, "sweep", md.String())
}

func writeProbe(t *testing.T, name, md string) {
	dir := os.Getenv("BENCH_PROBE_OUT")
	if dir == "" {
		return
	}
	if err := os.WriteFile(filepath.Join(dir, name+".md"), []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
}

// ---- data-race probe ----

const raceEnv = "BENCH_RACE_WORKER"

// TestRaceWorker runs only in the child process started by TestProbeRace
// (built with -race): goroutines share one policy object of the library
// named by BENCH_RACE_WORKER, both asking it for delays directly and
// running the library's retry loop with it.
func TestRaceWorker(t *testing.T) {
	name := os.Getenv(raceEnv)
	if name == "" {
		t.Skip("child of TestProbeRace only")
	}
	var a Adapter
	for _, x := range Adapters() {
		if x.Name() == name {
			a = x
		}
	}
	if a == nil {
		t.Fatalf("no adapter %q", name)
	}
	const goroutines = 8
	var start, wg sync.WaitGroup
	start.Add(1)
	delay := a.NewShared(Base, Cap)
	run := a.NewSharedRetrier(tiny, tiny, 10)
	var offPolicy, wrongLoops atomic.Int64
	const delays, loops = 20000, 300
	for g := 0; g < goroutines; g++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			start.Wait()
			for i := 0; i < delays; i++ {
				n := i%10 + 1
				if d := delay(n); d < 0 || d > Ceiling(Base, Cap, n) {
					offPolicy.Add(1)
				}
			}
		}()
		go func() {
			defer wg.Done()
			start.Wait()
			op := &Op{Fail: 3}
			for i := 0; i < loops; i++ {
				op.Reset()
				if err := run(context.Background(), op); err != nil || op.Calls != 4 {
					wrongLoops.Add(1)
				}
			}
		}()
	}
	start.Done()
	wg.Wait()
	fmt.Printf("RACEWORKER-DONE offpolicy=%d/%d wrongloops=%d/%d\n",
		offPolicy.Load(), goroutines*delays, wrongLoops.Load(), goroutines*loops)
}

var (
	raceWarning = regexp.MustCompile(`WARNING: DATA RACE`)
	doneRe      = regexp.MustCompile(`RACEWORKER-DONE offpolicy=(\d+)/(\d+) wrongloops=(\d+)/(\d+)`)
)

// TestProbeRace builds this package's tests with -race and runs
// TestRaceWorker once per library in a child process, so a race report
// becomes a finding rather than a failure of this run. It fails only if our
// library races. Skipped with -short.
func TestProbeRace(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	if os.Getenv(raceEnv) != "" {
		t.Skip("in child")
	}
	bin := filepath.Join(t.TempDir(), "race.test")
	build := exec.Command("go", "test", "-race", "-c", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("cannot build with -race here (%v): %s", err, out)
	}
	var md strings.Builder
	md.WriteString("| library | `-race` verdict | delays outside bound | loops not making 4 calls |\n|---|---|---|---|\n")
	for _, a := range Adapters() {
		cmd := exec.Command(bin, "-test.run", "^TestRaceWorker$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), raceEnv+"="+a.Name(), "GORACE=halt_on_error=0")
		out, _ := cmd.CombinedOutput()
		races := len(raceWarning.FindAllIndex(out, -1))
		m := doneRe.FindStringSubmatch(string(out))
		done := m != nil
		var res string
		switch {
		case !done:
			res = "worker did not finish: " + lastLines(string(out), 5)
		case races > 0:
			res = fmt.Sprintf("**data race** (%d race reports); first: %s", races, firstRace(string(out)))
		default:
			res = "no race reported"
		}
		off, wrong := "-", "-"
		if done {
			off, wrong = m[1]+"/"+m[2], m[3]+"/"+m[4]
		}
		t.Logf("%s: %s; delays outside bound %s; loops not making 4 calls %s", a.Name(), res, off, wrong)
		fmt.Fprintf(&md, "| %s | %s | %s | %s |\n", a.Name(), res, off, wrong)
		if a.Name() == "backoffgo" && (races > 0 || !done || !strings.HasPrefix(off, "0/") || !strings.HasPrefix(wrong, "0/")) {
			t.Errorf("our library: %s; delays outside bound %s; loops not making 4 calls %s\n%s", res, off, wrong, out)
		}
	}
	writeProbe(t, "race", md.String())
}

var accessRe = regexp.MustCompile(`(?m)^(?:Previous )?(?:write|read|Write|Read) at 0x[0-9a-f]+ by (?:goroutine \d+|main goroutine):\n\s+(\S+)\(`)

// firstRace names the function of each of the two conflicting accesses of
// the first race report.
func firstRace(out string) string {
	i := strings.Index(out, "WARNING: DATA RACE")
	if i < 0 {
		return ""
	}
	rep := out[i:]
	if j := strings.Index(rep[1:], "=================="); j > 0 {
		rep = rep[:j+1]
	}
	var frames []string
	for _, m := range accessRe.FindAllStringSubmatch(rep, 2) {
		f := m[1]
		frames = append(frames, "`"+f[strings.LastIndex(f, "/")+1:]+"`")
	}
	return strings.Join(frames, " vs ")
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " / ")
}
