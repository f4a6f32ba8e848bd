package backoffsql

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
	sqlite3 "github.com/backoffgo/backoff/backoffsql/internal/fakedrivers/mattn"
	modernc "github.com/backoffgo/backoff/backoffsql/internal/fakedrivers/modernc"
	"github.com/backoffgo/backoff/backoffsql/internal/fakedrivers/mysql"
	"github.com/backoffgo/backoff/backoffsql/internal/fakedrivers/pgconn"
	"github.com/backoffgo/backoff/backoffsql/internal/fakedrivers/pq"
	pqold "github.com/backoffgo/backoff/backoffsql/internal/fakedrivers/pqold"
)

// The expected verdicts, written from the sources independently of the
// classifier's switch statements.
var (
	// PostgreSQL Appendix A.
	pgTransient    = set("40001", "40P01", "55P03", "53300", "57P03", "08001", "08004")
	pgDisconnected = set("08000", "08003", "08006", "08007", "08P01", "57P01", "57P02", "57P05", "25P03", "25P04", "40003")
	// SQLite primary result codes: BUSY, LOCKED, PROTOCOL.
	sqliteTransient = map[int]bool{5: true, 6: true, 15: true}
)

func set(codes ...string) map[string]bool {
	m := map[string]bool{}
	for _, c := range codes {
		m[c] = true
	}
	return m
}

// pgCodes returns SQLSTATEs of every class in Appendix A, with the
// subclasses that occur there and a few that do not.
func pgCodes() []string {
	classes := strings.Fields("00 01 02 03 08 09 0A 0B 0F 0L 0P 0Z 20 21 22 23 24 25 26 27 28 2B 2D 2F " +
		"34 38 39 3B 3D 3F 40 42 44 53 54 55 57 58 72 F0 HV P0 XX")
	subs := strings.Fields("000 001 002 003 004 005 006 007 008 00B 00C 00F 01P P01 P02 P03 P04 505 030 014 11 0000")
	var codes []string
	for _, c := range classes {
		for _, s := range subs {
			codes = append(codes, c+s)
		}
	}
	return codes
}

func wantPG(code string) Class {
	switch {
	case len(code) != 5 || code[:2] == "00":
		return Unrecognized
	case pgTransient[code]:
		return Transient
	case pgDisconnected[code], code[:2] == "08":
		return Disconnected
	}
	return Rejected
}

// wraps returns err as the callers of a driver see it: as is, wrapped by
// fmt.Errorf, joined, and inside a *net.OpError-like chain.
func wraps(err error) map[string]error {
	return map[string]error{
		"bare":    err,
		"%w":      fmt.Errorf("transfer 42: %w", err),
		"%w %w":   fmt.Errorf("exec: %w", fmt.Errorf("stmt: %w", err)),
		"joined":  errors.Join(errors.New("rollback failed too"), err),
		"wrapped": &wrapper{err},
	}
}

type wrapper struct{ err error }

func (w *wrapper) Error() string { return "wrapped: " + w.err.Error() }
func (w *wrapper) Unwrap() error { return w.err }

func TestClassOfPostgres(t *testing.T) {
	n := 0
	for _, code := range pgCodes() {
		want := wantPG(code)
		shapes := map[string]error{
			"pgconn.PgError":        &pgconn.PgError{Code: code, Message: "m"},
			"pq.Error":              &pq.Error{Code: pq.Code(code), Message: "m"},
			"pq.Error before v1.10": &pqold.Error{Code: pqold.ErrorCode(code), Message: "m"},
		}
		for shape, err := range shapes {
			for how, e := range wraps(err) {
				n++
				if got := ClassOf(e); got != want {
					t.Errorf("ClassOf(%s %s %q) = %v; want %v", how, shape, code, got, want)
				}
			}
		}
	}
	t.Logf("%d PostgreSQL errors classified", n)
}

