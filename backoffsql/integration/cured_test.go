package integration

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/backoffsql"
	"github.com/go-sql-driver/mysql"
)

// The errors of issue 32 §1: each stops a transaction once, and running it
// again cures it. Each test provokes the error on a real server and checks
// that RunTx ran the transaction again, saw the error doing so, and
// succeeded.

// retried is a Retrier that tries every wait apart, up to attempts times,
// and keeps the errors it retried.
type retried struct {
	mu   sync.Mutex
	errs []error
}

func (r *retried) retrier(wait time.Duration, attempts int) *backoff.Retrier {
	return &backoff.Retrier{
		Policy: backoff.Must(backoff.NewExponential(backoff.Config{Base: wait, Cap: wait, MaxAttempts: attempts})),
		OnRetry: func(_ context.Context, _ int, err error, _ time.Duration) {
			r.mu.Lock()
			r.errs = append(r.errs, err)
			r.mu.Unlock()
		},
	}
}

// numbers returns the MySQL error numbers of the retried errors.
func (r *retried) numbers() []uint16 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ns []uint16
	for _, err := range r.errs {
		ns = append(ns, mysqlNumber(err))
	}
	return ns
}

// states returns the SQLSTATEs of the retried errors.
func (r *retried) states() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var s []string
	for _, err := range r.errs {
		s = append(s, sqlState(err))
	}
	return s
}

// TestMariaDBTableDefinitionChanged: a REPEATABLE READ snapshot older than
// an ALTER TABLE … ALGORITHM=COPY that another connection ran cannot read
// the rebuilt table: 1412 ER_TABLE_DEF_CHANGED, "please retry transaction".
// The second run, with a new snapshot, reads it.
func TestMariaDBTableDefinitionChanged(t *testing.T) {
	tg := openMySQL(t, "defchanged")
	tg.key = "mysql"
	first := tg.table(t, "snapshot")
	altered := tg.table(t, "altered")
	var r retried
	runs := 0
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := backoffsql.RunTx(ctx, tg.db, &backoffsql.Options{Retrier: r.retrier(time.Millisecond, 3)}, func(ctx context.Context, tx *sql.Tx) error {
		runs++
		var n int
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM "+first).Scan(&n); err != nil { // the snapshot begins
			return err
		}
		if runs == 1 {
			if _, err := tg.admin.ExecContext(ctx, "ALTER TABLE "+tg.tagged(altered)+" ADD COLUMN w int, ALGORITHM=COPY"); err != nil {
				return fmt.Errorf("ALTER TABLE from another connection: %w", err)
			}
		}
		return tx.QueryRowContext(ctx, "SELECT count(*) FROM "+altered).Scan(&n)
	})
	if err != nil || runs != 2 || fmt.Sprint(r.numbers()) != "[1412]" {
		t.Fatalf("RunTx = %v after %d runs, retried errors %v; want nil after 2 runs, 1412 retried once", err, runs, r.numbers())
	}
}

// TestPgxCachedPlanChanged: pgx prepares a SELECT * and keeps the prepared
// statement; another connection adds a column; the statement's next run in
// a transaction fails with 0A000 "cached plan must not change result type"
// (PostgreSQL's RevalidateCachedQuery), and pgx drops the statement. The
// second run prepares it afresh and succeeds.
func TestPgxCachedPlanChanged(t *testing.T) {
	tg := openPgx(t, "cachedplan")
	tg.key = "pgx"
	tg.db.SetMaxOpenConns(1) // the statement is cached on this one connection
	table := tg.table(t, "cachedplan")
	mustExec(t, tg.db, "INSERT INTO "+table+" VALUES (1, 10)")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	runs := 0
	read := func(ctx context.Context, tx *sql.Tx) error {
		runs++
		return scanAll(tx.QueryContext(ctx, "SELECT * FROM "+table+" WHERE id = $1", 1))
	}
	if err := backoffsql.RunTx(ctx, tg.db, &backoffsql.Options{Retrier: fast(1)}, read); err != nil {
		t.Fatalf("first read, which prepares the statement: %v", err)
	}
	mustExec(t, tg.admin, "ALTER TABLE "+table+" ADD COLUMN w int")
	var r retried
	runs = 0
	err := backoffsql.RunTx(ctx, tg.db, &backoffsql.Options{Retrier: r.retrier(time.Millisecond, 3)}, read)
	if err != nil || runs != 2 || fmt.Sprint(r.states()) != "[0A000]" {
		t.Fatalf("RunTx = %v after %d runs, retried %v; want nil after 2 runs, 0A000 retried once", err, runs, r.states())
	}
}

