// Package pgconn mimics github.com/jackc/pgx/v5/pgconn's errors.
package pgconn

// PgError is shaped like pgconn.PgError.
type PgError struct {
	Severity            string
	SeverityUnlocalized string
	Code                string
	Message             string
	Routine             string
}

func (pe *PgError) Error() string {
	return pe.Severity + ": " + pe.Message + " (SQLSTATE " + pe.Code + ")"
}

// SQLState returns the SQLSTATE, as pgconn's does.
func (pe *PgError) SQLState() string { return pe.Code }

// ConnError is shaped like pgconn's unexported pgconnError: a connection
// failure that knows whether anything was sent.
type ConnError struct {
	Msg  string
	Err  error
	Safe bool
}

func (e *ConnError) Error() string     { return e.Msg + ": " + e.Err.Error() }
func (e *ConnError) SafeToRetry() bool { return e.Safe }
func (e *ConnError) Unwrap() error     { return e.Err }
