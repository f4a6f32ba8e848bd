package backoff

import "time"

// Exponential is capped exponential backoff without jitter: after attempt n
// it waits exactly min(Cap, Base·2^(n−1)).
//
// Clients that fail together retry in lockstep: prefer [FullJitter] for a
// fleet. With Base == Cap it is a constant delay. An Exponential is
// immutable and safe for concurrent use.
type Exponential struct {
	cfg Config
}

// NewExponential returns an Exponential policy, or a *[ParamError] when cfg
// is invalid.
func NewExponential(cfg Config) (*Exponential, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Exponential{cfg: cfg}, nil
}

// NextDelay returns [ErrPermanent] when err is not [Retryable], then
// [ErrExhausted] when attempt >= MaxAttempts, and otherwise
// min(Cap, Base·2^(attempt−1)).
func (p *Exponential) NextDelay(attempt int, err error) (time.Duration, error) {
	if !p.cfg.surelyRetries(attempt, err) {
		if reason := p.cfg.stop(attempt, err); reason != nil {
			return 0, reason
		}
	}
	return ceiling(p.cfg.Base, p.cfg.Cap, attempt), nil
}
