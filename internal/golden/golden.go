// Package golden compares a test's output with a committed file, and
// rewrites the file instead when the test binary runs with -update:
//
//	go test ./cmd/backoffsim -run TestDocAndChartsAreFresh -update
//
// Importing the package defines the -update flag in the test binary.
package golden

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files with the output the tests produce")

// Check compares got with the contents of the file at path (relative to
// the test's package directory) and reports a mismatch or a missing file
// with t.Errorf, naming the file and the first line that differs; the test
// goes on. With -update it writes got to path instead (creating its
// directory), and fails the test only if the write fails.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatalf("golden: %v", err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatalf("golden: %v", err)
		}
		t.Logf("golden: updated %s", path)
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("golden: %v (rerun with -update to create it)", err)
		return
	}
	if !bytes.Equal(got, want) {
		t.Errorf("golden: %s is stale (rerun with -update to rewrite it): %s", path, Diff(got, want))
	}
}

// Diff describes the first difference between got and want: the line
// number and both lines, quoted; or which one is shorter. It returns ""
// for equal inputs.
func Diff(got, want []byte) string {
	if bytes.Equal(got, want) {
		return ""
	}
	g, w := lines(got), lines(want)
	for i := 0; ; i++ {
		switch {
		case i < len(g) && i < len(w):
			if !bytes.Equal(g[i], w[i]) {
				return fmt.Sprintf("line %d:\n got: %q\nwant: %q", i+1, g[i], w[i])
			}
		case i < len(g):
			return fmt.Sprintf("line %d: got %q, want the end of the file", i+1, g[i])
		default:
			return fmt.Sprintf("line %d: got the end of the output, want %q", i+1, w[i])
		}
	}
}

// lines splits b after each newline; a last line without one is a line.
func lines(b []byte) [][]byte {
	l := bytes.SplitAfter(b, []byte("\n"))
	if len(l[len(l)-1]) == 0 {
		l = l[:len(l)-1]
	}
	return l
}

// CheckBlock is Check for the part of the file at path between a line that
// begins "<!-- name:begin" and one that is "<!-- name:end -->" (a generated
// figure in README.md, say): got must equal the lines between the two.
// With -update it rewrites that part of the file, leaving the rest as it
// is. A file without both markers is reported, with or without -update.
func CheckBlock(t testing.TB, path, name string, got []byte) {
	t.Helper()
	file, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("golden: %v", err)
		return
	}
	begin := []byte("<!-- " + name + ":begin")
	end := []byte("<!-- " + name + ":end -->")
	i := bytes.Index(file, begin)
	var j int
	if i >= 0 {
		if nl := bytes.IndexByte(file[i:], '\n'); nl >= 0 {
			i += nl + 1
			j = bytes.Index(file[i:], end)
		} else {
			i = -1
		}
	}
	if i < 0 || j < 0 {
		t.Errorf("golden: %s has no block between %q… and %q", path, begin, end)
		return
	}
	j += i
	if *update {
		out := append(append(append([]byte(nil), file[:i]...), got...), file[j:]...)
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatalf("golden: %v", err)
		}
		t.Logf("golden: updated the %s block of %s", name, path)
		return
	}
	if want := file[i:j]; !bytes.Equal(got, want) {
		t.Errorf("golden: the %s block of %s is stale (rerun with -update to rewrite it): %s", name, path, Diff(got, want))
	}
}

// Updating reports whether the test binary runs with -update.
func Updating() bool { return *update }
