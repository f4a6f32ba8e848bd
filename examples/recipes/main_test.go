package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestRecipes runs every recipe as go run ./examples/recipes does and
// checks what each printed.
func TestRecipes(t *testing.T) {
	if testing.Short() {
		t.Skip("waits about 4 s of real delays")
	}
	var out bytes.Buffer
	if err := run(&out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"ConstantDelay: a call that fails twice succeeds at the third, 1s later: <nil>\n",
		"MaxElapsed: the same call, retried for at most 30s: <nil>\n",
		"ClassifyDriverErrors: SQLSTATE 40001: calls 5, not retryable false\n",
		"ClassifyDriverErrors: SQLSTATE 23505: calls 1, not retryable true\n",
		"level=INFO msg=retrying attempt=1 err=\"connection refused\" delay=10ms\n",
		"level=INFO msg=retrying attempt=2 err=\"connection refused\" delay=10ms\nLogRetries: <nil>\n",
		"msg=\"gave up\" attempts=5 err=\"backoff: stopped after 5 attempts (attempts exhausted): HTTP 503 Service Unavailable\"\n",
		"WhyHTTPGaveUp: the client returned 503 Service Unavailable and no error\n",
		"SignEachAttempt: 200 OK after 2 attempts, each signed and verified\n",
		"HedgeSlowReads: 200 OK within a second, from the hedge, though the first copy would take 10s: true\n",
		"Items, over a dependency flaky: 200 \"3 items\", X-Envoy-Ratelimited: \"\"\n",
		"Items, over a dependency down: 503 \"unavailable\\n\", X-Envoy-Ratelimited: \"true\"\n",
		"Transfer: 30 from account 1 to 2, run 2 times (the first failed with SQLSTATE 40001): balances map[1:70 2:130]\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the recipes did not print %q:\n%s", want, out.String())
		}
	}
}