func TestClassOfSQLite(t *testing.T) {
	n := 0
	for primary := 0; primary < 256; primary++ {
		want := Rejected
		switch {
		case primary == 0:
			want = Unrecognized
		case sqliteTransient[primary]:
			want = Transient
		}
		for ext := 0; ext < 40; ext++ {
			code := primary | ext<<8
			shapes := map[string]error{
				"modernc *sqlite.Error": modernc.New("m", code),
				"mattn sqlite3.Error":   sqlite3.Error{Code: sqlite3.ErrNo(primary), ExtendedCode: sqlite3.ErrNoExtended(code)},
				"mattn *sqlite3.Error":  &sqlite3.Error{Code: sqlite3.ErrNo(primary), ExtendedCode: sqlite3.ErrNoExtended(code)},
			}
			for shape, err := range shapes {
				for how, e := range wraps(err) {
					n++
					if got := ClassOf(e); got != want {
						t.Errorf("ClassOf(%s %s code %d) = %v; want %v", how, shape, code, got, want)
					}
				}
			}
		}
	}
	t.Logf("%d SQLite errors classified", n)
}

func TestClassOfMySQL(t *testing.T) {
	for number := 0; number <= 0xffff; number++ {
		want := Rejected
		switch number {
		case 1213, 1205, 1020: // ER_LOCK_DEADLOCK, ER_LOCK_WAIT_TIMEOUT, ER_CHECKREAD
			want = Transient
		case 1053, 1927, 4031: // ER_SERVER_SHUTDOWN, ER_CONNECTION_KILLED, ER_CLIENT_INTERACTION_TIMEOUT
			want = Disconnected
		}
		err := &mysql.MySQLError{Number: uint16(number), Message: "m"}
		if got := ClassOf(err); got != want {
			t.Errorf("ClassOf(MySQLError %d) = %v; want %v", number, got, want)
		}
		if got := ClassOf(fmt.Errorf("tx: %w", err)); got != want {
			t.Errorf("ClassOf(wrapped MySQLError %d) = %v; want %v", number, got, want)
		}
	}
}

// timeoutErr is a network error that timed out.
type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

// codeErr has a Code() int but is no SQLite error: its name is not Error.
type codeErr struct{}

func (codeErr) Error() string { return "HTTP 5" }
func (codeErr) Code() int     { return 5 }

