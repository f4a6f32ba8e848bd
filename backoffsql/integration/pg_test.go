package integration

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/backoffsql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// serverDSN returns the DSN in the environment variable name, or skips the
// test loudly; under CI=true a missing server fails it.
func serverDSN(t testing.TB, name string) string {
	t.Helper()
	dsn := os.Getenv(name)
	if dsn == "" {
		msg := name + " is not set, so this test does NOT run: " +
			"`bash .ci/databases` starts the servers and runs the tests"
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true: " + msg)
		}
		t.Skip("SKIPPED: " + msg)
	}
	return dsn
}

// pgConfig returns pgx's configuration of the test server (BACKOFF_PG_DSN).
func pgConfig(t testing.TB) *pgx.ConnConfig {
	t.Helper()
	cfg, err := pgx.ParseConfig(serverDSN(t, "BACKOFF_PG_DSN"))
	if err != nil {
		t.Fatalf("BACKOFF_PG_DSN: %v", err)
	}
	return cfg
}

// openPG opens a pgx pool on cfg that the test closes.
func openPG(t testing.TB, cfg *pgx.ConnConfig) *sql.DB {
	t.Helper()
	return pinged(t, stdlib.OpenDB(*cfg))
}

// pinged returns db, closed when the test ends, once it answers.
func pinged(t testing.TB, db *sql.DB) *sql.DB {
	t.Helper()
	t.Cleanup(func() { db.Close() })
	if err := db.PingContext(context.Background()); err != nil {
		t.Fatalf("%T: %v", db.Driver(), err)
	}
	return db
}

func mustExec(t testing.TB, db *sql.DB, query string, args ...any) {
	t.Helper()
	if _, err := db.ExecContext(context.Background(), query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// sqlState returns the SQLSTATE in err's chain (pgx's or lib/pq's), or "".
func sqlState(err error) string {
	var pe interface{ SQLState() string }
	if errors.As(err, &pe) {
		return pe.SQLState()
	}
	return ""
}

// retryCounter is a Retrier whose OnRetry counts the retried errors by
// SQLSTATE (or by text when they have none).
type retryCounter struct {
	mu       sync.Mutex
	counts   map[string]int
	attempts map[int]int // RunTx calls by the number of attempts they took
}

func (c *retryCounter) retrier(p backoff.Policy) *backoff.Retrier {
	c.counts = map[string]int{}
	c.attempts = map[int]int{}
	return &backoff.Retrier{
		Policy: p,
		OnRetry: func(_ context.Context, _ int, err error, _ time.Duration) {
			key := sqlState(err)
			if key == "" {
				key = err.Error()
			}
			c.mu.Lock()
			c.counts[key]++
			c.mu.Unlock()
		},
		OnDone: func(_ context.Context, attempts int, _ error) {
			c.mu.Lock()
			c.attempts[attempts]++
			c.mu.Unlock()
		},
	}
}

// histogram returns how many RunTx calls took each number of attempts, in
// increasing order of attempts: "1:2950 2:230 ...".
func (c *retryCounter) histogram() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := slices.Sorted(maps.Keys(c.attempts))
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%d:%d", k, c.attempts[k])
	}
	return b.String()
}

func (c *retryCounter) get(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[key]
}

func (c *retryCounter) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprint(c.counts)
}