// TestCachedPlanNotCuredStopsAtTwo: a statement prepared on the *sql.DB and
// used in the transaction with tx.Stmt stays prepared on the connection
// (database/sql keeps it; pgx and lib/pq do not drop it), so every run
// fails with the cached-plan error again. RunTx runs the transaction a
// second time, as for a statement the driver dropped, and then gives up:
// the error is Rejected, not retried until the policy runs out.
func TestCachedPlanNotCuredStopsAtTwo(t *testing.T) {
	forDrivers(t, pgDrivers, "stalestmt", func(t *testing.T, tg *target) {
		tg.db.SetMaxOpenConns(1)
		table := tg.table(t, "stalestmt")
		mustExec(t, tg.db, "INSERT INTO "+table+" VALUES (1, 10)")
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		stmt, err := tg.db.PrepareContext(ctx, "SELECT * FROM "+table+" WHERE id = $1")
		if err != nil {
			t.Fatal(err)
		}
		defer stmt.Close()
		runs := 0
		read := func(ctx context.Context, tx *sql.Tx) error {
			runs++
			return scanAll(tx.StmtContext(ctx, stmt).QueryContext(ctx, 1))
		}
		if err := backoffsql.RunTx(ctx, tg.db, &backoffsql.Options{Retrier: fast(1)}, read); err != nil {
			t.Fatalf("first read, on the prepared statement: %v", err)
		}
		mustExec(t, tg.admin, "ALTER TABLE "+table+" ADD COLUMN w int")
		var r retried
		runs = 0
		err = backoffsql.RunTx(ctx, tg.db, &backoffsql.Options{Retrier: r.retrier(time.Millisecond, 10)}, read)
		var be *backoff.Error
		if !errors.As(err, &be) || be.Reason != backoff.ErrPermanent || sqlState(err) != "0A000" || backoff.Retryable(err) ||
			runs != 2 || fmt.Sprint(r.states()) != "[0A000]" {
			t.Fatalf("RunTx = %v after %d runs, retried %v; want 0A000, given up (not retryable) after 2 runs", err, runs, r.states())
		}
	})
}

// scanAll reads every row of a query whatever its columns, and returns
// the first error.
func scanAll(rows *sql.Rows, err error) error {
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	vals := make([]any, len(cols))
	for i := range vals {
		vals[i] = new(any)
	}
	for rows.Next() {
		if err := rows.Scan(vals...); err != nil {
			return err
		}
	}
	return rows.Err()
}

// limitedUser creates, afresh, a MariaDB account without privileges
// (it may connect and run transactions on nothing), with the clause
// limits (e.g. "WITH MAX_USER_CONNECTIONS 1"), and returns a function that
// opens a pool connecting as it; the account is dropped when the test ends.
func limitedUser(t *testing.T, name, limits string) func() *sql.DB {
	cfg := mysqlConfig(t)
	admin := pinged(t, mustConnector(t, cfg))
	host := "127.0.0.1"
	mustExec(t, admin, "DROP USER IF EXISTS '"+name+"'@'"+host+"'")
	mustExec(t, admin, "CREATE USER '"+name+"'@'"+host+"' IDENTIFIED BY '"+name+"' "+limits)
	t.Cleanup(func() { mustExec(t, admin, "DROP USER IF EXISTS '"+name+"'@'"+host+"'") })
	cfg = cfg.Clone()
	cfg.User, cfg.Passwd, cfg.DBName = name, name, ""
	return func() *sql.DB {
		c, err := mysql.NewConnector(cfg)
		if err != nil {
			t.Fatal(err)
		}
		db := sql.OpenDB(c)
		t.Cleanup(func() { db.Close() })
		return db
	}
}

