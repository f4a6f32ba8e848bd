package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
		{[]string{"herd"}, `unexpected argument "herd"`},
		{[]string{"-seed", "abc"}, "invalid value"},
		{[]string{"-nosuch"}, "flag provided but not defined"},
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
	args := []string{"-runs", "2", "-clients", "200", "-sweep", "10:20:10"}
	if code := run(args, &out, &errOut); code != 0 {
		t.Fatalf("exit code %d, stderr %s", code, errOut.String())
	}
	for _, want := range []string{
		"== herd", "== outage", "== contention", "== amplification", "== periodic",
		"peak share", "success rate", "calls (writes processed", "243x", "peak calls/s",
		"no-backoff *", "timid-jitter *", "full-jitter",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output does not contain %q:\n%s", want, out.String())
		}
	}
}

// TestDocAndChartsAreFresh checks that the committed docs/simulations.md and
// charts in docs/ are what the command produces now with its defaults
// (go run ./cmd/backoffsim -doc -svg docs > docs/simulations.md).
func TestDocAndChartsAreFresh(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("runs every default workload: skipped in -short mode and under the race detector")
	}
	const regen = "regenerate with: go run ./cmd/backoffsim -doc -svg docs > docs/simulations.md"
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	if code := run([]string{"-doc", "-svg", dir}, &out, &errOut); code != 0 {
		t.Fatalf("exit code %d, stderr %s", code, errOut.String())
	}
	committed, err := os.ReadFile(filepath.Join("..", "..", "docs", "simulations.md"))
	if err != nil {
		t.Fatalf("%v (%s)", err, regen)
	}
	if !bytes.Equal(out.Bytes(), committed) {
		t.Errorf("docs/simulations.md is stale: %s", regen)
	}
	for _, wl := range workloadNames() {
		got, err := os.ReadFile(filepath.Join(dir, wl+".svg"))
		if err != nil {
			t.Fatal(err)
		}
		committed, err := os.ReadFile(filepath.Join("..", "..", "docs", wl+".svg"))
		if err != nil {
			t.Fatalf("%v (%s)", err, regen)
		}
		if !bytes.Equal(got, committed) {
			t.Errorf("docs/%s.svg is stale: %s", wl, regen)
		}
		if !bytes.HasPrefix(got, []byte("<svg ")) || !bytes.HasSuffix(got, []byte("</svg>\n")) {
			t.Errorf("%s.svg is not a complete SVG document", wl)
		}
	}
	// The tables in the document are the command's default output.
	var tables bytes.Buffer
	if code := run(nil, &tables, &errOut); code != 0 {
		t.Fatalf("exit code %d, stderr %s", code, errOut.String())
	}
	if !bytes.Contains(out.Bytes(), tables.Bytes()) {
		t.Errorf("the document does not contain the default tables verbatim")
	}
}
