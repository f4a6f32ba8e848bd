// Package sqlitecases holds the SQLite tests that run with each SQLite
// driver: modernc.org/sqlite (package integration) and mattn/go-sqlite3
// (package mattn, which needs cgo).
package sqlitecases

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/backoffsql"
)

// Driver is one SQLite driver.
type Driver struct {
	Name string
	// Open opens one connection (the pool's only one) to the database file
	// at path, with no busy timeout: in WAL mode or else in rollback-journal
	// (DELETE) mode, and with BEGIN IMMEDIATE when immediate. The test
	// closes it.
	Open func(t testing.TB, path string, wal, immediate bool) *sql.DB
	// Code returns the result code in err's chain (extended if the driver
	// gives one), or -1.
	Code func(err error) int
}

// Busy: two connections write to one WAL file with BEGIN IMMEDIATE and no
// busy timeout; RunTx retries the SQLITE_BUSY errors, and no row is lost or
// duplicated.
func Busy(t *testing.T, d Driver) {
	const writers, rows = 2, 500
	path := filepath.Join(t.TempDir(), "busy.db")
	var dbs [writers]*sql.DB
	for i := range dbs {
		dbs[i] = d.Open(t, path, true, true)
	}
	if _, err := dbs[0].Exec(`CREATE TABLE item (id INTEGER PRIMARY KEY, writer INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	if _, err := dbs[0].Exec(`CREATE TABLE counter (n INTEGER NOT NULL); INSERT INTO counter VALUES (0)`); err != nil {
		t.Fatal(err)
	}
	var busy, other atomic.Int64
	r := &backoff.Retrier{
		Policy: backoff.Must(backoff.NewFullJitter(backoff.Config{
			Base: 50 * time.Microsecond, Cap: 5 * time.Millisecond, MaxAttempts: 1000,
		}, backoff.RuntimeRng{})),
		OnRetry: func(_ context.Context, _ int, err error, _ time.Duration) {
			if d.Code(err)&0xff == 5 { // SQLITE_BUSY
				busy.Add(1)
			} else {
				other.Add(1)
			}
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	start := time.Now()
	for w, db := range dbs {
		wg.Go(func() {
			for i := range rows {
				err := backoffsql.RunTx(ctx, db, &backoffsql.Options{Retrier: r}, func(ctx context.Context, tx *sql.Tx) error {
					if _, err := tx.ExecContext(ctx, `INSERT INTO item VALUES (?, ?)`, w*rows+i, w); err != nil {
						return err
					}
					_, err := tx.ExecContext(ctx, `UPDATE counter SET n = n + 1`)
					return err
				})
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var n, distinct, counter int
	if err := dbs[0].QueryRow(`SELECT count(*), count(DISTINCT id), (SELECT n FROM counter) FROM item`).Scan(&n, &distinct, &counter); err != nil {
		t.Fatal(err)
	}
	if n != writers*rows || distinct != n || counter != n {
		t.Errorf("%d rows, %d distinct, counter %d; want %d of each", n, distinct, counter, writers*rows)
	}
	if busy.Load() == 0 || other.Load() != 0 {
		t.Errorf("%d SQLITE_BUSY and %d other errors retried; want busy ones only, and some", busy.Load(), other.Load())
	}
	t.Logf("figures: SQLite (%s), %d connections × %d transactions on one WAL file, BEGIN IMMEDIATE, no busy timeout, in %v: "+
		"%d SQLITE_BUSY retried, %d rows, none lost or duplicated", d.Name, writers, rows, elapsed.Round(time.Millisecond), busy.Load(), n)
}

// CommitBusy: in rollback-journal mode a reader's SHARED lock makes the
// writer's COMMIT fail with SQLITE_BUSY (no busy timeout); the driver rolls
// the transaction back, and RunTx runs it again, refused again until the
// reader leaves, after five refusals.
// Had the driver left the transaction open, the next BEGIN on the same
// connection would fail.
func CommitBusy(t *testing.T, d Driver) {
	path := filepath.Join(t.TempDir(), "journal.db")
	writer, reader := d.Open(t, path, false, true), d.Open(t, path, false, false)
	if _, err := writer.Exec(`CREATE TABLE item (id INTEGER PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	rtx, err := reader.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rtx.Rollback() }() // if the test ends before the reader leaves
	var n int
	if err := rtx.QueryRow(`SELECT count(*) FROM item`).Scan(&n); err != nil { // takes the SHARED lock
		t.Fatal(err)
	}
	// The reader leaves once the writer's COMMIT has been refused a few times.
	const refusals = 5
	var busyAtCommit atomic.Int64
	r := &backoff.Retrier{
		Policy: backoff.Must(backoff.NewExponential(backoff.Config{Base: time.Millisecond, Cap: time.Millisecond, MaxAttempts: 1000})),
		OnRetry: func(_ context.Context, _ int, err error, _ time.Duration) {
			if d.Code(err)&0xff == 5 && busyAtCommit.Add(1) == refusals {
				if err := rtx.Rollback(); err != nil {
					t.Errorf("the reader's rollback: %v", err)
				}
			}
		},
	}
	runs, fnFailed := 0, 0
	err = backoffsql.RunTx(context.Background(), writer, &backoffsql.Options{Retrier: r}, func(ctx context.Context, tx *sql.Tx) error {
		runs++
		_, err := tx.ExecContext(ctx, `INSERT INTO item VALUES (1)`)
		if err != nil {
			fnFailed++
		}
		return err
	})
	if err := writer.QueryRow(`SELECT count(*) FROM item`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	// fn never failed, so each retry was a COMMIT's SQLITE_BUSY.
	if err != nil || n != 1 || fnFailed != 0 || busyAtCommit.Load() != refusals || runs != refusals+1 {
		t.Errorf("RunTx = %v after %d runs (%d failed in fn, %d SQLITE_BUSY retried), %d rows; want nil, 1 row, %d runs, every retry a COMMIT's SQLITE_BUSY",
			err, runs, fnFailed, busyAtCommit.Load(), n, refusals+1)
	}
	t.Logf("figures: SQLite (%s), rollback journal, COMMIT refused with SQLITE_BUSY: rolled back and run again %d times, then committed", d.Name, runs-1)
}

// Rejected: a real constraint violation and a real syntax error are not
// retried.
func Rejected(t *testing.T, d Driver) {
	db := d.Open(t, filepath.Join(t.TempDir(), "rej.db"), true, false)
	if _, err := db.Exec(`CREATE TABLE item (id INTEGER PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO item VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{`INSERT INTO item VALUES (1)`, `INSERT INTO item VALUS (2)`} {
		runs := 0
		err := backoffsql.RunTx(context.Background(), db, nil, func(ctx context.Context, tx *sql.Tx) error {
			runs++
			_, err := tx.ExecContext(ctx, stmt)
			return err
		})
		if runs != 1 || !errors.Is(err, backoff.ErrPermanent) || backoffsql.ClassOf(err) != backoffsql.Rejected {
			t.Errorf("%s: RunTx = %v after %d runs; want a Rejected error after 1", stmt, err, runs)
		}
	}
}
