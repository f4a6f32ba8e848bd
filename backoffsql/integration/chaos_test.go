package integration

import (
	"context"
	"database/sql"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/backoffsql"
)

// TestChaos: workers make transfers between accounts for a few seconds
// while another session kills one of their sessions every few milliseconds
// (pg_terminate_backend, KILL), during BEGIN, statements and COMMITs alike.
// At the end no transfer is applied twice, none that RunTx reported as
// committed is missing, none that it reported as failed is there, every
// ErrCommitUnknown is reconciled against the log, each balance agrees with
// the log, and no transfer failed with an error deemed not worth a retry
// (each kill before COMMIT is).
func TestChaos(t *testing.T) {
	const (
		workers  = 6
		accounts = 8
		initial  = 1000
		duration = 3 * time.Second
		every    = 4 * time.Millisecond
	)
	forDrivers(t, allDrivers, "chaos", func(t *testing.T, tg *target) {
		account := tg.table(t, "chaos_account")
		log := "chaos_log_" + tg.key // no key: a transfer applied twice shows twice
		mustExec(t, tg.db, "DROP TABLE IF EXISTS "+log)
		mustExec(t, tg.db, "CREATE TABLE "+log+" (id bigint NOT NULL, from_id int NOT NULL, to_id int NOT NULL, amount bigint NOT NULL)")
		for i := range accounts {
			mustExec(t, tg.db, tg.q("INSERT INTO "+account+" VALUES ($1, $2)"), i, initial)
		}
		tg.db.SetMaxOpenConns(workers)
		tg.db.SetMaxIdleConns(workers)
		retrier := &backoff.Retrier{Policy: backoff.Must(backoff.NewFullJitter(backoff.Config{
			Base: time.Millisecond, Cap: 20 * time.Millisecond, MaxAttempts: 50,
		}, backoff.RuntimeRng{}))}
		opts := &backoffsql.Options{Retrier: retrier}

		ctx, cancel := context.WithTimeout(context.Background(), duration)
		defer cancel()
		var kills atomic.Int64
		var wg sync.WaitGroup
		wg.Go(func() { kills.Store(int64(killEvery(ctx, tg, every))) })

		type outcome struct {
			id  int64
			err error
		}
		var mu sync.Mutex
		var outcomes []outcome
		var runs atomic.Int64
		for w := range workers {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(w), 7))
				for i := 0; ctx.Err() == nil; i++ {
					id := int64(w)<<32 | int64(i)
					from := rng.IntN(accounts)
					to := (from + 1 + rng.IntN(accounts-1)) % accounts
					amount := int64(1 + rng.IntN(20))
					// The workers' context is not the killer's: a transfer
					// under way when the time is up completes.
					err := backoffsql.RunTx(context.Background(), tg.db, opts, func(ctx context.Context, tx *sql.Tx) error {
						runs.Add(1)
						for _, u := range [...]struct {
							id    int
							delta int64
						}{{from, -amount}, {to, amount}} {
							if _, err := tx.ExecContext(ctx, tg.q("UPDATE "+account+" SET v = v + $1 WHERE id = $2"), u.delta, u.id); err != nil {
								return err
							}
						}
						_, err := tx.ExecContext(ctx, tg.q("INSERT INTO "+log+" VALUES ($1, $2, $3, $4)"), id, from, to, amount)
						return err
					})
					mu.Lock()
					outcomes = append(outcomes, outcome{id, err})
					mu.Unlock()
				}
			})
		}
		wg.Wait()

		applied := map[int64]int{}
		rows, err := tg.admin.Query("SELECT id FROM " + tg.tagged(log))
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			applied[id]++
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
		var committed, unknown, unknownApplied, failed int
		failures := map[string]int{}
		for _, o := range outcomes {
			n := applied[o.id]
			switch {
			case n > 1:
				t.Errorf("transfer %d applied %d times (RunTx: %v)", o.id, n, o.err)
			case o.err == nil:
				committed++
				if n != 1 {
					t.Errorf("transfer %d: RunTx returned nil, and it is not in the log", o.id)
				}
			case errors.Is(o.err, backoffsql.ErrCommitUnknown):
				unknown++
				unknownApplied += n
			default:
				failed++
				failures[failureKind(o.err)]++
				if n != 0 {
					t.Errorf("transfer %d: RunTx returned %v, not an unknown outcome, and it is in the log", o.id, o.err)
				}
				if errors.Is(o.err, backoff.ErrPermanent) && failures[failureKind(o.err)] <= 3 {
					// A kill before COMMIT is always worth a retry.
					t.Errorf("transfer %d: RunTx gave up on an error it should have retried: %v", o.id, o.err)
				}
			}
		}
		if len(applied) > committed+unknownApplied {
			t.Errorf("%d transfers in the log; RunTx accounts for %d", len(applied), committed+unknownApplied)
		}
		var wrong int
		if err := tg.admin.QueryRow(tg.q(`SELECT count(*) FROM `+tg.tagged(account)+` a WHERE a.v <> $1
			+ coalesce((SELECT sum(amount) FROM `+tg.tagged(log)+` WHERE to_id = a.id), 0)
			- coalesce((SELECT sum(amount) FROM `+tg.tagged(log)+` WHERE from_id = a.id), 0)`), initial).Scan(&wrong); err != nil {
			t.Fatal(err)
		}
		if wrong != 0 {
			t.Errorf("%d balances disagree with the log", wrong)
		}
		if kills.Load() == 0 || committed == 0 {
			t.Errorf("%d sessions killed, %d transfers committed: the test exercised nothing", kills.Load(), committed)
		}
		t.Logf("figures: chaos, %s, %v, %d workers, a session killed every %v (%d kills): %d transfers, fn ran %d times; "+
			"%d committed, %d ErrCommitUnknown (%d of them applied), %d failed with an error %v; none applied twice, none lost",
			tg.name, duration, workers, every, kills.Load(), len(outcomes), runs.Load(), committed, unknown, unknownApplied, failed, failures)
	})
}

// killEvery kills one session of the target's pool every interval until
// ctx ends, and returns how many it killed.
func killEvery(ctx context.Context, tg *target, interval time.Duration) int {
	query := "SELECT pid FROM pg_stat_activity WHERE application_name = $1"
	if tg.my {
		query = "SELECT id FROM information_schema.processlist WHERE db = ?"
	}
	kills := 0
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return kills
		case <-tick.C:
		}
		var ids []int64
		rows, err := tg.admin.QueryContext(ctx, query, tg.tag)
		if err != nil {
			continue
		}
		for rows.Next() {
			var id int64
			if rows.Scan(&id) == nil {
				ids = append(ids, id)
			}
		}
		rows.Close()
		if len(ids) > 0 && tg.kill(ctx, ids[rand.IntN(len(ids))]) == nil {
			kills++
		}
	}
}

// failureKind names the reason of a failed transfer for the report.
func failureKind(err error) string {
	var be *backoff.Error
	if errors.As(err, &be) {
		if n := mysqlNumber(be.Err); n != 0 {
			return strconv.Itoa(int(n))
		}
		if s := sqlState(be.Err); s != "" {
			return s
		}
		return be.Reason.Error()
	}
	return err.Error()
}
