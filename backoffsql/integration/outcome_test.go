package integration

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/backoffsql"
	"github.com/jackc/pgx/v5/stdlib"
)

// TestSwallowedError: fn swallows an error (division by zero, which aborts a
// PostgreSQL transaction) and returns nil; the COMMIT becomes a ROLLBACK and
// the driver says so. RunTx must report that nothing was committed, not an
// unknown outcome, and not run fn again, Idempotent or not.
func TestSwallowedError(t *testing.T) {
	forDrivers(t, pgDrivers, "swallowed", func(t *testing.T, tg *target) {
		table := tg.logTable(t, "swallowed")
		runs := 0
		err := backoffsql.RunTx(context.Background(), tg.db, &backoffsql.Options{Retrier: fast(4), Idempotent: true},
			func(ctx context.Context, tx *sql.Tx) error {
				runs++
				if _, err := tx.ExecContext(ctx, `INSERT INTO `+table+` VALUES ('lost')`); err != nil {
					return err
				}
				_, _ = tx.ExecContext(ctx, `SELECT 1/0`) // swallowed: what fn must not do
				return nil
			})
		n := tg.count(t, table, "")
		if !errors.Is(err, backoffsql.ErrNotCommitted) || errors.Is(err, backoffsql.ErrCommitUnknown) || runs != 1 || n != 0 || backoff.Retryable(err) {
			t.Errorf("RunTx = %v after %d runs, %d rows; want ErrNotCommitted, not ErrCommitUnknown, not retryable, after 1 run, 0 rows", err, runs, n)
		}
		t.Logf("figures: %s, fn swallowed an error: RunTx returned %q after %d run", tg.name, err, runs)
	})
}

// TestCheckRead: MariaDB with innodb_snapshot_isolation=ON refuses a
// REPEATABLE READ transaction whose snapshot a concurrent commit made stale
// with 1020 (ER_CHECKREAD, "try restarting transaction"); RunTx restarts it,
// and no increment is lost.
func TestCheckRead(t *testing.T) {
	const workers, each = 4, 25
	tg := openMySQLWith(t, "checkread", map[string]string{"innodb_snapshot_isolation": "ON"})
	tg.key = "mysql"
	table := tg.table(t, "checkread")
	mustExec(t, tg.db, `INSERT INTO `+table+` VALUES (1, 0)`)
	tg.db.SetMaxOpenConns(workers)
	var mu sync.Mutex
	retried := map[uint16]int{}
	r := &backoff.Retrier{
		Policy: backoff.Must(backoff.NewFullJitter(backoff.Config{
			Base: time.Millisecond, Cap: 20 * time.Millisecond, MaxAttempts: 100,
		}, backoff.RuntimeRng{})),
		OnRetry: func(_ context.Context, _ int, err error, _ time.Duration) {
			mu.Lock()
			retried[mysqlNumber(err)]++
			mu.Unlock()
		},
	}
	opts := &backoffsql.Options{Tx: &sql.TxOptions{Isolation: sql.LevelRepeatableRead}, Retrier: r}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for range workers {
		wg.Go(func() {
			for range each {
				errs <- backoffsql.RunTx(ctx, tg.db, opts, func(ctx context.Context, tx *sql.Tx) error {
					var v int64
					if err := tx.QueryRowContext(ctx, `SELECT v FROM `+table+` WHERE id = 1`).Scan(&v); err != nil {
						return err
					}
					time.Sleep(time.Millisecond) // let the others read the same value
					_, err := tx.ExecContext(ctx, `UPDATE `+table+` SET v = ? WHERE id = 1`, v+1)
					return err
				})
			}
		})
	}
	wg.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if err != nil {
			failed++
			t.Error(err)
		}
	}
	var v int
	if err := tg.db.QueryRow(`SELECT v FROM ` + table + ` WHERE id = 1`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	if v != workers*each || retried[1020] == 0 {
		t.Errorf("counter %d, want %d; 1020 retried %d times (retries by number: %v)", v, workers*each, retried[1020], retried)
	}
	t.Logf("figures: MariaDB, %d×%d read-modify-writes under REPEATABLE READ with innodb_snapshot_isolation: %d failed, retries by error number %v, counter %d",
		workers, each, failed, retried, v)
}

// silentListener accepts connections and never answers: a server that
// hangs during the connection's startup.
func silentListener(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// TestDriverTimeout: a connection that the server never answers ends with
// the driver's own connect timeout while the caller's context is alive.
// That is no caller's deadline: BeginTx is tried again, each attempt
// counted, for pgx (whose error holds context.DeadlineExceeded) as for lib/pq
// (an i/o timeout).
func TestDriverTimeout(t *testing.T) {
	addr := silentListener(t)
	host, port, _ := net.SplitHostPort(addr)
	cfg := pgConfig(t)
	cfg.Host, cfg.ConnectTimeout, cfg.TLSConfig, cfg.Fallbacks = host, 300*time.Millisecond, nil, nil
	p, _ := strconv.Atoi(port)
	cfg.Port = uint16(p)
	libpq, err := sql.Open("postgres", "postgres://postgres@"+addr+"/x?sslmode=disable&connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	for name, db := range map[string]*sql.DB{"pgx": stdlib.OpenDB(*cfg), "lib/pq": libpq} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			defer db.Close()
			const attempts = 2
			r := fast(attempts)
			calls := 0
			r.OnDone = func(_ context.Context, n int, _ error) { calls = n }
			err := backoffsql.RunTx(context.Background(), db, &backoffsql.Options{Retrier: r}, func(context.Context, *sql.Tx) error {
				t.Error("fn ran without a connection")
				return nil
			})
			if !errors.Is(err, backoff.ErrExhausted) || calls != attempts {
				t.Errorf("RunTx = %v after %d attempts; want %d attempts, exhausted", err, calls, attempts)
			}
			t.Logf("figures: %s, connect timeout: RunTx returned %q after %d attempts", name, err, calls)
		})
	}
}

