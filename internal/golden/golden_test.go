package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that records what Check reports.
type recorder struct {
	testing.TB
	errors, logs []string
	fatal        bool
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recorder) Logf(format string, args ...any) {
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = true
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(path, []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
		got  string
		want []string // substrings of the one error; none for a match
	}{
		{"equal", path, "one\ntwo\n", nil},
		{"changed line", path, "one\nTwo\n", []string{path, "stale", "line 2:", `got: "Two\n"`, `want: "two\n"`, "-update"}},
		{"longer", path, "one\ntwo\nthree", []string{"line 3: got \"three\", want the end of the file"}},
		{"shorter", path, "one\n", []string{"line 2: got the end of the output, want \"two\\n\""}},
		{"no final newline", path, "one\ntwo", []string{`line 2:`, `got: "two"`}},
		{"missing file", filepath.Join(dir, "none.txt"), "x", []string{"none.txt", "-update to create it"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{TB: t}
			Check(r, tt.path, []byte(tt.got))
			if len(tt.want) == 0 {
				if len(r.errors) != 0 {
					t.Errorf("errors %q, want none", r.errors)
				}
				return
			}
			if len(r.errors) != 1 || r.fatal {
				t.Fatalf("errors %q (fatal %v), want one", r.errors, r.fatal)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.errors[0], w) {
					t.Errorf("error %q does not contain %q", r.errors[0], w)
				}
			}
		})
	}
}

func TestUpdate(t *testing.T) {
	defer func(u bool) { *update = u }(*update)
	*update = true
	path := filepath.Join(t.TempDir(), "sub", "b.txt")
	r := &recorder{TB: t}
	Check(r, path, []byte("new\n"))
	if len(r.errors) != 0 || len(r.logs) != 1 {
		t.Fatalf("errors %q, logs %q; want one log", r.errors, r.logs)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "new\n" {
		t.Fatalf("file %q, %v; want the output written", b, err)
	}
	*update = false
	Check(r, path, []byte("new\n"))
	if len(r.errors) != 0 {
		t.Errorf("after -update the file does not match: %q", r.errors)
	}
	// A file that cannot be written fails the test.
	*update = true
	Check(r, filepath.Join(path, "c.txt"), []byte("x")) // path is a file, not a directory
	if !r.fatal {
		t.Errorf("an unwritable path did not fail the test: %q", r.errors)
	}
}

func TestDiffEqual(t *testing.T) {
	if d := Diff([]byte("a\n"), []byte("a\n")); d != "" {
		t.Errorf("Diff of equal inputs = %q", d)
	}
}

func TestCheckBlock(t *testing.T) {
	const file = "# Title\n<!-- fig:begin (made by a test) -->\n3 requests\n<!-- fig:end -->\ntail\n"
	dir := t.TempDir()
	path := filepath.Join(dir, "README.md")
	if err := os.WriteFile(path, []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, block, got string
		want             []string // substrings of the one error; none for a match
	}{
		{"equal", "fig", "3 requests\n", nil},
		{"stale", "fig", "9 requests\n", []string{"fig block", path, "stale", `got: "9 requests\n"`, "-update"}},
		{"no such block", "other", "x\n", []string{"no block", "<!-- other:begin"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{TB: t}
			CheckBlock(r, path, tt.block, []byte(tt.got))
			if len(tt.want) == 0 {
				if len(r.errors) != 0 {
					t.Errorf("errors %q, want none", r.errors)
				}
				return
			}
			if len(r.errors) != 1 {
				t.Fatalf("errors %q, want one", r.errors)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.errors[0], w) {
					t.Errorf("error %q does not contain %q", r.errors[0], w)
				}
			}
		})
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.md"), []byte("<!-- fig:begin"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &recorder{TB: t}
	CheckBlock(r, filepath.Join(dir, "bad.md"), "fig", nil)
	CheckBlock(r, filepath.Join(dir, "none.md"), "fig", nil)
	if len(r.errors) != 2 {
		t.Errorf("a begin marker without its line end, and a missing file: errors %q, want two", r.errors)
	}

	defer func(u bool) { *update = u }(*update)
	*update = true
	r = &recorder{TB: t}
	CheckBlock(r, path, "fig", []byte("1 request\n"))
	if b, _ := os.ReadFile(path); len(r.errors) != 0 || string(b) != strings.Replace(file, "3 requests", "1 request", 1) {
		t.Errorf("after -update: errors %q, file %q", r.errors, b)
	}
}
