package backoff

import (
	"testing"
	"time"
)

func TestParamErrorMessages(t *testing.T) {
	type opaque struct{ n int }
	for _, tt := range []struct {
		err  *ParamError
		want string
	}{
		{&ParamError{Param: "Base", Value: -time.Second, Reason: "must be positive"}, "backoff: invalid Base -1s: must be positive"},
		{&ParamError{Param: "MaxAttempts", Value: 0, Reason: "r"}, "backoff: invalid MaxAttempts 0: r"},
		{&ParamError{Param: "Ratio", Value: 1.5, Reason: "r"}, "backoff: invalid Ratio 1.5: r"},
		{&ParamError{Param: "Rng", Value: "PCG{}", Reason: "r"}, "backoff: invalid Rng PCG{}: r"},
		{&ParamError{Param: "p", Value: nil, Reason: "r"}, "backoff: invalid p nil: r"},
		{&ParamError{Param: "x", Value: opaque{1}, Reason: "r"}, "backoff: invalid x (backoff.opaque): r"},
		{&ParamError{Param: "x", Value: time.UTC, Reason: "r"}, "backoff: invalid x UTC: r"},
	} {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
	if got := (*ParamError)(nil).Error(); got != "backoff: invalid parameter" {
		t.Errorf("nil ParamError: %q", got)
	}
}
