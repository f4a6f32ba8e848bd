package integration

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/backoffsql"
)

// fast retries 1ms apart, up to attempts attempts.
func fast(attempts int) *backoff.Retrier {
	return &backoff.Retrier{Policy: backoff.Must(backoff.NewExponential(backoff.Config{
		Base: time.Millisecond, Cap: time.Millisecond, MaxAttempts: attempts,
	}))}
}

// poll runs f every few milliseconds until it reports done or fails, or ctx
// ends.
func poll(ctx context.Context, f func() (done bool, err error)) error {
	for {
		done, err := f()
		if done || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(3 * time.Millisecond):
		}
	}
}

// gone waits until the session id has left the server.
func (tg *target) gone(ctx context.Context, id int64) error {
	query := "SELECT count(*) FROM pg_stat_activity WHERE pid = $1"
	if tg.my {
		query = "SELECT count(*) FROM information_schema.processlist WHERE id = ?"
	}
	return poll(ctx, func() (bool, error) {
		var n int
		err := tg.admin.QueryRowContext(ctx, query, id).Scan(&n)
		return n == 0, err
	})
}

// TestCommitUnanswered: PostgreSQL applies a COMMIT, and its answer never
// reaches the driver. The server names a synchronous standby that never
// connects, the transaction opts in with SET LOCAL synchronous_commit = on,
// so its COMMIT is durable locally and waits (SyncRep); then its backend is
// terminated. Each driver must report ErrCommitUnknown, not run fn again.
func TestCommitUnanswered(t *testing.T) {
	forDrivers(t, pgDrivers, "unanswered", func(t *testing.T, tg *target) {
		table := tg.logTable(t, "unanswered")
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		killed := make(chan error, 1)
		go func() {
			killed <- poll(ctx, func() (bool, error) {
				var n int
				err := tg.admin.QueryRowContext(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
					WHERE wait_event = 'SyncRep' AND application_name = $1`, tg.tag).Scan(&n)
				return n > 0, err
			})
		}()
		runs := 0
		err := backoffsql.RunTx(ctx, tg.db, &backoffsql.Options{Retrier: fast(5)}, func(ctx context.Context, tx *sql.Tx) error {
			runs++
			if runs == 1 { // a second run's COMMIT does not wait
				if _, err := tx.ExecContext(ctx, `SET LOCAL synchronous_commit = on`); err != nil {
					return err
				}
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO `+table+` VALUES ('transfer')`)
			return err
		})
		if err := <-killed; err != nil {
			t.Fatalf("terminating the backend waiting in SyncRep: %v", err)
		}
		n := tg.count(t, table, "")
		if !errors.Is(err, backoffsql.ErrCommitUnknown) || runs != 1 || n != 1 || backoff.Retryable(err) {
			t.Errorf("RunTx = %v (retryable %v) after %d runs, %d rows; want ErrCommitUnknown, not retryable, after 1 run, 1 row",
				err, backoff.Retryable(err), runs, n)
		}
		t.Logf("figures: %s, COMMIT applied, answer lost: RunTx returned %q after %d run, %d row", tg.name, err, runs, n)
	})
}

// TestSessionKilled: the session of a transaction is ended from another
// session (pg_terminate_backend, KILL), between two statements or during
// one; the transaction dies with it, and RunTx runs it again on a new
// connection: each of its rows is there once.
func TestSessionKilled(t *testing.T) {
	forDrivers(t, allDrivers, "killed", func(t *testing.T, tg *target) {
		sleep := `SELECT pg_sleep(5)`
		if tg.my {
			sleep = `SELECT SLEEP(5)`
		}
		for _, during := range []bool{false, true} {
			name := "between statements"
			if during {
				name = "during a statement"
			}
			t.Run(name, func(t *testing.T) {
				table := tg.logTable(t, "killed")
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				runs := 0
				err := backoffsql.RunTx(ctx, tg.db, &backoffsql.Options{Retrier: fast(3)}, func(ctx context.Context, tx *sql.Tx) error {
					runs++
					if _, err := tx.ExecContext(ctx, `INSERT INTO `+table+` VALUES ('first')`); err != nil {
						return err
					}
					if runs == 1 {
						id, err := tg.sessionID(ctx, tx)
						if err != nil {
							return err
						}
						if during {
							time.AfterFunc(100*time.Millisecond, func() { _ = tg.kill(ctx, id) })
							_, err := tx.ExecContext(ctx, sleep)
							return err
						}
						if err := tg.kill(ctx, id); err != nil {
							t.Errorf("kill: %v", err)
						}
						if err := tg.gone(ctx, id); err != nil {
							t.Errorf("waiting for the killed session to leave: %v", err)
						}
					}
					_, err := tx.ExecContext(ctx, `INSERT INTO `+table+` VALUES ('second')`)
					return err
				})
				first, second := tg.count(t, table, `note = 'first'`), tg.count(t, table, `note = 'second'`)
				if err != nil || runs != 2 || first != 1 || second != 1 {
					t.Errorf("RunTx = %v after %d runs, rows first %d, second %d; want nil after 2 runs, one of each", err, runs, first, second)
				}
				t.Logf("figures: %s, session killed %s: RunTx returned %v after %d runs", tg.name, name, err, runs)
			})
		}
	})
}

// TestIdleInTransactionTimeout: PostgreSQL ends a session idle in its
// transaction for longer than idle_in_transaction_session_timeout, with
// FATAL 25P03; the transaction died with its connection and runs again.
func TestIdleInTransactionTimeout(t *testing.T) {
	forDrivers(t, pgDrivers, "idle", func(t *testing.T, tg *target) {
		table := tg.logTable(t, "idle")
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		runs := 0
		var first error
		err := backoffsql.RunTx(ctx, tg.db, &backoffsql.Options{Retrier: fast(3)}, func(ctx context.Context, tx *sql.Tx) error {
			runs++
			if runs == 1 {
				if _, err := tx.ExecContext(ctx, `SET LOCAL idle_in_transaction_session_timeout = '50ms'`); err != nil {
					return err
				}
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO `+table+` VALUES ('first')`); err != nil {
				return err
			}
			if runs == 1 {
				time.Sleep(300 * time.Millisecond)
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO `+table+` VALUES ('second')`)
			if runs == 1 {
				first = err
			}
			return err
		})
		n := tg.count(t, table, "")
		if err != nil || runs != 2 || n != 2 {
			t.Errorf("RunTx = %v after %d runs, %d rows (the first run's error: %v); want nil after 2 runs, 2 rows", err, runs, n, first)
		}
		t.Logf("figures: %s, idle_in_transaction_session_timeout: the first run failed with %q, RunTx returned %v after %d runs", tg.name, first, err, runs)
	})
}
