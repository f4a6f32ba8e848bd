package backoffsql

import (
	"time"

	"github.com/backoffgo/backoff"
)

// defaultPolicy is the Policy of every DefaultRetrier. Its attempts are
// sized on README's workload, the integration module's
// TestBankTransfersSerializable, which prints how many attempts each
// transfer took (bash .ci/databases go test -v -run Bank .): the limit must
// stay well above the largest seen.
var defaultPolicy = backoff.Must(backoff.NewFullJitter(backoff.Config{
	Base: 5 * time.Millisecond, Cap: time.Second, MaxAttempts: 30,
}, backoff.RuntimeRng{}))

// defaultRetrier is RunTx's Retrier when Options.Retrier is nil: a
// DefaultRetrier that nothing changes, shared so that RunTx allocates none.
var defaultRetrier = DefaultRetrier()

// DefaultRetrier returns a new Retrier, with no budget, limit or hook, whose
// Policy is full jitter from 5ms doubling to at most 1s, 30 attempts in all.
func DefaultRetrier() *backoff.Retrier { return &backoff.Retrier{Policy: defaultPolicy} }
