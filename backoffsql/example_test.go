package backoffsql_test

import (
	"context"
	"database/sql"
	"errors"
	"log"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/backoffsql"
)

// A transfer under SERIALIZABLE: the whole transaction runs again after a
// serialization failure or a deadlock; an unknown commit outcome is told
// apart.
func ExampleRunTx() {
	var db *sql.DB // sql.Open("pgx", dsn), or any driver
	ctx := context.Background()
	err := backoffsql.RunTx(ctx, db, &backoffsql.Options{
		Tx: &sql.TxOptions{Isolation: sql.LevelSerializable},
	}, func(ctx context.Context, tx *sql.Tx) error {
		// Only tx, and nothing outside it: this may run several times.
		if _, err := tx.ExecContext(ctx, `UPDATE account SET balance = balance - 10 WHERE id = 1`); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE account SET balance = balance + 10 WHERE id = 2`)
		return err
	})
	switch {
	case errors.Is(err, backoffsql.ErrCommitUnknown):
		log.Print("the transfer may have been applied: check before trying again")
	case err != nil:
		log.Print("not applied: ", err)
	}
}

// RunTx's default policy with a hook that logs each retry.
func ExampleDefaultPolicy() {
	var db *sql.DB
	opts := &backoffsql.Options{Retrier: &backoff.Retrier{
		Policy: backoffsql.DefaultPolicy(),
		OnRetry: func(_ context.Context, attempt int, err error, delay time.Duration) {
			log.Printf("transaction attempt %d: %v; again in %v", attempt, err, delay)
		},
	}}
	err := backoffsql.RunTx(context.Background(), db, opts, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE counter SET n = n + 1`)
		return err
	})
	if err != nil {
		log.Print(err)
	}
}

// A single statement with plain backoff.Do: Classify retries a busy or
// deadlocked statement and nothing that may have been applied.
func ExampleClassify() {
	var db *sql.DB
	policy := backoff.Must(backoff.NewFullJitter(backoff.Config{
		Base: 5 * time.Millisecond, Cap: time.Second, MaxAttempts: 8,
	}, backoff.RuntimeRng{}))
	err := backoff.Do(context.Background(), func(ctx context.Context) error {
		_, err := db.ExecContext(ctx, `INSERT INTO event (id, body) VALUES (?, ?)`, 42, "hello")
		return backoffsql.Classify(err)
	}, policy)
	if err != nil {
		log.Print(err)
	}
}