func TestClassOfOthers(t *testing.T) {
	opErr := func(err error) error {
		return &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", err)}
	}
	tests := []struct {
		name string
		err  error
		want Class
	}{
		{"nil", nil, Unrecognized},
		{"plain", errors.New("insufficient funds"), Unrecognized},
		{"driver.ErrBadConn", driver.ErrBadConn, Disconnected},
		{"wrapped driver.ErrBadConn", fmt.Errorf("begin: %w", driver.ErrBadConn), Disconnected},
		{"go-sql-driver/mysql's ErrInvalidConn", fmt.Errorf("exec: %w", errors.New("invalid connection")), Disconnected},
		{"a plain error with another text", errors.New("invalid connection string"), Unrecognized},
		{"pgx's ErrTxCommitRollback: not a class", errors.New("commit unexpectedly resulted in rollback"), Unrecognized},
		{"io.EOF", io.EOF, Disconnected},
		{"io.ErrUnexpectedEOF", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), Disconnected},
		{"ECONNRESET", opErr(syscall.ECONNRESET), Disconnected},
		{"EPIPE", opErr(syscall.EPIPE), Disconnected},
		{"ECONNABORTED", opErr(syscall.ECONNABORTED), Disconnected},
		{"ECONNREFUSED", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, Transient},
		{"other errno", syscall.ENOENT, Unrecognized},
		{"network timeout", &net.OpError{Op: "read", Net: "tcp", Err: timeoutErr{}}, Disconnected},
		{"pgx: nothing sent, it says", &pgconn.ConnError{Msg: "conn closed", Err: errors.New("conn closed"), Safe: true}, Disconnected},
		{"pgx: sent, then lost", &pgconn.ConnError{Msg: "failed to receive", Err: io.ErrUnexpectedEOF}, Disconnected},
		{"context.Canceled", context.Canceled, Unrecognized},
		{"context.DeadlineExceeded", fmt.Errorf("query: %w", context.DeadlineExceeded), Unrecognized},
		{"context error joined with a deadlock", errors.Join(context.Canceled, &pgconn.PgError{Code: "40P01"}), Unrecognized},
		{"backoff.Permanent over a deadlock", backoff.Permanent(&pgconn.PgError{Code: "40P01"}), Rejected},
		{"Retryable() true", &markedErr{true}, Transient},
		{"Retryable() false", &markedErr{false}, Rejected},
		{"a Retryable() method nearer than the code decides", &markedErr2{false, &pgconn.PgError{Code: "40001"}}, Rejected},
		{"Code() int on a type not named Error", codeErr{}, Unrecognized},
		{"nil *MySQLError", (*mysql.MySQLError)(nil), Unrecognized},
		{"the first code in the chain decides", fmt.Errorf("%w after %w", &pgconn.PgError{Code: "23505"}, &pgconn.PgError{Code: "40001"}), Rejected},
		{"a nested backoff.Error's last error", &backoff.Error{Reason: backoff.ErrExhausted, Err: errBusy, Attempts: 3}, Transient},
	}
	for _, tc := range tests {
		if got := ClassOf(tc.err); got != tc.want {
			t.Errorf("%s: ClassOf(%v) = %v; want %v", tc.name, tc.err, got, tc.want)
		}
	}
	for c, want := range map[Class]string{Unrecognized: "Unrecognized", Rejected: "Rejected", Transient: "Transient", Disconnected: "Disconnected", 9: "Class(invalid)"} {
		if c.String() != want {
			t.Errorf("Class(%d).String() = %q; want %q", int(c), c.String(), want)
		}
	}
}

// TestClassOfInTransaction: what RunTx adds to ClassOf inside a
// transaction (a FATAL ends the session) and for the calls it makes itself
// while the caller's context is alive (a deadline is a driver's own).
func TestClassOfInTransaction(t *testing.T) {
	tests := []struct {
		name                string
		err                 error
		driverTimeout, inTx bool
		want, wantClassOf   Class
	}{
		{"pgx FATAL, any code", &pgconn.PgError{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "XX000"}, true, true, Disconnected, Rejected},
		{"pgx FATAL, localized", &pgconn.PgError{Severity: "SCHWERWIEGEND", SeverityUnlocalized: "FATAL", Code: "XX000"}, true, true, Disconnected, Rejected},
		{"pgx ERROR", &pgconn.PgError{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: "XX000"}, true, true, Rejected, Rejected},
		{"pgx PANIC", fmt.Errorf("exec: %w", &pgconn.PgError{Severity: "PANIC", Code: "XX000"}), true, true, Disconnected, Rejected},
		{"lib/pq FATAL", &pq.Error{Severity: "FATAL", Code: "XX000"}, true, true, Disconnected, Rejected},
		{"FATAL at login: by its code", &pgconn.PgError{Severity: "FATAL", Code: "28P01"}, true, false, Rejected, Rejected},
		{"FATAL marked Permanent", backoff.Permanent(&pgconn.PgError{Severity: "FATAL", Code: "XX000"}), true, true, Rejected, Rejected},
		{"deadline at BeginTx, the caller's context alive", fmt.Errorf("connect: %w", context.DeadlineExceeded), true, false, Disconnected, Unrecognized},
		{"deadline in fn or with the caller's context done", fmt.Errorf("connect: %w", context.DeadlineExceeded), false, true, Unrecognized, Unrecognized},
		{"cancellation, the caller's context alive", fmt.Errorf("query: %w", context.Canceled), true, true, Unrecognized, Unrecognized},
	}
	for _, tc := range tests {
		if got := classOf(tc.err, tc.driverTimeout, tc.inTx); got != tc.want {
			t.Errorf("%s: classOf(%v, driver timeout %v, in tx %v) = %v; want %v", tc.name, tc.err, tc.driverTimeout, tc.inTx, got, tc.want)
		}
		if got := ClassOf(tc.err); got != tc.wantClassOf {
			t.Errorf("%s: ClassOf(%v) = %v; want %v", tc.name, tc.err, got, tc.wantClassOf)
		}
	}
}

