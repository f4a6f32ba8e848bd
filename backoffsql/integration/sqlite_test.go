package integration

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/backoffsql"
	"github.com/backoffgo/backoff/backoffsql/integration/internal/sqlitecases"
	"modernc.org/sqlite"
)

// modernc is modernc.org/sqlite, for the tests of package sqlitecases.
var modernc = sqlitecases.Driver{
	Name: "modernc",
	Open: func(t testing.TB, path string, wal, immediate bool) *sql.DB {
		t.Helper()
		dsn := "file:" + path + "?_pragma=busy_timeout(0)&_pragma=journal_mode(DELETE)"
		if wal {
			dsn = "file:" + path + "?_pragma=busy_timeout(0)&_pragma=journal_mode(WAL)"
		}
		if immediate {
			dsn += "&_txlock=immediate"
		}
		db, err := sql.Open("sqlite", dsn)
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxOpenConns(1)
		return pinged(t, db)
	},
	Code: func(err error) int {
		var se *sqlite.Error
		if errors.As(err, &se) {
			return se.Code()
		}
		return -1
	},
}

// openSQLite opens one connection to the WAL database at path, with BEGIN
// IMMEDIATE and no busy timeout: a writer that finds the database locked
// gets SQLITE_BUSY at once.
func openSQLite(t testing.TB, path string) *sql.DB { return modernc.Open(t, path, true, true) }

func TestSQLiteBusy(t *testing.T)       { sqlitecases.Busy(t, modernc) }
func TestSQLiteCommitBusy(t *testing.T) { sqlitecases.CommitBusy(t, modernc) }
func TestSQLiteRejected(t *testing.T)   { sqlitecases.Rejected(t, modernc) }

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
