package integration

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/backoffsql"
	"modernc.org/sqlite"
)

// openSQLite opens one connection to the WAL database at path, with BEGIN
// IMMEDIATE and no busy timeout: a writer that finds the database locked
// gets SQLITE_BUSY at once.
func openSQLite(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(0)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
	return db
}

func sqliteCode(err error) int {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code()
	}
	return -1
}

// TestSQLiteBusy: two connections write to one WAL file with BEGIN
// IMMEDIATE and no busy timeout; RunTx retries the SQLITE_BUSY errors, and
// no row is lost or duplicated.
func TestSQLiteBusy(t *testing.T) {
	const writers, rows = 2, 500
	path := filepath.Join(t.TempDir(), "busy.db")
	var dbs [writers]*sql.DB
	for i := range dbs {
		dbs[i] = openSQLite(t, path)
	}
	if _, err := dbs[0].Exec(`CREATE TABLE item (id INTEGER PRIMARY KEY, writer INTEGER NOT NULL);
		CREATE TABLE counter (n INTEGER NOT NULL); INSERT INTO counter VALUES (0)`); err != nil {
		t.Fatal(err)
	}

	var busy, other atomic.Int64
	r := &backoff.Retrier{
		Policy: backoff.Must(backoff.NewFullJitter(backoff.Config{
			Base: 50 * time.Microsecond, Cap: 5 * time.Millisecond, MaxAttempts: 1000,
		}, backoff.RuntimeRng{})),
		OnRetry: func(_ context.Context, _ int, err error, _ time.Duration) {
			if sqliteCode(err)&0xff == 5 { // SQLITE_BUSY
				busy.Add(1)
			} else {
				other.Add(1)
			}
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var runs atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	start := time.Now()
	for w, db := range dbs {
		wg.Go(func() {
			for i := range rows {
				err := backoffsql.RunTx(ctx, db, &backoffsql.Options{Retrier: r}, func(ctx context.Context, tx *sql.Tx) error {
					runs.Add(1)
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
	t.Logf("figures: SQLite, %d connections × %d transactions on one WAL file, BEGIN IMMEDIATE, no busy timeout, in %v: "+
		"%d SQLITE_BUSY retried, %d rows, none lost or duplicated", writers, rows, elapsed.Round(time.Millisecond), busy.Load(), n)
}

// TestSQLiteRejected: a real constraint violation and a real syntax error
// are not retried.
func TestSQLiteRejected(t *testing.T) {
	db := openSQLite(t, filepath.Join(t.TempDir(), "rej.db"))
	if _, err := db.Exec(`CREATE TABLE item (id INTEGER PRIMARY KEY); INSERT INTO item VALUES (1)`); err != nil {
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

// sqliteBench opens the benchmark's database: one connection, WAL, one row.
func sqliteBench(tb testing.TB) *sql.DB {
	db := openSQLite(tb, filepath.Join(tb.TempDir(), "bench.db"))
	if _, err := db.Exec(`PRAGMA synchronous = OFF; CREATE TABLE counter (n INTEGER NOT NULL); INSERT INTO counter VALUES (0)`); err != nil {
		tb.Fatal(err)
	}
	return db
}

func increment(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `UPDATE counter SET n = n + 1`)
	return err
}

// byHand is the same transaction written without the helper.
func byHand(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := increment(ctx, tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

var benchRetrier = &backoff.Retrier{Policy: backoff.Must(backoff.NewFullJitter(backoff.Config{
	Base: time.Millisecond, Cap: 100 * time.Millisecond, MaxAttempts: 10,
}, backoff.RuntimeRng{}))}

// BenchmarkSQLiteTx: one UPDATE in a transaction on a real SQLite file, by
// hand and through RunTx; the difference is the helper's overhead.
func BenchmarkSQLiteTx(b *testing.B) {
	ctx := context.Background()
	b.Run("impl=by-hand", func(b *testing.B) {
		db := sqliteBench(b)
		b.ReportAllocs()
		for b.Loop() {
			if err := byHand(ctx, db); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=RunTx", func(b *testing.B) {
		db := sqliteBench(b)
		opts := &backoffsql.Options{Retrier: benchRetrier}
		b.ReportAllocs()
		for b.Loop() {
			if err := backoffsql.RunTx(ctx, db, opts, increment); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestSQLiteAllocs: RunTx allocates nothing per transaction beyond what
// database/sql and the driver allocate for the same transaction by hand.
func TestSQLiteAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("measures allocations")
	}
	db := sqliteBench(t)
	ctx := context.Background()
	opts := &backoffsql.Options{Retrier: benchRetrier}
	hand := func() {
		if err := byHand(ctx, db); err != nil {
			t.Fatal(err)
		}
		runtime.Gosched() // let database/sql's per-transaction goroutine exit
	}
	helped := func() {
		if err := backoffsql.RunTx(ctx, db, opts, increment); err != nil {
			t.Fatal(err)
		}
		runtime.Gosched()
	}
	h, r := math.Inf(1), math.Inf(1)
	for range 5 {
		h = min(h, testing.AllocsPerRun(100, hand))
		r = min(r, testing.AllocsPerRun(100, helped))
	}
	if r > h {
		t.Errorf("RunTx: %.1f allocations per transaction; by hand %.1f", r, h)
	}
	t.Logf("figures: SQLite, allocations per transaction: by hand %.0f, RunTx %.0f", h, r)
}