// hold takes connections of a pool of its own until the server refuses one
// with the error number want, and returns them: closing one ends its
// session on the server.
func hold(t *testing.T, open func() *sql.DB, want uint16) []*sql.Conn {
	t.Helper()
	db := open()
	db.SetMaxIdleConns(0)
	var held []*sql.Conn
	t.Cleanup(func() {
		for _, c := range held {
			c.Close()
		}
	})
	for len(held) < 1000 {
		c, err := db.Conn(context.Background())
		if err != nil {
			if mysqlNumber(err) != want {
				t.Fatalf("connection %d: %v; want error %d", len(held)+1, err, want)
			}
			return held
		}
		held = append(held, c)
	}
	t.Fatalf("%d connections and no error %d", len(held), want)
	return nil
}

// freeAfter runs a transaction on a new pool while every connection the server
// allows is taken, one of them given back after 300ms: BeginTx fails with
// the error number want until then, and must be retried until it succeeds.
func freeAfter(t *testing.T, open func() *sql.DB, held []*sql.Conn, want uint16) {
	if len(held) == 0 {
		t.Fatal("no connection held")
	}
	last := held[len(held)-1]
	timer := time.AfterFunc(300*time.Millisecond, func() { last.Close() })
	defer timer.Stop()
	var r retried
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	err := backoffsql.RunTx(ctx, open(), &backoffsql.Options{Retrier: r.retrier(20*time.Millisecond, 200)}, func(ctx context.Context, tx *sql.Tx) error {
		var one int
		return tx.QueryRowContext(ctx, "SELECT 1").Scan(&one)
	})
	took := time.Since(start)
	ns := r.numbers()
	if err != nil || len(ns) == 0 || ns[0] != want {
		t.Fatalf("RunTx = %v after %v, retried %v; want nil once a connection is free, error %d retried", err, took, ns, want)
	}
	t.Logf("figures: error %d at BeginTx retried %d times, RunTx succeeded after %v", want, len(ns), took.Round(time.Millisecond))
}

// TestMariaDBTooManyConnections: with every connection of max_connections
// taken, the server refuses the next with 1040 ER_CON_COUNT_ERROR; a
// connection freed 300ms later lets RunTx begin. Not parallel: it lowers
// the server's max_connections (to what is in use and 3 more) while it
// runs, and then restores it. The account it fills the server with has no
// SUPER privilege, so the connection MariaDB keeps for SUPER stays free for
// the test's admin pool.
func TestMariaDBTooManyConnections(t *testing.T) {
	open := limitedUser(t, "backoff_few", "")
	ctx := context.Background()
	admin, err := pinged(t, mustConnector(t, mysqlConfig(t))).Conn(ctx) // open before, to restore the limit
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var was, used int
	var name string
	if err := admin.QueryRowContext(ctx, "SELECT @@GLOBAL.max_connections").Scan(&was); err != nil {
		t.Fatal(err)
	}
	// Sessions that earlier tests closed may still be leaving: wait until
	// the count holds still for 50ms, so that no slot frees by itself.
	for prev := -1; used != prev; time.Sleep(50 * time.Millisecond) {
		prev = used
		if err := admin.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Threads_connected'").Scan(&name, &used); err != nil {
			t.Fatal(err)
		}
	}
	setGlobal(t, admin, "max_connections", used+3)
	defer setGlobal(t, admin, "max_connections", was)
	freeAfter(t, open, hold(t, open, 1040), 1040)
}

// TestMariaDBUserConnectionLimit: an account created WITH
// MAX_USER_CONNECTIONS 2 that holds two connections is refused a third
// with 1226 ER_USER_LIMIT_REACHED ('max_user_connections' resource); one
// freed 300ms later lets RunTx begin.
func TestMariaDBUserConnectionLimit(t *testing.T) {
	open := limitedUser(t, "backoff_two", "WITH MAX_USER_CONNECTIONS 2")
	freeAfter(t, open, hold(t, open, 1226), 1226)
}

// setGlobal sets the server's variable name to v on the session c.
func setGlobal(t *testing.T, c *sql.Conn, name string, v int) {
	t.Helper()
	if _, err := c.ExecContext(context.Background(), "SET GLOBAL "+name+" = "+strconv.Itoa(v)); err != nil {
		t.Fatal(err)
	}
}