// TestClassOfAllocs: classifying the errors RunTx retries most allocates
// nothing.
func TestClassOfAllocs(t *testing.T) {
	for _, err := range []error{errSerialization, fmt.Errorf("tx: %w", errBusy), &pgconn.PgError{Severity: "FATAL", Code: "25P03"}} {
		if n := testing.AllocsPerRun(100, func() { _ = classOf(err, true, true) }); n != 0 {
			t.Errorf("classOf(%v) allocates %.0f times", err, n)
		}
	}
	for _, err := range []error{modernc.New("disk I/O error (1034)", 1034), sqlite3.Error{Code: 10, ExtendedCode: 1034}, errors.New("unexpected command tag ROLLBACK")} {
		if n := testing.AllocsPerRun(100, func() { _, _ = sqliteIOError(err), turnedIntoRollback(err) }); n != 0 {
			t.Errorf("the COMMIT outcome of %v allocates %.0f times to find", err, n)
		}
	}
}

type markedErr2 struct {
	retry bool
	err   error
}

func (e *markedErr2) Error() string   { return "marked: " + e.err.Error() }
func (e *markedErr2) Unwrap() error   { return e.err }
func (e *markedErr2) Retryable() bool { return e.retry }

// TestClassify runs one statement on the fake driver with backoff.Do, the
// way Classify is meant to be used, and counts the executions.
func TestClassify(t *testing.T) {
	policy := backoff.Must(backoff.NewExponential(backoff.Config{Base: time.Nanosecond, Cap: time.Nanosecond, MaxAttempts: 4}))
	tests := []struct {
		name   string
		err    error
		execs  int
		reason error
		outer  bool // an outer loop would retry the result
	}{
		{name: "busy twice, then done", err: errBusy, execs: 3},
		{name: "deadlock twice, then done", err: &mysql.MySQLError{Number: 1213}, execs: 3},
		{name: "unique violation", err: errUnique, execs: 1, reason: backoff.ErrPermanent},
		{name: "connection lost mid-statement: maybe applied", err: io.ErrUnexpectedEOF, execs: 1, reason: backoff.ErrPermanent, outer: true},
		{name: "caller's error", err: errFunds, execs: 1, reason: backoff.ErrPermanent, outer: true},
		{name: "bad connection: database/sql's three tries", err: driver.ErrBadConn, execs: 3, reason: backoff.ErrRetriedBelow},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hook := failFirst(2, tc.err)
			if tc.reason != nil {
				hook = failFirst(1000, tc.err)
			}
			f := &fakeDB{onExec: hook}
			db := f.open()
			defer db.Close()
			err := backoff.Do(context.Background(), func(ctx context.Context) error {
				_, err := db.ExecContext(ctx, "UPDATE x")
				return Classify(err)
			}, policy)
			if _, _, execs, _, _ := f.counts(); execs != tc.execs {
				t.Errorf("%d executions; want %d", execs, tc.execs)
			}
			if tc.reason == nil {
				if err != nil {
					t.Errorf("Do = %v; want nil", err)
				}
				return
			}
			var be *backoff.Error
			if !errors.As(err, &be) || be.Reason != tc.reason || !errors.Is(err, tc.err) {
				t.Errorf("Do = %v; want reason %v and %v in the chain", err, tc.reason, tc.err)
			}
			if tc.reason == backoff.ErrPermanent && backoff.Retryable(err) != tc.outer {
				t.Errorf("Retryable(Do's error) = %v; want %v", !tc.outer, tc.outer)
			}
		})
	}
	if Classify(nil) != nil {
		t.Error("Classify(nil) != nil")
	}
}