// TestSQLiteCommitInterrupted: in rollback-journal mode a COMMIT waits,
// under busy_timeout, for a reader's SHARED lock; the caller's deadline ends
// the wait, modernc rolls back, and RunTx says that nothing was committed.
func TestSQLiteCommitInterrupted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db")
	open := func() *sql.DB {
		db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(DELETE)&_pragma=busy_timeout(10000)")
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxOpenConns(1)
		t.Cleanup(func() { db.Close() })
		return db
	}
	writer, reader := open(), open()
	if _, err := writer.Exec(`CREATE TABLE item (id INTEGER PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	rtx, err := reader.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer rtx.Rollback()
	var n int
	if err := rtx.QueryRow(`SELECT count(*) FROM item`).Scan(&n); err != nil { // takes the SHARED lock
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	runs := 0
	err = backoffsql.RunTx(ctx, writer, &backoffsql.Options{Retrier: fast(3)}, func(ctx context.Context, tx *sql.Tx) error {
		runs++
		_, err := tx.ExecContext(ctx, `INSERT INTO item VALUES (1)`)
		return err
	})
	if err := rtx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := writer.QueryRow(`SELECT count(*) FROM item`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(err, backoffsql.ErrNotCommitted) || errors.Is(err, backoffsql.ErrCommitUnknown) || runs != 1 || n != 0 {
		t.Errorf("RunTx = %v after %d runs, %d rows; want ErrNotCommitted after 1 run, 0 rows", err, runs, n)
	}
	t.Logf("figures: modernc, COMMIT interrupted by the caller's deadline: RunTx returned %q, %d rows", err, n)
}

// TestFnCommits: fn commits the transaction itself, which it must not do.
// The row is committed, RunTx cannot know it and says so: ErrCommitUnknown,
// which no loop retries, Idempotent or not.
func TestFnCommits(t *testing.T) {
	forDrivers(t, allDrivers, "fncommits", func(t *testing.T, tg *target) {
		table := tg.logTable(t, "fncommits")
		runs := 0
		err := backoffsql.RunTx(context.Background(), tg.db, &backoffsql.Options{Retrier: fast(3), Idempotent: true},
			func(ctx context.Context, tx *sql.Tx) error {
				runs++
				if _, err := tx.ExecContext(ctx, `INSERT INTO `+table+` VALUES ('committed')`); err != nil {
					return err
				}
				return tx.Commit() // what fn must not do
			})
		n := tg.count(t, table, "")
		if !errors.Is(err, backoffsql.ErrCommitUnknown) || !errors.Is(err, sql.ErrTxDone) || backoff.Retryable(err) || runs != 1 || n != 1 {
			t.Errorf("RunTx = %v (retryable %v) after %d runs, %d rows; want ErrCommitUnknown, not retryable, after 1 run, 1 row",
				err, backoff.Retryable(err), runs, n)
		}
	})
}

// TestStatementTimeout: PostgreSQL stops a statement that outlives
// statement_timeout with 57014, which the table calls Rejected: the same
// limit would stop it again, so RunTx does not.
func TestStatementTimeout(t *testing.T) {
	forDrivers(t, pgDrivers, "stmttimeout", func(t *testing.T, tg *target) {
		runs := 0
		err := backoffsql.RunTx(context.Background(), tg.db, &backoffsql.Options{Retrier: fast(3)}, func(ctx context.Context, tx *sql.Tx) error {
			runs++
			if _, err := tx.ExecContext(ctx, `SET LOCAL statement_timeout = '20ms'`); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `SELECT pg_sleep(1)`)
			return err
		})
		if sqlState(err) != "57014" || runs != 1 || backoffsql.ClassOf(err) != backoffsql.Rejected {
			t.Errorf("RunTx = %v after %d runs; want 57014, Rejected, after 1 run", err, runs)
		}
	})
}

// TestFnDeadline: fn gives one statement a deadline of its own, shorter than
// the caller's, and the statement outlives it. That is fn's error, not a
// driver's timeout, whatever the driver makes of it: RunTx returns it after
// one run.
func TestFnDeadline(t *testing.T) {
	forDrivers(t, allDrivers, "fndeadline", func(t *testing.T, tg *target) {
		sleep := `SELECT pg_sleep(2)`
		if tg.name == "mysql" {
			sleep = `SELECT SLEEP(2)`
		}
		runs := 0
		err := backoffsql.RunTx(context.Background(), tg.db, &backoffsql.Options{Retrier: fast(3)}, func(ctx context.Context, tx *sql.Tx) error {
			runs++
			sub, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			defer cancel()
			_, err := tx.ExecContext(sub, sleep)
			return err
		})
		if err == nil || runs != 1 {
			t.Errorf("RunTx = %v after %d runs; want fn's error after 1 run", err, runs)
		}
		t.Logf("figures: %s, fn's own deadline: RunTx returned %q after %d runs (class %v)", tg.name, err, runs, backoffsql.ClassOf(err))
	})
}
