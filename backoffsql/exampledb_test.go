package backoffsql_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"sync/atomic"
)

// exampleDB returns a database for the examples, which stands for
// sql.Open("pgx", dsn): its first COMMIT fails with a serialization failure
// (SQLSTATE 40001), every later one succeeds, and every statement succeeds.
func exampleDB() *sql.DB { return sql.OpenDB(&exampleConnector{}) }

type exampleConnector struct{ commits atomic.Int32 }

func (c *exampleConnector) Connect(context.Context) (driver.Conn, error) { return exampleConn{c}, nil }
func (c *exampleConnector) Driver() driver.Driver                        { return exampleDriver{} }

type exampleDriver struct{}

func (exampleDriver) Open(string) (driver.Conn, error) { return nil, errors.New("use OpenDB") }

type exampleConn struct{ c *exampleConnector }

func (exampleConn) Prepare(string) (driver.Stmt, error) { return nil, errors.New("no statements") }
func (exampleConn) Close() error                        { return nil }
func (c exampleConn) Begin() (driver.Tx, error)         { return exampleTx(c), nil }
func (exampleConn) ExecContext(context.Context, string, []driver.NamedValue) (driver.Result, error) {
	return driver.RowsAffected(1), nil
}

type exampleTx struct{ c *exampleConnector }

func (t exampleTx) Commit() error {
	if t.c.commits.Add(1) == 1 {
		return serializationFailure{}
	}
	return nil
}
func (exampleTx) Rollback() error { return nil }

// serializationFailure reads as pgx's *pgconn.PgError for SQLSTATE 40001.
type serializationFailure struct{}

func (serializationFailure) Error() string {
	return "ERROR: could not serialize access due to concurrent update (SQLSTATE 40001)"
}
func (serializationFailure) SQLState() string { return "40001" }
