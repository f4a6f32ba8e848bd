package backoffsql

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
)

// TestClassOfSeesCodeUnderNestedLoops: ClassOf's doc says the first error
// in err's chain (Unwrap() error and Unwrap() []error, depth first) that
// carries a database code decides. An error that is the give-up of a loop
// of one attempt over the give-up of another such loop over PostgreSQL's
// 40001 holds the code in its chain (errors.As finds it), but ClassOf
// reads it as Unrecognized, so RunTx returns it without a retry: the walk
// (internal/errchain, through *backoff.Error's Unwrap) meets only the
// reasonless views of what the inner *backoff.Error wraps, which carry no
// SQLState method. One loop deep it is Transient.
func TestClassOfSeesCodeUnderNestedLoops(t *testing.T) {
	once := backoff.Must(backoff.NewExponential(backoff.Config{Base: time.Millisecond, Cap: time.Millisecond, MaxAttempts: 1}))
	oneDeep := backoff.Do(context.Background(), func(context.Context) error { return pg40001{} }, once)
	twoDeep := backoff.Do(context.Background(), func(context.Context) error { return oneDeep }, once)
	for _, tt := range []struct {
		name string
		err  error
	}{
		{"one loop deep", oneDeep},
		{"two loops deep", twoDeep},
	} {
		var s interface{ SQLState() string }
		if !errors.As(tt.err, &s) || s.SQLState() != "40001" {
			t.Fatalf("%s: errors.As finds no SQLSTATE 40001 in %v", tt.name, tt.err)
		}
		if got := ClassOf(tt.err); got != Transient {
			t.Errorf("%s: ClassOf(%v) = %v; want Transient (SQLSTATE 40001)", tt.name, tt.err, got)
		}
	}
}

// pg40001 reads as a driver's PostgreSQL error of SQLSTATE 40001.
type pg40001 struct{}

func (pg40001) Error() string    { return "ERROR: could not serialize access (SQLSTATE 40001)" }
func (pg40001) SQLState() string { return "40001" }
