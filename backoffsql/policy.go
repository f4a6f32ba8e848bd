package backoffsql

import (
	"time"

	"github.com/backoffgo/backoff"
)

// defaultPolicy is DefaultPolicy's value. Its attempts are sized on
// README's workload, the integration module's TestBankTransfersSerializable,
// which prints how many attempts each transfer took (bash .ci/databases go
// test -v -run Bank .): the limit must stay well above the largest seen.
var defaultPolicy = backoff.Must(backoff.NewFullJitter(backoff.Config{
	Base: 5 * time.Millisecond, Cap: time.Second, MaxAttempts: 30,
}, backoff.RuntimeRng{}))

// defaultRetrier is RunTx's Retrier when Options.Retrier is nil.
var defaultRetrier = &backoff.Retrier{Policy: defaultPolicy}

// DefaultPolicy returns the policy of RunTx's default Retrier: full jitter
// from 5ms, doubling to at most 1s, 30 attempts in all (the first included),
// enough for transactions that conflict with each other over and over. A
// transaction that never succeeds is given up after 29 waits, which add up
// to at most 22.3s, 11.1s on average. Start from it to add a budget or
// hooks: &backoff.Retrier{Policy: backoffsql.DefaultPolicy(), OnRetry: ...}.
// It returns the same Policy on every call, which is safe for concurrent
// use.
func DefaultPolicy() backoff.Policy { return defaultPolicy }
