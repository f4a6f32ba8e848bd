package backoffsql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"sync"
)

// fakeDB is a database/sql driver whose failures a test scripts: each hook
// gets the 1-based count of calls to it so far and returns the error to fail
// with, or nil. It counts what database/sql asked of it.
type fakeDB struct {
	mu                                     sync.Mutex
	connects, begins, execs, commits, rbks int
	onBegin, onExec, onCommit              func(n int) error
}

func (f *fakeDB) open() *sql.DB { return sql.OpenDB(fakeConnector{f}) }

func (f *fakeDB) count(n *int, hook func(int) error) error {
	f.mu.Lock()
	*n++
	c := *n
	f.mu.Unlock()
	if hook == nil {
		return nil
	}
	return hook(c)
}

func (f *fakeDB) counts() (connects, begins, execs, commits, rollbacks int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.connects, f.begins, f.execs, f.commits, f.rbks
}

type fakeConnector struct{ f *fakeDB }

func (c fakeConnector) Connect(context.Context) (driver.Conn, error) {
	_ = c.f.count(&c.f.connects, nil)
	return fakeConn(c), nil
}
func (c fakeConnector) Driver() driver.Driver { return fakeDriver{} }

type fakeDriver struct{}

func (fakeDriver) Open(string) (driver.Conn, error) { return nil, errors.New("use OpenDB") }

type fakeConn struct{ f *fakeDB }

func (c fakeConn) Prepare(string) (driver.Stmt, error) { return nil, errors.New("no statements") }
func (c fakeConn) Close() error                        { return nil }
func (c fakeConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}
func (c fakeConn) BeginTx(context.Context, driver.TxOptions) (driver.Tx, error) {
	if err := c.f.count(&c.f.begins, c.f.onBegin); err != nil {
		return nil, err
	}
	return fakeTx(c), nil
}
func (c fakeConn) ExecContext(context.Context, string, []driver.NamedValue) (driver.Result, error) {
	if err := c.f.count(&c.f.execs, c.f.onExec); err != nil {
		return nil, err
	}
	return driver.RowsAffected(1), nil
}

type fakeTx struct{ f *fakeDB }

func (t fakeTx) Commit() error   { return t.f.count(&t.f.commits, t.f.onCommit) }
func (t fakeTx) Rollback() error { return t.f.count(&t.f.rbks, nil) }

// failFirst returns a hook that fails the first k calls with err.
func failFirst(k int, err error) func(int) error {
	return func(n int) error {
		if n <= k {
			return err
		}
		return nil
	}
}
