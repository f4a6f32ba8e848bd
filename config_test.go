package backoff

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func TestConstructorsRejectBadParameters(t *testing.T) {
	good := Config{Base: time.Millisecond, Cap: time.Second, MaxAttempts: 3}
	exp := Must(NewExponential(good))
	tests := []struct {
		name  string
		err   error
		param string
	}{
		{"base zero", second(NewExponential(Config{Base: 0, Cap: 1, MaxAttempts: 1})), "Base"},
		{"base negative", second(NewFullJitter(Config{Base: -1, Cap: 1, MaxAttempts: 1}, RuntimeRng{})), "Base"},
		{"cap below base", second(NewEqualJitter(Config{Base: 2, Cap: 1, MaxAttempts: 1}, RuntimeRng{})), "Cap"},
		{"max attempts zero", second(NewDecorrelated(Config{Base: 1, Cap: 1, MaxAttempts: 0}, RuntimeRng{})), "MaxAttempts"},
		{"max attempts -2", second(NewExponential(Config{Base: 1, Cap: 1, MaxAttempts: -2})), "MaxAttempts"},
		{"nil rng full", second(NewFullJitter(good, nil)), "Rng"},
		{"nil rng equal", second(NewEqualJitter(good, nil)), "Rng"},
		{"nil rng decorrelated", second(NewDecorrelated(good, nil)), "Rng"},
		{"typed nil rand.Rand", second(NewEqualJitter(good, (*rand.Rand)(nil))), "Rng"},
		{"nil PolicyFunc", second(NewRetryAfter(PolicyFunc(nil), RetryAfterConfig{MaxWait: 1})), "next"},
		{"typed nil policy", second(NewRetryAfter((*FullJitter)(nil), RetryAfterConfig{MaxWait: 1})), "next"},
		{"nil next", second(NewRetryAfter(nil, RetryAfterConfig{MaxWait: 1})), "next"},
		{"max wait zero", second(NewRetryAfter(exp, RetryAfterConfig{})), "MaxWait"},
		{"max wait negative", second(NewRetryAfter(exp, RetryAfterConfig{MaxWait: -1})), "MaxWait"},
	}
	for _, tt := range tests {
		var pe *ParamError
		if !errors.As(tt.err, &pe) || pe.Param != tt.param {
			t.Errorf("%s: got %v, want a *ParamError for %s", tt.name, tt.err, tt.param)
			continue
		}
		if !strings.Contains(tt.err.Error(), tt.param) {
			t.Errorf("%s: message %q does not name %s", tt.name, tt.err, tt.param)
		}
	}
	for _, cfg := range []Config{
		{Base: 1, Cap: 1, MaxAttempts: Unlimited},
		{Base: 1, Cap: math.MaxInt64, MaxAttempts: math.MaxInt},
		{Base: math.MaxInt64, Cap: math.MaxInt64, MaxAttempts: 1},
	} {
		if _, err := NewFullJitter(cfg, RuntimeRng{}); err != nil {
			t.Errorf("NewFullJitter(%+v) = %v, want success", cfg, err)
		}
	}
}

func second[P any](_ P, err error) error { return err }
