package main

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"strings"
	"sync"
)

// demo is the in-memory database of the Transfer recipe: accounts and
// their balances, whose first transaction fails with a serialization
// failure, as PostgreSQL's may under SERIALIZABLE.
var demo struct {
	sync.Mutex
	balances map[int64]int64
	begun    int // transactions begun
}

// openDemoDB returns a *sql.DB over the demo database with these balances.
func openDemoDB(balances map[int64]int64) *sql.DB {
	demo.balances, demo.begun = balances, 0
	return sql.OpenDB(demoConnector{})
}

type demoConnector struct{}

func (demoConnector) Connect(context.Context) (driver.Conn, error) { return &demoConn{}, nil }
func (demoConnector) Driver() driver.Driver                        { return nil }

// demoConn runs the two UPDATEs of transfer, in a transaction only.
type demoConn struct {
	tx      map[int64]int64 // the transaction's changes, by account
	failing bool            // the transaction's first statement fails
}

func (c *demoConn) Prepare(string) (driver.Stmt, error) { return nil, errors.New("demo: no Prepare") }
func (c *demoConn) Close() error                        { return nil }
func (c *demoConn) Begin() (driver.Tx, error)           { return nil, errors.New("demo: use BeginTx") }

func (c *demoConn) BeginTx(context.Context, driver.TxOptions) (driver.Tx, error) {
	demo.Lock()
	defer demo.Unlock()
	demo.begun++
	c.tx, c.failing = map[int64]int64{}, demo.begun == 1
	return c, nil
}

// ExecContext runs "UPDATE account SET balance = balance ± $1 WHERE id = $2".
func (c *demoConn) ExecContext(_ context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if c.tx == nil || len(args) != 2 {
		return nil, errors.New("demo: only transfer's UPDATEs, in a transaction")
	}
	if c.failing {
		return nil, sqlError("40001") // serialization_failure: run the transaction again
	}
	amount, id := args[0].Value.(int64), args[1].Value.(int64)
	if strings.Contains(query, "balance - $1") {
		amount = -amount
	}
	c.tx[id] += amount
	return driver.RowsAffected(1), nil
}

func (c *demoConn) Commit() error {
	demo.Lock()
	defer demo.Unlock()
	for id, d := range c.tx {
		demo.balances[id] += d
	}
	c.tx = nil
	return nil
}

func (c *demoConn) Rollback() error {
	c.tx = nil
	return nil
}
