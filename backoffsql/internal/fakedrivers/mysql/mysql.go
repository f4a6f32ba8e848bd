// Package mysql mimics github.com/go-sql-driver/mysql's errors.
package mysql

// MySQLError is shaped like mysql.MySQLError.
type MySQLError struct {
	Number   uint16
	SQLState [5]byte
	Message  string
}

func (me *MySQLError) Error() string { return "Error " + me.Message }
