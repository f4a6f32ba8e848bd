package integration

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	_ "github.com/lib/pq" // registers "postgres"
)

func init() {
	// The driver logs each connection that the tests break on purpose.
	_ = mysql.SetLogger(&mysql.NopLogger{})
}

// target is one driver on one server, with what the tests need to provoke
// failures there: its sessions carry a tag that a kill can find them by.
type target struct {
	name  string  // "pgx", "lib/pq" or "mysql"
	key   string  // name as an identifier: pgx, libpq, mysql
	tag   string  // the sessions' tag: application_name, or the MySQL database
	db    *sql.DB // the driver's pool, every session tagged
	admin *sql.DB // a pool of the same driver on the same server, untagged
	my    bool    // MySQL protocol: ? placeholders
}

// The drivers the cross-driver tests run with.
var (
	pgxDriver   = func(t *testing.T, tag string) *target { return openPgx(t, tag) }
	libpqDriver = func(t *testing.T, tag string) *target { return openLibpq(t, tag) }
	mysqlDriver = func(t *testing.T, tag string) *target { return openMySQL(t, tag) }
	allDrivers  = []struct {
		name string
		open func(*testing.T, string) *target
	}{{"pgx", pgxDriver}, {"lib/pq", libpqDriver}, {"mysql", mysqlDriver}}
	pgDrivers = allDrivers[:2]
)

// forDrivers runs test as parallel subtests, one per driver of drivers, each
// with a target whose tag is prefix and the driver's key.
func forDrivers(t *testing.T, drivers []struct {
	name string
	open func(*testing.T, string) *target
}, prefix string, test func(t *testing.T, tg *target)) {
	for _, d := range drivers {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			key := strings.ReplaceAll(d.name, "/", "")
			tg := d.open(t, prefix+"_"+key)
			tg.key = key
			test(t, tg)
		})
	}
}

func openPgx(t *testing.T, tag string) *target {
	cfg := pgConfig(t)
	admin := openPG(t, cfg)
	cfg = cfg.Copy()
	cfg.RuntimeParams["application_name"] = tag
	return &target{name: "pgx", tag: tag, db: openPG(t, cfg), admin: admin}
}

func openLibpq(t *testing.T, tag string) *target {
	dsn := serverDSN(t, "BACKOFF_PG_DSN")
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("BACKOFF_PG_DSN: %v", err)
	}
	q := u.Query()
	q.Set("application_name", tag)
	u.RawQuery = q.Encode()
	open := func(dsn string) *sql.DB {
		db, err := sql.Open("postgres", dsn)
		if err != nil {
			t.Fatal(err)
		}
		return pinged(t, db)
	}
	return &target{name: "lib/pq", tag: tag, db: open(u.String()), admin: open(dsn)}
}

// mysqlConfig returns go-sql-driver's configuration of the test server
// (BACKOFF_MYSQL_DSN).
func mysqlConfig(t testing.TB) *mysql.Config {
	t.Helper()
	cfg, err := mysql.ParseDSN(serverDSN(t, "BACKOFF_MYSQL_DSN"))
	if err != nil {
		t.Fatalf("BACKOFF_MYSQL_DSN: %v", err)
	}
	return cfg
}

// openMySQL opens the target on a database of its own, named tag, created
// afresh: its sessions are the ones whose db is tag.
func openMySQL(t *testing.T, tag string) *target {
	return openMySQLWith(t, tag, nil)
}

// openMySQLWith is openMySQL with session variables set on every
// connection of the target's pool.
func openMySQLWith(t *testing.T, tag string, params map[string]string) *target {
	cfg := mysqlConfig(t)
	admin := pinged(t, mustConnector(t, cfg))
	mustExec(t, admin, "DROP DATABASE IF EXISTS "+tag)
	mustExec(t, admin, "CREATE DATABASE "+tag)
	cfg = cfg.Clone()
	cfg.DBName = tag
	cfg.Params = params
	return &target{name: "mysql", tag: tag, db: pinged(t, mustConnector(t, cfg)), admin: admin, my: true}
}

func mustConnector(t testing.TB, cfg *mysql.Config) *sql.DB {
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return sql.OpenDB(c)
}

// q returns query for the target's protocol: $1, $2, ... become ? on MySQL.
func (tg *target) q(query string) string {
	if !tg.my {
		return query
	}
	for i := 9; i >= 1; i-- {
		query = strings.ReplaceAll(query, "$"+strconv.Itoa(i), "?")
	}
	return query
}

// table creates, afresh, a table named name with a key id and an integer v,
// on the target's database, and returns its name.
func (tg *target) table(t *testing.T, name string) string {
	name += "_" + tg.key
	mustExec(t, tg.db, "DROP TABLE IF EXISTS "+name)
	mustExec(t, tg.db, "CREATE TABLE "+name+" (id int PRIMARY KEY, v bigint NOT NULL)")
	return name
}

// logTable creates, afresh, a table without a key, where a row inserted
// twice shows twice, and returns its name.
func (tg *target) logTable(t *testing.T, name string) string {
	name += "_" + tg.key
	mustExec(t, tg.db, "DROP TABLE IF EXISTS "+name)
	mustExec(t, tg.db, "CREATE TABLE "+name+" (note varchar(40) NOT NULL)")
	return name
}

// count returns the number of rows of table that match where (with args).
func (tg *target) count(t *testing.T, table, where string, args ...any) int {
	t.Helper()
	var n int
	query := "SELECT count(*) FROM " + tg.tagged(table)
	if where != "" {
		query += " WHERE " + where
	}
	if err := tg.admin.QueryRow(tg.q(query), args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// tagged returns the name by which the admin pool finds the target's
// table: on MySQL it lives in the database named tag.
func (tg *target) tagged(table string) string {
	if !tg.my {
		return table
	}
	return tg.tag + "." + table
}

// sessionID returns the server's id of tx's session.
func (tg *target) sessionID(ctx context.Context, tx *sql.Tx) (id int64, err error) {
	query := "SELECT pg_backend_pid()"
	if tg.my {
		query = "SELECT CONNECTION_ID()"
	}
	err = tx.QueryRowContext(ctx, query).Scan(&id)
	return id, err
}

// kill ends the session id from the admin pool, as an operator or a
// failover would.
func (tg *target) kill(ctx context.Context, id int64) error {
	if tg.my {
		_, err := tg.admin.ExecContext(ctx, "KILL "+strconv.FormatInt(id, 10))
		return err
	}
	var ok bool
	if err := tg.admin.QueryRowContext(ctx, "SELECT pg_terminate_backend($1)", id).Scan(&ok); err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("pg_terminate_backend(%d) found no such backend", id)
	}
	return nil
}

// mysqlNumber returns the server's error number in err's chain, or 0.
func mysqlNumber(err error) uint16 {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}
