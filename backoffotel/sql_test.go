package backoffotel_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/backoffotel"
	"github.com/backoffgo/backoff/backoffsql"
	_ "modernc.org/sqlite"
)

// TestSQL: a transaction on a real SQLite database whose table another
// connection keeps locked (BEGIN IMMEDIATE) fails with SQLITE_BUSY, which
// RunTx retries: once the lock is released after the second failure, the
// transaction commits after 2 retries; kept, it gives up, exhausted, after
// 2. The Retrier's own OnRetry is still called.
func TestSQL(t *testing.T) {
	for _, tt := range []struct {
		name    string
		release int // the attempt after which the lock is released; 0: never
		reason  string
	}{{"committed", 2, ""}, {"exhausted", 0, "exhausted"}} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "db"))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.ExecContext(ctx, "CREATE TABLE t (x INTEGER)"); err != nil {
				t.Fatal(err)
			}
			lock, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer lock.Close()
			if _, err := lock.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
				t.Fatal(err)
			}
			var retries []int
			r := &backoff.Retrier{Policy: constant(time.Millisecond, 3), OnRetry: func(_ context.Context, attempt int, _ error, _ time.Duration) {
				retries = append(retries, attempt)
				if attempt == tt.release {
					if _, err := lock.ExecContext(ctx, "ROLLBACK"); err != nil {
						t.Error(err)
					}
				}
			}}
			tm := newTelemetry()
			runner, err := backoffotel.NewTxRunner(&backoffsql.Options{Retrier: r}, tm.config())
			if err != nil {
				t.Fatal(err)
			}
			err = runner.RunTx(ctx, db, func(ctx context.Context, tx *sql.Tx) error {
				_, err := tx.ExecContext(ctx, "INSERT INTO t VALUES (1)")
				return err
			})
			if (err == nil) != (tt.reason == "") || (err != nil && !errors.Is(err, backoff.ErrExhausted)) {
				t.Fatalf("RunTx = %v, want reason %q", err, tt.reason)
			}
			if len(retries) != 2 {
				t.Errorf("the Retrier's own OnRetry saw %v, want [1 2]", retries)
			}
			checkMetrics(t, tm, "", want{retries: 2, delay: 2 * time.Millisecond, reason: tt.reason},
				backoffotel.SQLRetriesMetric, "", backoffotel.SQLRetryDelayMetric, backoffotel.SQLGiveUpsMetric)
		})
	}
}
