package backoffotel

import (
	"context"
	"database/sql"

	"github.com/backoffgo/backoff/backoffsql"
)

// The instruments of a transaction run by backoffsql.RunTx, with no
// attribute. OpenTelemetry's database conventions (semconv v1.43.0)
// define no retry metric: these are this module's names, of the shape of
// gRFC A96's (see [GRPCRetriesMetric]).
const (
	// SQLRetriesMetric is the histogram of the retries of each transaction
	// that retried ({retry}): its runs but the first.
	SQLRetriesMetric = "backoff.sql.client.transaction.retries"
	// SQLRetryDelayMetric is the histogram of the total wait before the
	// retries of each transaction, in seconds (s).
	SQLRetryDelayMetric = "backoff.sql.client.transaction.retry_delay"
	// SQLGiveUpsMetric counts the transactions that RunTx gave up on
	// ({transaction}), by [ReasonKey].
	SQLGiveUpsMetric = "backoff.sql.client.transaction.give_ups"
)

var sqlNames = names{retries: SQLRetriesMetric, delay: SQLRetryDelayMetric, giveUps: SQLGiveUpsMetric, unit: "{transaction}"}

// TxRunner runs transactions with backoffsql.RunTx and records each in
// [SQLRetriesMetric], [SQLRetryDelayMetric] and [SQLGiveUpsMetric]. It is
// safe for concurrent use.
type TxRunner struct{ opts backoffsql.Options }

// NewTxRunner returns a TxRunner that runs transactions with a copy of
// opts (nil: the zero Options) whose Retrier (nil:
// backoffsql.DefaultRetrier(), as RunTx's) records the metrics on cfg's meter
// and then calls its own hooks. It returns the meter's error when it
// cannot make the instruments.
func NewTxRunner(opts *backoffsql.Options, cfg Config) (*TxRunner, error) {
	in, err := newInstruments(cfg, sqlNames)
	if err != nil {
		return nil, err
	}
	var o backoffsql.Options
	if opts != nil {
		o = *opts
	}
	o.Retrier = in.retrier(o.Retrier, backoffsql.DefaultRetrier)
	return &TxRunner{opts: o}, nil
}

// RunTx is backoffsql.RunTx with the runner's Options.
func (t *TxRunner) RunTx(ctx context.Context, db *sql.DB, fn func(ctx context.Context, tx *sql.Tx) error) error {
	ctx, _ = withCall(ctx)
	return backoffsql.RunTx(ctx, db, &t.opts, fn)
}
