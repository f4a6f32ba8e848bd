// Package benchmarks compares github.com/backoffgo/backoff with other Go retry
// libraries. Every library is reached through the same small Adapter
// interface so the benchmarks, the adapter tests and the probes treat them
// alike. Each adapter_*.go file maps one library onto the common policy:
// exponential backoff with full jitter, base 100ms, cap 10s, i.e. the delay
// before the retry that follows failed attempt n is uniform in
// [0, min(cap, base*2^(n-1))].
//
// The benchmarks and probes live in _test.go files; ./run runs them all and
// writes ../docs/benchmarks.md.
package benchmarks

import (
	"context"
	"errors"
	"math"
	"time"
)

// Common policy used by the benchmarks and tests.
const (
	Base = 100 * time.Millisecond
	Cap  = 10 * time.Second
)

// NoCap asks an adapter for its library's own "no cap" setting (which may
// differ from a cap of math.MaxInt64; each adapter documents what it uses).
const NoCap time.Duration = -1

// Adapter is one retry library mapped onto the common policy.
type Adapter interface {
	// Name is a short, benchstat-friendly label.
	Name() string

	// NewSeq returns the delay source for ONE retry sequence with base and
	// cap (cap may be NoCap). It is used by a single goroutine.
	NewSeq(base, cap time.Duration) Seq

	// NewRetrier binds the library's own retry loop to op: each call of the
	// returned function runs one retry sequence that calls op at most
	// maxAttempts times in total, sleeping per base/cap between calls. The
	// function is called from one goroutine at a time; adapters do once, at
	// construction, whatever a careful user may hoist out of the call.
	NewRetrier(op *Op, base, cap time.Duration, maxAttempts int) func(context.Context) error

	// NewShared returns ONE policy object shared by all goroutines, and
	// the function goroutines call concurrently to get one delay from it.
	// attempt is a hint (1..10); libraries whose policy object carries the
	// attempt count themselves ignore it.
	NewShared(base, cap time.Duration) (delay func(attempt int) time.Duration)

	// NewSharedRetrier returns ONE policy object as a user would configure
	// it once and pass to the library's retry loop, and a function that
	// runs the loop with it; goroutines call run concurrently, each with
	// its own op. Used by the data-race probe.
	NewSharedRetrier(base, cap time.Duration, maxAttempts int) (run func(context.Context, *Op) error)
}

// Seq yields delays for one retry sequence. attempt is the number of
// attempts made so far (1 after the first call failed). Stateless libraries
// compute the delay from attempt directly. Stateful libraries (whose backoff
// object counts calls itself) restart the sequence when attempt is not
// greater than the previous one and step their object forward to reach
// attempt (skipping ahead exactly where the library's state is provably at
// a fixed point or can be set, see each adapter).
type Seq interface {
	Delay(attempt int) time.Duration
}

// ErrFail is what Op returns on a failing call.
var ErrFail = errors.New("benchmarks: operation failed")

// Op is the operation being retried. It fails its first Fail calls
// (Fail < 0: always) and succeeds afterwards. Calls counts calls since the
// last Reset. An Op is used by one goroutine at a time.
type Op struct {
	Fail  int
	Calls int
}

func (o *Op) Reset() { o.Calls = 0 }

// Call is the operation for libraries whose operations take no arguments.
func (o *Op) Call() error {
	o.Calls++
	if o.Fail < 0 || o.Calls <= o.Fail {
		return ErrFail
	}
	return nil
}

// CallCtx is the operation for libraries that pass a context.
func (o *Op) CallCtx(context.Context) error { return o.Call() }

// Ceiling is the full-jitter upper bound for attempt under base/cap
// (cap NoCap = math.MaxInt64), computed overflow-safely.
func Ceiling(base, cap time.Duration, attempt int) time.Duration {
	if cap == NoCap {
		cap = math.MaxInt64
	}
	if attempt < 1 {
		attempt = 1
	}
	shift := attempt - 1
	if shift >= 63 || uint64(base) > uint64(math.MaxInt64)>>uint(shift) {
		return cap
	}
	c := base << uint(shift)
	if c > cap || c < 0 {
		return cap
	}
	return c
}

var registry []Adapter

func register(a Adapter) { registry = append(registry, a) }

// Adapters returns all adapters, ours first.
func Adapters() []Adapter {
	out := make([]Adapter, 0, len(registry))
	for _, a := range registry {
		if a.Name() == "backoffgo" {
			out = append([]Adapter{a}, out...)
		} else {
			out = append(out, a)
		}
	}
	return out
}
