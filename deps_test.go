package backoff

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCoreDependencies keeps importing the library cheap: the root package
// must not link net/http's world (crypto/tls, the cgo DNS resolver), os or
// fmt. scripts/importcost measures what the package costs a binary.
func TestCoreDependencies(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 5 {
		t.Fatalf("go list -deps printed %q; want the package's dependencies", deps)
	}
	for _, dep := range deps {
		if dep == "net" || strings.HasPrefix(dep, "net/") || strings.HasPrefix(dep, "crypto/") ||
			dep == "os" || dep == "fmt" || dep == "runtime/cgo" {
			t.Errorf("the root package depends on %s; it must not link net, crypto, os, fmt or cgo", dep)
		}
	}
}
