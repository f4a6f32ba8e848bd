package backoffsql_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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

// RunTx's default Retrier with hooks: DefaultRetrier returns a new Retrier
// on every call, whose fields the caller may set. Here the first COMMIT
// fails with a serialization failure and the second run commits.
func ExampleDefaultRetrier() {
	db := exampleDB() // sql.Open("pgx", dsn)
	defer db.Close()
	r := backoffsql.DefaultRetrier()
	r.OnRetry = func(_ context.Context, attempt int, err error, _ time.Duration) {
		fmt.Printf("attempt %d: %v\n", attempt, err)
	}
	r.OnDone = func(_ context.Context, attempts int, err error) {
		fmt.Printf("done after %d attempts: %v\n", attempts, err)
	}
	err := backoffsql.RunTx(context.Background(), db, &backoffsql.Options{Retrier: r}, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE counter SET n = n + 1`)
		return err
	})
	fmt.Println(err)
	// Output:
	// attempt 1: ERROR: could not serialize access due to concurrent update (SQLSTATE 40001)
	// done after 2 attempts: <nil>
	// <nil>
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
