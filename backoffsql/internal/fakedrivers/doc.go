// Package fakedrivers holds, in its subpackages, error types shaped like
// those of the database drivers that backoffsql classifies without
// importing them: same type names, field names, field types and methods.
// Only the tests use them; the integration module checks the real types.
package fakedrivers