// TestBankTransfersSerializable: 16 goroutines × 200 transfers between 10
// accounts under SERIALIZABLE, each a read-modify-write of two balances and
// the insertion of a row with the transfer's unique id, with RunTx's
// default policy. The total must be unchanged, every transfer applied
// exactly once, none given up, and serialization failures must have been
// retried (or the test did not exercise the path).
func TestBankTransfersSerializable(t *testing.T) {
	const (
		workers   = 16
		transfers = 200
		accounts  = 10
		initial   = 1000
	)
	db := openPG(t, pgConfig(t))
	db.SetMaxOpenConns(workers)
	db.SetMaxIdleConns(workers)
	mustExec(t, db, `DROP TABLE IF EXISTS bank_transfer, bank_account`)
	mustExec(t, db, `CREATE TABLE bank_account (id int PRIMARY KEY, balance bigint NOT NULL)`)
	mustExec(t, db, `CREATE TABLE bank_transfer (id bigint PRIMARY KEY, from_id int NOT NULL, to_id int NOT NULL, amount bigint NOT NULL)`)
	mustExec(t, db, `INSERT INTO bank_account SELECT g, $1 FROM generate_series(0, $2 - 1) g`, initial, accounts)

	var rc retryCounter
	r := rc.retrier(backoffsql.DefaultRetrier().Policy)
	opts := &backoffsql.Options{Tx: &sql.TxOptions{Isolation: sql.LevelSerializable}, Retrier: r}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	var runs atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers*transfers)
	start := time.Now()
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			for i := range transfers {
				id := w*transfers + i
				from := rng.IntN(accounts)
				to := (from + 1 + rng.IntN(accounts-1)) % accounts
				amount := int64(1 + rng.IntN(50))
				err := backoffsql.RunTx(ctx, db, opts, func(ctx context.Context, tx *sql.Tx) error {
					runs.Add(1)
					var fromBal, toBal int64
					if err := tx.QueryRowContext(ctx, `SELECT balance FROM bank_account WHERE id = $1`, from).Scan(&fromBal); err != nil {
						return err
					}
					if err := tx.QueryRowContext(ctx, `SELECT balance FROM bank_account WHERE id = $1`, to).Scan(&toBal); err != nil {
						return err
					}
					if _, err := tx.ExecContext(ctx, `UPDATE bank_account SET balance = $1 WHERE id = $2`, fromBal-amount, from); err != nil {
						return err
					}
					if _, err := tx.ExecContext(ctx, `UPDATE bank_account SET balance = $1 WHERE id = $2`, toBal+amount, to); err != nil {
						return err
					}
					_, err := tx.ExecContext(ctx, `INSERT INTO bank_transfer VALUES ($1, $2, $3, $4)`, id, from, to, amount)
					return err
				})
				if err != nil {
					errs <- fmt.Errorf("transfer %d: %w", id, err)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	gaveUp := 0
	for err := range errs {
		gaveUp++
		if gaveUp <= 3 {
			t.Error(err)
		}
	}
	if gaveUp > 0 {
		t.Errorf("%d of %d transfers failed; want none", gaveUp, workers*transfers)
	}

	var total, n, distinct, lo, hi int64
	if err := db.QueryRow(`SELECT sum(balance) FROM bank_account`).Scan(&total); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`SELECT count(*), count(DISTINCT id), min(id), max(id) FROM bank_transfer`).Scan(&n, &distinct, &lo, &hi); err != nil {
		t.Fatal(err)
	}
	if total != accounts*initial {
		t.Errorf("total balance %d; want %d", total, accounts*initial)
	}
	if n != workers*transfers-int64(gaveUp) || distinct != n {
		t.Errorf("transfers: %d rows, %d distinct ids in [%d, %d]; want each of the %d that succeeded once", n, distinct, lo, hi, workers*transfers-gaveUp)
	}
	// Each balance is the initial one plus what the transfer rows say.
	var wrong int
	if err := db.QueryRow(`
		SELECT count(*) FROM bank_account a
		WHERE a.balance <> $1
			+ coalesce((SELECT sum(amount) FROM bank_transfer WHERE to_id = a.id), 0)
			- coalesce((SELECT sum(amount) FROM bank_transfer WHERE from_id = a.id), 0)`, initial).Scan(&wrong); err != nil {
		t.Fatal(err)
	}
	if wrong != 0 {
		t.Errorf("%d accounts' balances disagree with their transfers", wrong)
	}
	serialization := rc.get("40001")
	if serialization == 0 {
		t.Errorf("no serialization failure was retried (%v): the test did not exercise the path", &rc)
	}
	if extra := runs.Load() - workers*transfers; extra < int64(serialization) {
		t.Errorf("fn ran %d times for %d transfers and %d retries", runs.Load(), workers*transfers, serialization)
	}
	t.Logf("figures: bank, %d×%d transfers between %d accounts under SERIALIZABLE with the default policy in %v: "+
		"%d given up, %d serialization failures (40001) retried, retries by SQLSTATE %v, fn ran %d times, transfers by attempts taken %s; total unchanged, each transfer applied once",
		workers, transfers, accounts, elapsed.Round(time.Millisecond), gaveUp, serialization, &rc, runs.Load(), rc.histogram())
}

// TestDeadlock: two transactions lock two rows in opposite orders, waiting
// for each other after their first lock; PostgreSQL aborts one with
// 40P01, RunTx runs it again, and both complete.
func TestDeadlock(t *testing.T) {
	db := openPG(t, pgConfig(t))
	mustExec(t, db, `DROP TABLE IF EXISTS dl`)
	mustExec(t, db, `CREATE TABLE dl (id int PRIMARY KEY, v int NOT NULL)`)
	mustExec(t, db, `INSERT INTO dl VALUES (1, 0), (2, 0)`)

	var rc retryCounter
	r := rc.retrier(backoff.Must(backoff.NewExponential(backoff.Config{
		Base: time.Millisecond, Cap: time.Millisecond, MaxAttempts: 3,
	})))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// both is closed once both transactions hold their first lock.
	both, arrived := make(chan struct{}), atomic.Int32{}
	var runs [2]atomic.Int32
	txn := func(i, first, second, add int) error {
		return backoffsql.RunTx(ctx, db, &backoffsql.Options{Retrier: r}, func(ctx context.Context, tx *sql.Tx) error {
			run := runs[i].Add(1)
			if _, err := tx.ExecContext(ctx, `UPDATE dl SET v = v + $1 WHERE id = $2`, add, first); err != nil {
				return err
			}
			if run == 1 {
				if arrived.Add(1) == 2 {
					close(both)
				}
				select {
				case <-both:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			_, err := tx.ExecContext(ctx, `UPDATE dl SET v = v + $1 WHERE id = $2`, add, second)
			return err
		})
	}
	var wg sync.WaitGroup
	var errA, errB error
	wg.Go(func() { errA = txn(0, 1, 2, 1) })
	wg.Go(func() { errB = txn(1, 2, 1, 10) })
	wg.Wait()
	if errA != nil || errB != nil {
		t.Fatalf("transactions: %v; %v", errA, errB)
	}
	var v1, v2 int
	if err := db.QueryRow(`SELECT (SELECT v FROM dl WHERE id = 1), (SELECT v FROM dl WHERE id = 2)`).Scan(&v1, &v2); err != nil {
		t.Fatal(err)
	}
	if v1 != 11 || v2 != 11 {
		t.Errorf("rows are %d and %d; want 11 and 11: each transaction applied once", v1, v2)
	}
	deadlocks := rc.get("40P01")
	total := runs[0].Load() + runs[1].Load()
	if deadlocks != 1 || total != 3 {
		t.Errorf("%d deadlocks retried (%v), the functions ran %d times; want 1 and 3", deadlocks, &rc, total)
	}
	t.Logf("figures: deadlock, two transactions locking two rows in opposite orders: %d deadlock (40P01) retried, both complete, %d runs",
		deadlocks, total)
}
