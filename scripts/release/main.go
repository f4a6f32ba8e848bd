// Command release publishes every module of a git repository, as its HEAD
// commit holds it, into a file-system module proxy (GOPROXY=file://DIR), the
// way a release tag would publish it: each module is zipped by
// golang.org/x/mod/zip from the files `git archive HEAD` holds (nested
// modules excluded, the root LICENSE added where a module has none, as the
// go command does), under one version. A replace directive in a published go.mod is kept as it is: the
// go command ignores it in a dependency, as it does for a real release.
//
// Usage:
//
//	go run . -version v0.1.0 -out DIR [REPO]
//
// REPO defaults to the repository that holds the working directory. It
// prints one line per module published.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/zip"
)

func main() {
	version := flag.String("version", "", "the version to publish every module at, such as v0.1.0")
	out := flag.String("out", "", "the proxy directory to write (created if missing)")
	flag.Parse()
	if err := run(*version, *out, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(version, out string, args []string) error {
	switch {
	case !semver.IsValid(version) || semver.Canonical(version) != version:
		return fmt.Errorf("-version %q: must be a canonical semantic version such as v0.1.0", version)
	case out == "":
		return errors.New("-out: a directory is required")
	case len(args) > 1:
		return errors.New("at most one argument, the repository")
	}
	repo := "."
	if len(args) == 1 {
		repo = args[0]
	}
	top, err := git(repo, "rev-parse", "--show-toplevel")
	if err != nil {
		return err
	}
	root := strings.TrimSpace(string(top))
	files, err := git(root, "ls-tree", "-r", "--name-only", "HEAD")
	if err != nil {
		return err
	}
	tree, err := os.MkdirTemp("", "release-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tree)
	archive := exec.Command("sh", "-c", `git -C "$1" archive HEAD | tar -x -C "$2"`, "sh", root, tree)
	if b, err := archive.CombinedOutput(); err != nil {
		return fmt.Errorf("git archive HEAD: %v: %s", err, b)
	}
	for _, name := range strings.Split(strings.TrimSpace(string(files)), "\n") {
		if path.Base(name) != "go.mod" || strings.Contains("/"+name, "/testdata/") {
			continue
		}
		if err := publish(tree, path.Dir(name), version, out); err != nil {
			return err
		}
	}
	return nil
}

// publish writes the module in dir (relative to tree, the archived
// repository, "." for its root) into the proxy directory out, at version.
func publish(tree, dir, version, out string) error {
	mdir := filepath.Join(tree, filepath.FromSlash(dir))
	gomod, err := os.ReadFile(filepath.Join(mdir, "go.mod"))
	if err != nil {
		return err
	}
	f, err := modfile.ParseLax(path.Join(dir, "go.mod"), gomod, nil)
	if err != nil {
		return err
	}
	if f.Module == nil {
		return fmt.Errorf("%s/go.mod: no module line", dir)
	}
	mv := module.Version{Path: f.Module.Mod.Path, Version: version}
	escaped, err := module.EscapePath(mv.Path)
	if err != nil {
		return err
	}
	vdir := filepath.Join(out, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(mdir, "LICENSE")); errors.Is(err, os.ErrNotExist) {
		license, err := os.ReadFile(filepath.Join(tree, "LICENSE"))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(mdir, "LICENSE"), license, 0o644); err != nil {
			return err
		}
	}
	var z bytes.Buffer
	if err := zip.CreateFromDir(&z, mv, mdir); err != nil {
		return err
	}
	info, _ := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, time.Now().UTC().Truncate(time.Second)})
	for _, w := range []struct {
		name string
		data []byte
	}{
		{version + ".zip", z.Bytes()},
		{version + ".mod", gomod},
		{version + ".info", info},
		{"list", []byte(version + "\n")},
	} {
		if err := os.WriteFile(filepath.Join(vdir, w.name), w.data, 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("%s@%s (%s, %d bytes)\n", mv.Path, version, dir, z.Len())
	return nil
}

// git runs git in dir and returns its output; an error carries its stderr.
func git(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return b, nil
}
