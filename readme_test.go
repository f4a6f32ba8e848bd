package backoff

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/backoffgo/backoff/internal/golden"
)

// readme returns README.md.
func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// dedent removes the indentation common to lines, in tabs.
func dedent(lines []string) string {
	common := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if n := len(l) - len(strings.TrimLeft(l, "\t")); common < 0 || n < common {
			common = n
		}
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		if len(l) >= common && common > 0 {
			l = l[common:]
		}
		out[i] = l
	}
	return strings.Join(out, "\n")
}

// TestReadmeCodeCompiles: every Go block of README.md is, up to its
// indentation, a run of lines of a Go file of this repository (the hello
// program, examples/recipes), which the build compiles and vet checks.
func TestReadmeCodeCompiles(t *testing.T) {
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(readme(t), -1)
	if len(blocks) < 5 {
		t.Fatalf("found %d Go blocks in README.md; the hello program and the recipes are missing", len(blocks))
	}
	var files [][]string
	filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasPrefix(path, "benchmarks") {
			b, _ := os.ReadFile(path)
			files = append(files, strings.Split(string(b), "\n"))
		}
		return nil
	})
	for _, block := range blocks {
		want := strings.Split(strings.TrimSuffix(block[1], "\n"), "\n")
		if !foundIn(files, want) {
			t.Errorf("README block not found in any Go file of the repository:\n%s", block[1])
		}
	}
}

func foundIn(files [][]string, want []string) bool {
	w := dedent(want)
	for _, lines := range files {
		for i := 0; i+len(want) <= len(lines); i++ {
			if dedent(lines[i:i+len(want)]) == w {
				return true
			}
		}
	}
	return false
}

// TestReadmeImportCost builds scripts/importcost's two programs and checks
// the sentence README quotes between its importcost markers, which names
// the Go version and platform it was measured on; elsewhere the sizes
// differ, and the test says so and skips. With -update it rewrites the
// sentence from this measurement:
//
//	go test -run TestReadmeImportCost -update .
func TestReadmeImportCost(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two programs")
	}
	block := regexp.MustCompile(`(?s)<!-- importcost:begin.*?-->\n(.*?)<!-- importcost:end -->`).FindStringSubmatch(readme(t))
	if block == nil {
		t.Fatal("README.md has no importcost block")
	}
	platform := runtime.Version() + ", " + runtime.GOOS + "/" + runtime.GOARCH
	if !strings.Contains(block[1], "("+"`scripts/importcost`, "+platform+")") && !golden.Updating() {
		t.Skipf("README's import cost is not measured on %s, where sizes differ:\n%s", platform, block[1])
	}
	size := func(prog string) int {
		out := filepath.Join(t.TempDir(), prog)
		cmd := exec.Command("go", "build", "-o", out, ".")
		cmd.Dir = filepath.Join("testdata", "importcost", prog)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", prog, err, b)
		}
		fi, err := os.Stat(out)
		if err != nil {
			t.Fatal(err)
		}
		return int(fi.Size())
	}
	diff := size("withbackoff") - size("byhand")
	golden.CheckBlock(t, "README.md", "importcost", []byte("A program whose `main` builds a `FullJitter` and calls `Do` once is **"+
		strconv.Itoa(diff/1024)+" KB** larger than the same loop written by hand with "+
		"`math/rand/v2` and a timer (`scripts/importcost`, "+platform+").\n"))
}

// TestGodocSize: the root package's documentation stays readable in one
// sitting: `go doc -all .` prints at most 550 lines.
func TestGodocSize(t *testing.T) {
	out, err := exec.Command("go", "doc", "-all", ".").Output()
	if err != nil {
		t.Skipf("go doc: %v", err)
	}
	if n := strings.Count(string(out), "\n"); n > 550 {
		t.Errorf("go doc -all . prints %d lines, more than 550: say the same contracts in fewer words", n)
	}
}
