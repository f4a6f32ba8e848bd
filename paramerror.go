package backoff

import (
	"reflect"
	"strconv"
	"time"
)

// ParamError reports an invalid parameter of a constructor or of [Do].
type ParamError struct {
	Param  string // the parameter's name, as in Config: "Base", "Cap", "MaxAttempts", "Rng", ...
	Value  any    // the rejected value
	Reason string // what the parameter must be
}

func (e *ParamError) Error() string {
	if e == nil {
		return "backoff: invalid parameter"
	}
	return "backoff: invalid " + e.Param + " " + formatValue(e.Value) + ": " + e.Reason
}

// formatValue prints the parameter values the library rejects without
// importing fmt, which would make importing the package cost more.
func formatValue(v any) string {
	switch v := v.(type) {
	case nil:
		return "nil"
	case time.Duration:
		return v.String()
	case int:
		return strconv.Itoa(v)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case string:
		return v
	case interface{ String() string }:
		return v.String()
	}
	return "(" + reflect.TypeOf(v).String() + ")"
}
