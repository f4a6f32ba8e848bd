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
// the figures README quotes between its importcost markers, on the Go
// version and platform it names (elsewhere the sizes differ: the test says
// so and skips).
func TestReadmeImportCost(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two programs")
	}
	block := regexp.MustCompile(`(?s)<!-- importcost:begin.*?-->\n(.*?)<!-- importcost:end -->`).FindStringSubmatch(readme(t))
	if block == nil {
		t.Fatal("README.md has no importcost block")
	}
	quoted := regexp.MustCompile(`go1[0-9.]*, [a-z0-9]+/[a-z0-9]+`).FindString(block[1])
	if quoted == "" {
		t.Fatalf("README's import cost block names no Go version and platform:\n%s", block[1])
	}
	platform := runtime.Version() + ", " + runtime.GOOS + "/" + runtime.GOARCH
	if quoted != platform {
		t.Skipf("README quotes import cost for %s; sizes differ on %s", quoted, platform)
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
	byHand, with := size("byhand"), size("withbackoff")
	m := regexp.MustCompile(`\*\*about (\d+) KB\*\*`).FindStringSubmatch(block[1])
	if m == nil {
		t.Fatalf("README's import cost block quotes no \"**about N KB**\":\n%s", block[1])
	}
	quotedKB, _ := strconv.Atoi(m[1])
	// Section alignment moves the size by a few KB for a change of a few
	// bytes of code, so the quote is to the nearest 10 KB.
	if kb := (with - byHand) / 1024; kb < quotedKB-5 || kb > quotedKB+5 {
		t.Errorf("README quotes about %d KB of import cost; scripts/importcost measures %d KB (%d bytes)", quotedKB, kb, with-byHand)
	}
}
